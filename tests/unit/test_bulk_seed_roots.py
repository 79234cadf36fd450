"""A seed's roots: their host counts and due bounds, kept in one write per root.

bulk.seed counts its new hosts into their roots and lowers the roots' next_due_at to
now() in the same upsert (rollups.count_hosts(due_now=True)); a known host it re-dates
lowers its root through rollups.lower_next_due. The claim walks roots by next_due_at:
a root left undated would never be claimed.
"""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.operators import bulk


def roots(db) -> dict[str, tuple[int, str]]:
    """{root: (hosts, how its next_due_at stands to now())}."""
    with db.connect() as conn:
        rows = conn.execute(
            text(
                """SELECT root, hosts, CASE WHEN next_due_at IS NULL THEN 'none'
                          WHEN next_due_at < now() - interval '1 hour' THEN 'earlier'
                          WHEN next_due_at > now() + interval '1 hour' THEN 'later'
                          ELSE 'now' END FROM roots"""
            )
        )
        return {root: (hosts, due) for root, hosts, due in rows}


def seed(db, *names: str) -> list[str]:
    return [c.status for c in bulk.collect(bulk.seed(db, names, size=2))]


def execute(db, sql: str) -> None:
    with db.begin() as conn:
        conn.execute(text(sql))


def test_new_hosts_are_counted_in_their_roots_and_make_them_due_now(db):
    statuses = seed(db, "a.x.test", "b.x.test", "c.y.test", "A.x.test")
    assert sorted(statuses) == ["already", "queued", "queued", "queued"]  # A.x.test is a.x.test
    assert roots(db) == {"x.test": (2, "now"), "y.test": (1, "now")}


def test_a_due_bound_is_only_ever_lowered(db):
    seed(db, "a.early.test", "a.late.test")
    execute(db, "UPDATE roots SET next_due_at = now() - interval '1 day' WHERE root = 'early.test'")
    execute(db, "UPDATE roots SET next_due_at = now() + interval '1 day' WHERE root = 'late.test'")
    assert seed(db, "b.early.test", "b.late.test") == ["queued", "queued"]
    assert roots(db) == {"early.test": (2, "earlier"), "late.test": (2, "now")}


def test_a_known_host_without_a_date_dates_its_root_when_seeded_again(db):
    seed(db, "a.z.test")
    execute(db, "UPDATE hosts SET next_claim_at = NULL; UPDATE roots SET next_due_at = NULL")
    assert roots(db) == {"z.test": (1, "none")}
    assert seed(db, "a.z.test") == ["already"]
    assert roots(db) == {"z.test": (1, "now")}
    # Beside a new host of the same root (its due bound comes with the count).
    execute(db, "UPDATE hosts SET next_claim_at = NULL; UPDATE roots SET next_due_at = NULL")
    assert seed(db, "a.z.test", "b.z.test") == ["already", "queued"]
    assert roots(db) == {"z.test": (2, "now")}


def test_the_stage_keeps_every_note_as_written(db):
    """stage() writes COPY's text format itself: tabs, newlines, backslashes escaped."""
    notes = ["tab\there", "two\nlines", "back\\slash \\N", "cr\rlf", None, "naïve ✓"]
    batch = bulk.Batch()
    for i, note in enumerate(notes):
        batch.take(f"n{i}.notes.test", f"n{i}.notes.test", note)
    with db.begin() as conn:
        bulk.stage(conn, batch)
        staged = conn.execute(text("SELECT hostname, root, note FROM bulk_names")).all()
    assert sorted(staged) == [(f"n{i}.notes.test", "notes.test", n) for i, n in enumerate(notes)]
