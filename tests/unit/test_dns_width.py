"""DNS at the width of a slow web: lookups do not queue behind each other, and the
resolver counts its width, its cache's hits and the hosts' waits
(crawler/network/resolver.py, crawler/network/dns_figures.py)."""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer, reactor
from twisted.names import dns

from crawler.network.dns_figures import DnsFigures
from crawler.network.resolver import OutcomeResolver

LOOKUPS = 500


class HeldQueries:
    """Stands for the UDP sockets twisted.names opens, one per query: records each query
    asked and holds its answer until told."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, defer.Deferred]] = []

    def protocol(self, interface: str = ""):
        def query(address, queries, timeout=10, id=None):
            answered = defer.Deferred()
            self.pending.append((queries[0].name.name.decode(), answered))
            return answered

        transport = SimpleNamespace(stopListening=lambda: None)
        return SimpleNamespace(query=query, transport=transport)

    def answer_all(self) -> None:
        for name, answered in self.pending:
            message = dns.Message(answer=1)
            record = dns.Record_A("93.184.215.14", ttl=300)
            message.answers = [dns.RRHeader(name, dns.A, dns.IN, 300, record)]
            answered.callback(message)
        self.pending.clear()


def test_lookups_do_not_queue_behind_each_other_and_are_counted():
    resolver = OutcomeResolver(reactor, [("127.0.0.1", 53)])
    held = HeldQueries()
    resolver._client._connectedProtocol = held.protocol
    names = [f"h{i}.example.org" for i in range(LOOKUPS)]
    results: list[str] = []
    for name in names:
        resolver.getHostByName(name).addCallback(results.append)
    # Every lookup is asked before any is answered: none waits for another's answer.
    assert sorted(name for name, _ in held.pending) == sorted(names)
    assert resolver.figures.in_flight == LOOKUPS
    held.answer_all()
    assert results == ["93.184.215.14"] * LOOKUPS
    resolver.getHostByName(names[0]).addCallback(results.append)  # from the cache
    assert held.pending == []
    stats = resolver.figures.stats(percentiles=True)
    assert stats["hostcrawl/dns/in_flight_peak"] == LOOKUPS
    assert stats["hostcrawl/dns/in_flight"] == 0
    assert stats["hostcrawl/dns/lookups"] == LOOKUPS
    assert stats["hostcrawl/dns/cache_hits"] == 1
    assert stats["hostcrawl/dns/waits"] == LOOKUPS + 1


def test_the_waits_give_their_total_maximum_and_percentiles():
    figures = DnsFigures()
    for ms in range(1, 101):
        figures.waited(ms / 1000)
    stats = figures.stats(percentiles=True)
    assert stats["hostcrawl/dns/wait_ms/max"] == 100
    assert stats["hostcrawl/dns/wait_ms/total"] == 5050
    assert (stats["hostcrawl/dns/wait_ms/p50"], stats["hostcrawl/dns/wait_ms/p95"]) == (50, 95)
    assert "hostcrawl/dns/wait_ms/p50" not in figures.stats()  # every tick: no sort
