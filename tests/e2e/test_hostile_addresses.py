"""A hostile web cannot make the crawler fetch inside our own network (SSRF).

fakeweb's internal service (127.0.0.9, ADDRESSES["internal"]) serves a secret page on
the crawl's own port; the tests' ALLOWED_PRIVATE_NETWORKS lets fakeweb's web through,
not it. Links, redirects and DNS answers lead there, in IPv4 and IPv6 forms.
"""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import assert_within_bounds
from tests.fakeweb import ADDRESSES, World

SECRET = "INTERNAL-SECRET-TITLE"
INTERNAL = ADDRESSES["internal"]
ORDINARY = [f"ok{i}.test" for i in range(6)]
# host → what leads it inside: each is refused with ADDRESS_REFUSED.
REFUSED = {
    "inside.test": "a DNS answer of 127.0.0.9",
    "alias.test": "a CNAME to a name whose answer is 127.0.0.9",
    "redirect4.test": "a redirect to http://127.0.0.9:P/latest/meta-data/",
    "redirect6.test": "a redirect to http://[::ffff:127.0.0.9]:P/",
}
LITERAL_LINKS = [
    f"http://{INTERNAL}/",
    "http://[::ffff:127.0.0.9]/",
    "http://[::ffff:7f00:9]:8080/x",
    "http://[::1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0x7f000009/",  # 127.0.0.9 as a browser reads it
]


def internal_world() -> World:
    world = World()
    links = [*(f"http://{h}/" for h in [*ORDINARY, *REFUSED]), *LITERAL_LINKS]
    world.site("hub.test", links=links)
    for name in ORDINARY:
        world.site(name)
    world.site("inside.test", title=SECRET)
    world.host("inside.test", "internal")
    world.cname("alias.test", "inside.test")
    world.redirect("redirect4.test", f"http://{INTERNAL}:{{http_port}}/latest/meta-data/")
    world.redirect("redirect6.test", "http://[::ffff:127.0.0.9]:{http_port}/")
    # What the internal service would tell whoever asks it, by any name.
    world.site(INTERNAL, title=SECRET)
    world.page(INTERNAL, "/latest/meta-data/", title=SECRET)
    return world


def test_links_redirects_and_dns_answers_to_internal_addresses_are_neither_fetched_nor_stored(
    db, fakeweb_factory, crawl
):
    web = fakeweb_factory(internal_world())
    queue.seed(db, ["hub.test"])
    worker = crawl(web, RETRY_TIMES=0)

    with db.connect() as conn:
        rows = conn.execute(text("SELECT hostname, outcome, title, links_filtered FROM hosts"))
        facts = {row.hostname: row for row in rows}
    assert not [r for r in web.requests() if r["address"] == INTERNAL]
    assert not [name for name, row in facts.items() if SECRET in (row.title or "")]
    assert {name: facts[name].outcome for name in REFUSED} == dict.fromkeys(
        REFUSED, "ADDRESS_REFUSED"
    )
    saved_literals = {name for name in facts if name[0].isdigit() or ":" in name}
    assert saved_literals == set(), "no internal IP literal is saved"
    assert facts["hub.test"].links_filtered == len(LITERAL_LINKS)
    assert f"'hostcrawl/links/dropped/private_address': {len(LITERAL_LINKS)}" in worker.log()
    assert {name: facts[name].outcome for name in ORDINARY} == dict.fromkeys(ORDINARY, "OK")
    fetched = web.fetch_counts(path="/")
    assert all(fetched[name] == 1 for name in [*ORDINARY, "hub.test"])
    assert_within_bounds(db, worker.log())
