"""An intranet crawl, as a new user first tries it (issue 51, item 2): LOCAL_SUFFIXES set,
ALLOWED_PRIVATE_NETWORKS not holding the intranet's addresses.

The intranet's names resolve (fakeweb's DNS) to 10.20.0.5, outside the loopback: the crawl
must refuse the address before it connects (ADDRESS_REFUSED), settle each host at once (not
hold it back as if our network failed), drain, and say in its log which address and which
setting. The crawler runs under tests/e2e/loopback_only: a connection outside 127.0.0.0/8
would be refused there and written down, so the test proves none was even tried.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from tests.cli import hostcrawl
from tests.e2e.conftest import CrawlerProcess, crawl_settings
from tests.fakeweb import World

INTRANET = "10.20.0.5"
HOSTS = ["wiki.corp.example", "mail.corp.example", "corp.example"]
GUARD = Path(__file__).parent / "loopback_only"
# A bound on the crawl, not a duration under test: it drains in seconds; before, it never did.
DRAINED_WITHIN = 90
REFUSED_LINE = (
    f"ADDRESS_REFUSED, not fetched: {INTRANET} is a private address,"
    " not in ALLOWED_PRIVATE_NETWORKS"
)


def intranet_world() -> World:
    world = World()
    world.elsewhere("corp.example", INTRANET)
    return world


def guarded_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process under the loopback guard, and the guard's log."""
    import os

    path = os.pathsep.join(p for p in (str(GUARD), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "LOOPBACK_ONLY_LOG": str(tmp_path / "outside.log")}


def test_the_guard_refuses_and_records_a_connection_outside_the_loopback(tmp_path):
    env = guarded_env(tmp_path)
    probe = f"import socket; socket.create_connection(({INTRANET!r}, 80), timeout=1)"
    import os

    run = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, **env}, capture_output=True, text=True
    )
    assert run.returncode == 1 and "ConnectionRefusedError" in run.stderr
    assert (tmp_path / "outside.log").read_text() == f"('{INTRANET}', 80)\n"


def test_an_intranet_crawl_without_the_setting_refuses_settles_and_drains(
    db, fakeweb_factory, tmp_path
):
    web = fakeweb_factory(intranet_world())
    local = {"LOCAL_SUFFIXES": "corp.example"}
    seeded = hostcrawl("seed", *HOSTS, env=local)
    assert seeded.returncode == 0, seeded.stderr

    env = guarded_env(tmp_path)
    settings = crawl_settings(web, "https", LOCAL_SUFFIXES="corp.example")
    worker = CrawlerProcess(settings, tmp_path / "crawl.log", env=env)
    try:
        worker.wait(timeout=DRAINED_WITHIN)  # drained: CLOSE_WHEN_DRAINED=1 ends it
    finally:
        worker.stop()  # one that never drains is not left running

    with db.connect() as conn:
        found = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
        held = conn.execute(text("SELECT coalesce(sum(held_tries), 0) FROM hosts")).scalar()
    assert found == dict.fromkeys(HOSTS, "ADDRESS_REFUSED")
    assert held == 0, "a refusal of ours is never held back as our outage"
    log = worker.log()
    # Told once for the address (every host here resolves to it), naming it and the setting.
    assert log.count(REFUSED_LINE) == 1, log[-3000:]
    assert "the world is not answering us" not in log
    assert "network or firewall" not in log
    assert "nothing due and nothing in flight: drained" in log
    assert "'hostcrawl/hosts/outcome/ADDRESS_REFUSED': 3" in log
    # Nothing was sent: no request reached fakeweb (per host and method: none), and no
    # connection was tried outside the loopback.
    assert web.requests() == []
    assert not (tmp_path / "outside.log").exists()


def test_seeding_an_intranet_address_names_the_one_setting(db):
    refused = hostcrawl("seed", INTRANET)
    assert refused.returncode == 1
    assert "a private address, not in ALLOWED_PRIVATE_NETWORKS (list its network" in refused.stderr
    assert "--allow-private" not in refused.stderr and "ALLOW_PRIVATE_HOSTS" not in refused.stderr
    allowed = hostcrawl("seed", INTRANET, env={"ALLOWED_PRIVATE_NETWORKS": "10.20.0.0/16"})
    assert allowed.returncode == 0, allowed.stderr
    # The old name still lets a seed in, and says what it is deprecated for.
    old = hostcrawl("seed", "10.20.0.6", env={"ALLOW_PRIVATE_HOSTS": "1"})
    assert old.returncode == 0
    assert "ALLOW_PRIVATE_HOSTS=1) is deprecated" in old.stderr
    assert "ALLOWED_PRIVATE_NETWORKS" in old.stderr
