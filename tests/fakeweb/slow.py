"""Slow mode: make a world's hosts behave like the real web's.

    world = World(seed=1)
    names = world.graph(1200, roots)
    kinds = slow_web(world, names)          # 90% answer after 0.3-1.2 s, 7% hang, 3% no DNS
    kinds["answering"], kinds["hanging"], kinds["no_dns"]
    slow_web(world, names, nxdomain=0.07, refused=0.06)   # also dead names and hosts

A hanging host resolves, accepts TCP and TLS, reads the request and never
answers (World.hang); a host without DNS gets no reply at all (behaviour
"silent"); a dead name gets NXDOMAIN at once, a refusing host's address refuses every
connection (the "nxdomain" and "refused" kinds, none unless asked for); every DNS reply
waits uniform(*dns) seconds (World.slow_dns).
Deterministic for a given seed. The fakeweb's event log counts, per root, the
requests being answered at once (`root_in_flight` of each request record).
"""

from __future__ import annotations

import random

from .world import World

ANSWER = (0.3, 1.2)  # seconds before a host answers
HANG = 0.07  # share of hosts that hang after accepting
NO_DNS = 0.03  # share of names that never get a DNS reply
DNS = (0.02, 0.08)  # seconds before a DNS reply


def slow_web(
    world: World,
    names: list[str],
    *,
    answer: tuple[float, float] = ANSWER,
    hang: float = HANG,
    no_dns: float = NO_DNS,
    dns: tuple[float, float] | None = DNS,
    nxdomain: float = 0.0,
    refused: float = 0.0,
    keep: tuple[str, ...] = (),
    seed: int = 0,
) -> dict[str, list[str]]:
    """Make `names` slow; returns them by kind: answering, hanging, no_dns, nxdomain,
    refused (shares of the names: `hang`, `no_dns`, `nxdomain`, `refused`).

    Names in `keep` (a seed the crawl must start from) always answer.
    """
    rng = random.Random(seed)
    kinds: dict[str, list[str]] = {
        "answering": [],
        "hanging": [],
        "no_dns": [],
        "nxdomain": [],
        "refused": [],
    }
    dead = nxdomain + refused
    for name in names:
        draw = 1.0 if name in keep else rng.random()
        if draw < dead:
            kind = "nxdomain" if draw < nxdomain else "refused"
            kinds[kind].append(world.host(name, kind))
            continue
        draw -= dead
        if draw < no_dns:
            world.host(name, "silent")
            kinds["no_dns"].append(name)
        elif draw < no_dns + hang:
            kinds["hanging"].append(world.hang(name))
        else:
            kinds["answering"].append(world.answer_after(name, round(rng.uniform(*answer), 3)))
    if dns:
        world.slow_dns(*dns)
    return kinds
