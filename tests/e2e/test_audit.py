"""`scrapy audit` against fakeweb's DNS: real processes, real resolver."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries, trap_windows
from crawler.db.server.engine import PROJECT_ROOT
from tests.e2e.conftest import CLUSTER, host_facts, wait_until
from tests.fakeweb import World

AUDIT_TIMEOUT = 120


def audit_command(web, *args: str, **settings) -> list[str]:
    settings = {
        "DNS_NAMESERVERS": web.nameservers,
        "DNS_TIMEOUT": 1,
        "AUDIT_PROGRESS_EVERY": 0.2,
        "AUDIT_BACKOFF_BASE": 60,
        **settings,
    }
    command = [sys.executable, "-m", "scrapy", "audit", "-L", "WARNING", *args]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return command


def run_audit(web, *args: str, **settings) -> subprocess.CompletedProcess:
    done = subprocess.run(
        audit_command(web, *args, **settings),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=AUDIT_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def audit_outcomes(db) -> dict[str, str | None]:
    with db.connect() as conn:
        return dict(conn.execute(text("SELECT hostname, audit_outcome FROM hosts")).all())


KINDS = {
    "alive.test": ("ok", "DNS_ALIVE"),
    "nx.test": ("nxdomain", "DNS_NXDOMAIN"),
    "servfail.test": ("servfail", "DNS_SERVFAIL"),
    "refusing.test": ("refused_dns", "DNS_REFUSED"),
    "empty.test": ("noanswer", "DNS_NOANSWER"),
    "mute.test": ("silent", "DNS_TIMEOUT"),
}


def web_of_kinds(db, fakeweb_factory, kinds: dict):
    """fakeweb with each host behaving as `kinds` says, every host queued."""
    world = World()
    for host, (behaviour, _) in kinds.items():
        world.host(host, behaviour)
    queue.save_hosts(db, kinds)
    return fakeweb_factory(world)


def expected_outcomes(kinds: dict) -> dict[str, str]:
    return {host: outcome for host, (_, outcome) in kinds.items()}


def test_each_failure_kind_lands_as_its_outcome_and_dead_hosts_back_off(db, fakeweb_factory):
    web = web_of_kinds(db, fakeweb_factory, KINDS)

    done = run_audit(web)

    assert audit_outcomes(db) == expected_outcomes(KINDS)
    assert not web.fetches(path=None), "the audit downloads nothing"
    assert "audited 6 hosts" in done.stdout and "DNS_NXDOMAIN" in done.stdout
    alive, dead = host_facts(db, "alive.test"), host_facts(db, "nx.test")
    assert alive.next_claim_at <= alive.audited_at + timedelta(seconds=1)  # due for the crawl
    assert dead.fail_streak == 1
    assert dead.next_claim_at - dead.audited_at == timedelta(seconds=120)  # base · 2^1


TLS_KINDS = {
    "secure.test": ("ok", "DNS_ALIVE"),
    "badtls.test": ("tls_broken", "TLS_HANDSHAKE"),
    "closed.test": ("refused", "TCP_REFUSED"),
    "hangup.test": ("reset", "TCP_RESET"),
    "stall.test": ("blackhole", "TLS_TIMEOUT"),  # accepts TCP, never answers the hello
}


def test_tls_handshake_outcomes_with_audit_tls(db, fakeweb_factory):
    web = web_of_kinds(db, fakeweb_factory, TLS_KINDS)

    run_audit(web, AUDIT_TLS=1, AUDIT_TLS_PORT=web.https_port, AUDIT_TLS_TIMEOUT=1)

    assert audit_outcomes(db) == expected_outcomes(TLS_KINDS)
    assert not web.fetches(path=None), "a handshake is not a download"
    assert {c["behaviour"] for c in web.connections()} == {"tls_broken", "reset", "blackhole"}


def test_backoff_grows_with_each_failure_up_to_the_cap(db, fakeweb_factory):
    world = World()
    world.host("gone.test", "nxdomain")
    web = fakeweb_factory(world)
    queue.save_hosts(db, ["gone.test"])
    waits = []
    for _ in range(4):
        run_audit(web, AUDIT_BACKOFF_MAX=500)
        facts = host_facts(db, "gone.test")
        waits.append(round((facts.next_claim_at - facts.audited_at).total_seconds()))
        with db.begin() as conn:  # make it due again for the next round
            conn.execute(text("UPDATE hosts SET next_claim_at = now()"))
    assert waits == [120, 240, 480, 500]


def test_a_trap_is_blocked_by_the_audit_alone(db, fakeweb_factory):
    world = World()
    world.zone("trap.test", "nxdomain")
    world.zone("wild.test", "a")  # a wildcard zone whose names all resolve
    traps = [f"n{i:03}.trap.test" for i in range(80)]
    live = [f"x{i:03}.wild.test" for i in range(80)]
    web = fakeweb_factory(world)
    queue.save_hosts(db, traps + live)

    run_audit(web)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert entry["hostname"] == "trap.test"
    assert "DNS_NXDOMAIN 50" in entry["blocked_reason"]
    assert re.search(
        r"not a wildcard zone: the random name hc-\w+\.trap\.test gave DNS_NXDOMAIN",
        entry["blocked_reason"],
    )
    assert not web.fetches(path=None), "no HTTP request reached fakeweb"
    outcomes = audit_outcomes(db)
    assert {outcomes[n] for n in live} == {"DNS_ALIVE"}
    assert {outcomes[n] for n in traps} <= {"DNS_NXDOMAIN", None}  # None: left after the block


def test_wildcard_zone_is_named_in_the_evidence(db, fakeweb_factory):
    world = World()
    world.zone("junk.test", "a")  # every random name resolves...
    names = [f"j{i:02}.junk.test" for i in range(60)]
    for name in names:
        world.host(name, "nxdomain")  # ...but the ones we hold are dead
    world.host("alive.test")  # a name that resolves: proof that the resolver answers
    web = fakeweb_factory(world)
    queue.save_hosts(db, [*names, "alive.test"])

    run_audit(web)

    [entry] = deny_entries.list_entries(db, "blocked")
    assert re.search(
        r"wildcard zone: the random name hc-\w+\.junk\.test resolves", entry["blocked_reason"]
    )
    probe = trap_windows.wildcard_probe(db, "junk.test")
    assert probe and probe[1] == "DNS_ALIVE"


def test_limit_root_and_dry_run(db, fakeweb_factory):
    world = World()
    world.zone("a.test", "a")
    world.zone("b.test", "a")
    web = fakeweb_factory(world)
    queue.save_hosts(db, [f"h{i}.a.test" for i in range(10)] + [f"h{i}.b.test" for i in range(10)])

    dry = run_audit(web, "--dry-run")
    assert "audited 20 hosts" in dry.stdout
    assert set(audit_outcomes(db).values()) == {None}, "a dry run writes nothing"
    with db.connect() as conn:
        assert (
            conn.execute(
                text(
                    "SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL"
                    " OR next_claim_at > now()"
                )
            ).scalar()
            == 0
        )

    run_audit(web, "--root", "B.test", "--limit", "4")
    audited = {h for h, o in audit_outcomes(db).items() if o}
    assert len(audited) == 4 and all(h.endswith(".b.test") for h in audited)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--limit", "0"), "--limit 0: must be at least 1"),
        (("--root", "bad..name"), "empty label"),
    ],
)
def test_bad_options_are_refused(db, fakeweb_factory, args, message):
    web = fakeweb_factory(World())
    done = subprocess.run(
        audit_command(web, *args),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=AUDIT_TIMEOUT,
    )
    assert done.returncode != 0 and message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_killed_audit_loses_nothing(db, fakeweb_factory, tmp_path):
    world = World()
    world.zone("slow.test", "silent")  # every lookup waits for the timeout
    names = [f"s{i:03}.slow.test" for i in range(300)]
    web = fakeweb_factory(world)
    queue.save_hosts(db, names)
    log = open(tmp_path / "audit.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        audit_command(web, AUDIT_CONCURRENCY=20, CLAIM_LEASE=2, DNS_TIMEOUT=2),
        cwd=PROJECT_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    with db.connect() as conn:
        claimed = text("SELECT count(*) FROM queue WHERE claimed_by LIKE 'audit:%'")
        wait_until(lambda: conn.execute(claimed).scalar() > 0, 30, "the audit to claim hosts")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    log.close()

    def all_due_again():
        with db.connect() as conn:
            return conn.execute(text("SELECT bool_and(next_claim_at <= now()) FROM queue")).scalar()

    wait_until(all_due_again, 60, "the killed audit's leases to run out")
    world_ok = World()
    world_ok.zone("slow.test", "a")
    web_ok = fakeweb_factory(world_ok)
    run_audit(web_ok)
    assert set(audit_outcomes(db).values()) == {"DNS_ALIVE"}


def test_resolver_survives_a_dns_server_that_goes_silent(db, fakeweb_factory, tmp_path):
    world = World()
    world.zone("many.test", "a")
    names = [f"m{i:04}.many.test" for i in range(3000)]
    web = fakeweb_factory(world)
    queue.save_hosts(db, names)
    log_path = tmp_path / "audit.log"
    log = open(log_path, "w")  # noqa: SIM115
    # The outage times out lookups under one root while the window is at its default 50:
    # should 50 in a row time out, the self-check sees the canaries (names resolved in
    # the last hour) time out too, and defers the block instead of blaming many.test.
    command = audit_command(web, AUDIT_CONCURRENCY=50, DNS_TIMEOUT=1)
    proc = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)

    def alive_count() -> int:
        found = re.findall(r"DNS_ALIVE (\d+)", log_path.read_text())
        return int(found[-1]) if found else 0

    wait_until(lambda: alive_count() >= 300, 60, "300 lookups before the outage")
    web.set_dns_silent(True)
    wait_until(lambda: "DNS_TIMEOUT" in log_path.read_text(), 30, "timeouts during the outage")
    before = alive_count()
    web.set_dns_silent(False)
    wait_until(lambda: alive_count() >= before + 300, 60, "the rate to recover")
    assert proc.wait(timeout=AUDIT_TIMEOUT) == 0
    log.close()
    outcomes = audit_outcomes(db)
    assert all(outcomes[n] in ("DNS_ALIVE", "DNS_TIMEOUT") for n in names)
    assert deny_entries.list_entries(db, "blocked") == []
    assert "audited 3,000 hosts" in log_path.read_text()


DEAD_ROOTS = [f"dead{i}.test" for i in range(6)]
LIVE_ROOTS = [f"live{i}.test" for i in range(6)]


def test_the_audit_of_many_roots_writes_every_outcome_into_the_windows(
    db, deployment, fakeweb_factory
):
    """On a cluster the audit's claim is routed per shard group: it must reach them all."""
    world = World()
    for domain in DEAD_ROOTS:
        world.zone(domain, "nxdomain", apex=True)
    for domain in LIVE_ROOTS:
        world.zone(domain, "ok", apex=True)
    # Fewer failures per root than a window proves: no block, only outcomes.
    names = [f"n{i}.{domain}" for domain in DEAD_ROOTS + LIVE_ROOTS for i in range(8)]
    queue.save_hosts(db, names)
    if deployment == CLUSTER:
        with db.connect() as conn:
            shards = conn.execute(
                text(
                    "SELECT count(DISTINCT get_shard_id_for_distribution_column('roots', root))"
                    " FROM roots"
                )
            ).scalar_one()
        assert shards > 1  # the audit must claim from more than one shard group

    done = run_audit(fakeweb_factory(world), AUDIT_CONCURRENCY=16)

    assert f"audited {len(names)} hosts" in done.stdout
    outcomes = audit_outcomes(db)
    assert outcomes == {
        name: "DNS_NXDOMAIN" if name.split(".", 1)[1] in DEAD_ROOTS else "DNS_ALIVE"
        for name in names
    }
    with db.connect() as conn:
        window = dict(conn.execute(text("SELECT hostname, outcome FROM trap_window")).all())
        claimed = conn.execute(text("SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL"))
        blocked = conn.execute(text("SELECT count(*) FROM queue WHERE status_reason IS NOT NULL"))
        counted = dict(conn.execute(text("SELECT root, window_failed FROM roots")).all())
        assert claimed.scalar_one() == 0 and blocked.scalar_one() == 0
    assert window == outcomes
    assert counted == {domain: 8 if domain in DEAD_ROOTS else 0 for domain in counted}
