"""The main list with 10,000 hosts, some under blocked and no_follow entries at several
depths: walking every keyset page shows exactly the others, in order, once each."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import text

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import insert_hosts, next_link, shown_hosts

pytest_plugins = ["tests.unit.test_panel_support"]

HOSTS = 10_000
# Entries at depth 0 (a root), 1 and 2 below their root, of both rules.
NO_FOLLOW_BEFORE = ["social.test", "www.big.test"]  # added before their hosts were saved
NO_FOLLOW_AFTER = ["x.y.deep.test", "cdn.co.uk"]  # added after (they take rows out of routing)
BLOCKED_ENTRIES = ["trap.test", "m.wild.test"]
NEAR_MISSES = [
    "notsocial.test",
    "social.test.evil.test",
    "social.testx",
    "www-big.test",
    "big.test",
    "shop.big.test",
    "y.deep.test",
    "z.x.ydeep.test",
    "wild.test",
    "mm.wild.test",
]


def corpus(rng: random.Random) -> list[str]:
    names = set(NEAR_MISSES)
    for entry in NO_FOLLOW_BEFORE + NO_FOLLOW_AFTER + BLOCKED_ENTRIES:
        names.add(entry)
        for _ in range(150):
            labels = [f"{rng.choice('abcdefghij')}{rng.randint(0, 999)}"]
            labels += ["www"] * rng.randint(0, 2)
            names.add(".".join([*labels, entry]))
    while len(names) < HOSTS:
        depth = rng.choice((0, 0, 1, 1, 2))
        labels = [f"s{rng.randint(0, 99)}" for _ in range(depth)]
        names.add(
            ".".join([*labels, f"d{rng.randint(0, 2999)}", rng.choice(("test", "org", "de"))])
        )
    return sorted(names)


@dataclass
class Loaded:
    visible: dict[str, datetime]  # what `/` must show, with discovered_at
    ok: set[str]  # those of them whose outcome is OK


@pytest.fixture
def loaded(db) -> Loaded:
    """10,000 hosts; what `/` must show."""
    names = corpus(random.Random(8))
    deny_entries.add_no_follow(db, NO_FOLLOW_BEFORE, note="before")
    insert_hosts(db, names)
    deny_entries.add_no_follow(db, NO_FOLLOW_AFTER, note="after")
    for entry in BLOCKED_ENTRIES:
        deny_entries.upsert_blocked(db, entry, f"trap at {entry}")
    # Discovery times with many ties, so the sort's hostname tie-break matters.
    base = datetime(2026, 11, 1, tzinfo=UTC)
    with db.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET discovered_at = :base"
                " + make_interval(secs => (abs(hashtext(hostname)) % 97))"
            ),
            {"base": base},
        )
        conn.execute(text("UPDATE hosts SET outcome = 'OK' WHERE abs(hashtext(hostname)) % 3 = 0"))
        # A stale worker saved a host under an entry after the entry was made:
        # denied_by is unset, yet the host must stay hidden.
        conn.execute(text("UPDATE hosts SET denied_by = NULL WHERE hostname LIKE 'a%.social.test'"))
        stale = conn.execute(
            text("SELECT count(*) FROM queue WHERE hostname LIKE 'a%.social.test'")
        ).scalar()
    assert stale > 0
    deny = [(e, NO_FOLLOW) for e in NO_FOLLOW_BEFORE + NO_FOLLOW_AFTER]
    deny += [(e, BLOCKED) for e in BLOCKED_ENTRIES]
    denylist = DenyList(deny)
    with db.connect() as conn:
        stored = conn.execute(text("SELECT hostname, discovered_at, outcome FROM hosts")).all()
    assert len(stored) >= HOSTS
    visible = {h: at for h, at, _ in stored if denylist.denial(h) is None}
    ok = {h for h, _, outcome in stored if outcome == "OK" and h in visible}
    assert 0 < len(ok) < len(visible)
    hidden = len(stored) - len(visible)
    assert 800 < hidden < 2000, hidden
    for near in NEAR_MISSES:
        assert near in visible
    return Loaded(visible, ok)


def walk(client, url: str) -> list[str]:
    """Every hostname over every next page, starting at `url`."""
    seen: list[str] = []
    pages = 0
    while url:
        html = client.get(url).get_data(as_text=True)
        seen += shown_hosts(html)
        url = next_link(html)
        pages += 1
        if url:
            args = parse_qs(urlsplit(url).query)
            assert args["n"] == ["500"] and "after" in args  # the other args are kept
    assert pages > 5
    return seen


@pytest.mark.parametrize("sort", ["name", "newest", "oldest"])
def test_every_page_of_the_main_list_shows_exactly_the_hosts_not_denied(client, loaded, sort):
    visible = loaded.visible
    shown = walk(client, f"/?sort={sort}&n=500")
    assert len(shown) == len(set(shown)), "a host on two pages"
    assert set(shown) == set(visible)
    keys = {
        "name": lambda h: h,
        "newest": lambda h: (visible[h], h),
        "oldest": lambda h: (visible[h], h),
    }
    assert shown == sorted(visible, key=keys[sort], reverse=sort == "newest")


def test_a_filter_on_hosts_columns_walks_the_same_way(client, loaded):
    assert walk(client, "/?outcome=OK&n=500") == sorted(loaded.ok)


def test_searches_on_the_big_list_match_python(client, loaded):
    www = shown_hosts(client.get("/?q=www.&n=500").get_data(as_text=True))
    assert www == sorted(h for h in loaded.visible if h.startswith("www."))
    under = shown_hosts(client.get("/?q=big.test&match=domain&n=500").get_data(as_text=True))
    expected = (h for h in loaded.visible if h == "big.test" or h.endswith(".big.test"))
    assert under == sorted(expected)
    assert "www.big.test" not in under and "shop.big.test" in under


def test_going_back_gives_the_same_pages(client, loaded):
    first = client.get("/?sort=newest&n=300").get_data(as_text=True)
    second_url = next_link(first)
    second = client.get(second_url).get_data(as_text=True)
    back = second.split('rel="prev" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert shown_hosts(client.get(back).get_data(as_text=True)) == shown_hosts(first)
