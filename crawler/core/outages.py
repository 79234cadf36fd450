"""Our own outage, as against the web's answers: which failures may be the world's
silence, when the crawl's own answers prove the world answers us, when failures with
no canary to ask are an outage, and why the world does not answer us, in one line an
operator can act on. Pure.

While no canary answers, every failure that may be the world's silence is held back
(`SILENCES`; a refusal by our own rules never is). Which layer fails
(our resolver, or our network), how many of the tries there failed, the most common
error, and the settings behind that layer are what the operator needs to see: the log
line, the panel's banner and the console's progress line all say it this way, e.g.
"DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT (DNS_NAMESERVERS=
127.0.0.1:9; no CANARY_HOSTS set)".
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

from crawler.core.outcomes import (
    DNS_NXDOMAIN,
    DNS_REFUSED,
    DNS_SERVFAIL,
    DNS_TIMEOUT,
    HTTP_TIMEOUT,
    TCP_REFUSED,
    TCP_RESET,
    TCP_TIMEOUT,
    TLS_HANDSHAKE,
    TLS_TIMEOUT,
)
from crawler.core.words import counted

# The layers a failure is judged at (crawler.rules.evidence uses the same words).
DNS = "dns"
NETWORK = "network"
LAYER_NAMES = {DNS: "DNS", NETWORK: "network"}
TRIES = {DNS: "lookups", NETWORK: "connections"}
# An answer is tallied under this error: the empty string is no outcome.
ANSWERED = ""

# The one list of failures that may be the world's silence rather than the host's own:
# nothing answered us at DNS, TCP or TLS, or what answered is what our own resolver or
# network says when it is gone (a resolver that lies answers NXDOMAIN to every name; a
# firewall resets or breaks every connection; a network gone mid-download times out).
# Only these make the world check ask whether the world answers us, count towards an
# outage, and are held back in one. Every other outcome is the host's answer or our own
# rule's refusal (ADDRESS_REFUSED, HTTP_TOO_LARGE, a deny entry's IGNORED, robots.txt,
# an answer we could not read): settled at once, never an outage. A kind of outcome
# added later is outside it until it is named here.
SILENCES = frozenset(
    {
        DNS_TIMEOUT,
        DNS_SERVFAIL,
        DNS_REFUSED,
        DNS_NXDOMAIN,
        TCP_TIMEOUT,
        TCP_REFUSED,
        TCP_RESET,
        TLS_TIMEOUT,
        TLS_HANDSHAKE,
        HTTP_TIMEOUT,
    }
)
# Before any host has answered in this database there is no canary to ask: failures on
# this many roots, with no answer since, are our outage; fewer are the hosts' own.
SEVERAL_ROOTS = 3
NEVER = float("-inf")


def is_silence(outcome: str | None) -> bool:
    """Whether a failure may be the world's silence, ours (see SILENCES)."""
    return outcome in SILENCES


@dataclass(frozen=True)
class Heard:
    """What the crawl heard at one layer, apart from the failure being judged: when
    another root last answered, when another host last failed in silence, and how many
    roots failed in silence since the last answer (the failing host's root included).
    Times are monotonic seconds."""

    last_answer: float = NEVER
    last_silence: float = NEVER
    roots_silent: int = 0


def crawl_says_it_answers(heard: Heard, began: float, now: float, recent: float) -> bool:
    """The crawl's own answers prove the world answers us, with no probe sent: another
    root answered after the failure's wait began, or - nothing having failed in silence
    since - within the last `recent` seconds (a host that answered a moment ago is not
    asked again to say what it just said)."""
    if heard.last_answer == NEVER:
        return False
    if heard.last_answer >= began:
        return True
    return heard.last_answer >= now - recent and heard.last_silence <= heard.last_answer


def silence_without_canary(heard: Heard) -> bool:
    """With no canary to ask, whether the failures are our outage: several roots failing
    in silence with no answer since. One root failing is that root's failure."""
    return heard.roots_silent >= SEVERAL_ROOTS


def no_canary_reason(heard: Heard) -> str:
    """Why an outage was found without a canary, in the log's and the banner's words."""
    return (
        f"no host has answered yet in this database, and {heard.roots_silent} roots"
        " failed with nothing answering since"
    )


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


# The log's three lines of a spell of our silence (crawler.rules.world_check): its start,
# its summary every so often, and its end.
def silence_began(reason: str, held: int) -> str:
    return (
        f"the world is not answering us ({reason}): blocks are held, and failures below"
        f" HTTP are held back until it answers, not settled; {counted(held, 'host')} held back"
    )


def silence_so_far(seconds: float, reason: str, held: int, failures: int, since: float) -> str:
    return (
        f"the world has not answered us for {seconds:.0f} s ({reason}):"
        f" {counted(held, 'host')} held back so far, {counted(failures, 'failure')} tried"
        f" again in the last {since:.0f} s; blocks are held"
    )


def silence_ended(seconds: float, held: int) -> str:
    return (
        f"the world answers again after {seconds:.0f} s:"
        f" {counted(held, 'host was', 'hosts were')} held back (asked again now, not"
        " settled); blocks resume"
    )
