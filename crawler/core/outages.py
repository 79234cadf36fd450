"""Why the world does not answer us, in one line an operator can act on. Pure.

While no canary answers, every failure below HTTP is held back. Which layer fails
(our resolver, or our network), how many of the tries there failed, the most common
error, and the settings behind that layer are what the operator needs to see: the log
line, the panel's banner and the console's progress line all say it this way, e.g.
"DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT (DNS_NAMESERVERS=
127.0.0.1:9; no CANARY_HOSTS set)".
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

# The layers a failure is judged at (crawler.rules.evidence uses the same words).
DNS = "dns"
NETWORK = "network"
LAYER_NAMES = {DNS: "DNS", NETWORK: "network"}
TRIES = {DNS: "lookups", NETWORK: "connections"}
# An answer is tallied under this error: the empty string is no outcome.
ANSWERED = ""


@dataclass(frozen=True)
class LayerFailures:
    """The tries at one layer in the span, how many failed, and their commonest error."""

    layer: str
    tries: int
    failures: int
    top_error: str
    top_count: int

    def describe(self, span: float) -> str:
        """'DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT'."""
        name, tries = LAYER_NAMES.get(self.layer, self.layer), TRIES.get(self.layer, "tries")
        share = "all" if self.top_count == self.failures else f"{self.top_count}"
        return (
            f"{name}: {self.failures} of {self.tries} {tries} failed in {span_words(span)},"
            f" {share} {self.top_error}"
        )


def span_words(seconds: float) -> str:
    """'the last minute', 'the last 10 s'."""
    return "the last minute" if round(seconds) == 60 else f"the last {seconds:.0f} s"


class FailureTally:
    """Tries at each layer over the last `span` seconds, by the second: answers and
    failures by outcome. `now` is given by the caller (monotonic seconds)."""

    def __init__(self, span: float) -> None:
        self.span = span
        self._seconds: deque[tuple[int, Counter]] = deque()

    def answered(self, layer: str, now: float) -> None:
        self._add(layer, ANSWERED, now)

    def failed(self, layer: str, outcome: str, now: float) -> None:
        self._add(layer, outcome, now)

    def _add(self, layer: str, outcome: str, now: float) -> None:
        second = int(now)
        if not self._seconds or self._seconds[-1][0] != second:
            self._seconds.append((second, Counter()))
        self._seconds[-1][1][layer, outcome] += 1
        self._forget(now)

    def _forget(self, now: float) -> None:
        while self._seconds and self._seconds[0][0] <= now - self.span:
            self._seconds.popleft()

    def failing(self, now: float) -> LayerFailures | None:
        """The layer with the most failures in the span (DNS first on a tie), or None."""
        self._forget(now)
        total: Counter = Counter()
        for _, counts in self._seconds:
            total.update(counts)
        found = []
        for layer in (DNS, NETWORK):
            errors = Counter({o: n for (at, o), n in total.items() if at == layer and o})
            if errors:
                top, top_count = errors.most_common(1)[0]
                tries = sum(errors.values()) + total[layer, ANSWERED]
                found.append(LayerFailures(layer, tries, sum(errors.values()), top, top_count))
        return max(found, key=lambda f: f.failures, default=None)


def settings_to_check(
    layer: str, nameservers: str, canary_hosts: list[str], connect_timeout: float
) -> str:
    """The settings behind a failing layer, as the operator would look them up."""
    if layer == DNS:
        behind = (
            f"DNS_NAMESERVERS={nameservers}"
            if nameservers
            else "the system's resolver in /etc/resolv.conf, as DNS_NAMESERVERS is unset"
        )
    else:
        behind = f"this machine's network or firewall; CONNECT_TIMEOUT={connect_timeout:g}"
    canaries = f"CANARY_HOSTS={','.join(canary_hosts)}" if canary_hosts else "no CANARY_HOSTS set"
    return f"{behind}; {canaries}"


def why_silent(failures: LayerFailures | None, span: float, check: str, verdict: str) -> str:
    """The whole reason: the failing layer first, then the settings, then what the check
    found (no canary, or what the canaries said). Without failures, the verdict alone."""
    if failures is None:
        return verdict
    return f"{failures.describe(span)} ({check}); {verdict}"
