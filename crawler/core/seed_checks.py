"""Seed inputs checked a list at a time: the Python half of seeding a file, the work
`hostcrawl seed -f` hands to a process per core (crawler.db.operators.bulk_pool). Pure.

Each input is normalized (crawler.core.hostnames.normalize), refused when it is no
crawlable seed (seed_refusal) and given its root, the three costs of a name in Python.
What the database decides (known already, under a deny entry) is crawler.db.operators.bulk's.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawler.core.hostnames import HostnameError, normalize, root, seed_refusal

# Per input: (its hostname, its root) for a seed, or (None, why it is refused).
Checked = tuple[str | None, str]


def check_seeds(
    values: Iterable[str],
    *,
    allow_private: bool = False,
    force: bool = False,
    local: frozenset[str] | None = None,
) -> list[Checked]:
    """Each value's hostname and root, or why it is no seed; in order.

    `local`: the LOCAL_SUFFIXES to use (None: this process's); a pool's workers get the
    parent's, read once for the whole list."""
    checked: list[Checked] = []
    for value in values:
        try:
            hostname = normalize(value)
        except HostnameError as exc:
            checked.append((None, exc.reason))
            continue
        why = seed_refusal(hostname, allow_private=allow_private, force=force, local=local)
        checked.append((None, why) if why else (hostname, root(hostname)))
    return checked
