"""`scrapy audit` on a Citus cluster: its claim routed per shard group, its outcomes in
the windows (a real one-machine cluster; skips with one line without `make citus`)."""

from __future__ import annotations

from sqlalchemy import text

from crawler.db import queue
from tests.e2e.test_audit import audit_outcomes, run_audit
from tests.fakeweb import World

DEAD_ROOTS = [f"dead{i}.test" for i in range(6)]
LIVE_ROOTS = [f"live{i}.test" for i in range(6)]


def test_the_audit_on_the_cluster_writes_every_outcome_into_the_windows(
    cluster_db, fakeweb_factory
):
    world = World()
    for domain in DEAD_ROOTS:
        world.zone(domain, "nxdomain", apex=True)
    for domain in LIVE_ROOTS:
        world.zone(domain, "ok", apex=True)
    # Fewer failures per root than a window proves: no block (the deny-entry writer is
    # not on the cluster yet), only outcomes.
    names = [f"n{i}.{domain}" for domain in DEAD_ROOTS + LIVE_ROOTS for i in range(8)]
    queue.save_hosts(cluster_db, names)
    with cluster_db.connect() as conn:
        shards = conn.execute(
            text(
                "SELECT count(DISTINCT get_shard_id_for_distribution_column('roots', root))"
                " FROM roots"
            )
        ).scalar_one()
    assert shards > 1  # the audit must claim from more than one shard group

    done = run_audit(fakeweb_factory(world), AUDIT_CONCURRENCY=16)

    assert f"audited {len(names)} hosts" in done.stdout
    outcomes = audit_outcomes(cluster_db)
    assert outcomes == {
        name: "DNS_NXDOMAIN" if name.split(".", 1)[1] in DEAD_ROOTS else "DNS_ALIVE"
        for name in names
    }
    with cluster_db.connect() as conn:
        window = dict(conn.execute(text("SELECT hostname, outcome FROM trap_window")).all())
        claimed = conn.execute(text("SELECT count(*) FROM queue WHERE claimed_by IS NOT NULL"))
        blocked = conn.execute(text("SELECT count(*) FROM queue WHERE status_reason IS NOT NULL"))
        counted = dict(conn.execute(text("SELECT root, window_failed FROM roots")).all())
        assert claimed.scalar_one() == 0 and blocked.scalar_one() == 0
    assert window == outcomes
    assert counted == {domain: 8 if domain in DEAD_ROOTS else 0 for domain in counted}
