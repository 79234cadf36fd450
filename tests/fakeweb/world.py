"""The fake world: which names resolve where, and what their pages say.

A :class:`World` is plain data (dicts of JSON-able values) so that it can be
written to a file and handed to the fakeweb subprocess unchanged.
"""

from __future__ import annotations

import base64
import json
import random
from collections import deque
from collections.abc import Collection
from pathlib import Path
from urllib.parse import urlsplit

# Every behaviour that is reached by connecting somewhere is told apart by the
# loopback address the DNS answers with, because the crawler uses one port
# number (from HOST_URL_TEMPLATE) for every host.
ADDRESSES = {
    "ok": "127.0.0.1",
    "refused": "127.0.0.2",
    "reset": "127.0.0.3",
    "tls_broken": "127.0.0.4",
    "blackhole": "127.0.0.5",
    # Plain HTTP answers; the https port breaks TLS (tls) or refuses (refused).
    "http_only": "127.0.0.6",
    "http_only_refused": "127.0.0.7",
    # Not the test internet: a service inside our own network, which the crawler must
    # never reach (ALLOWED_PRIVATE_NETWORKS lets only the addresses above through).
    "internal": "127.0.0.9",
}
# ALLOWED_PRIVATE_NETWORKS for a crawl of fakeweb: its web, not its internal service.
ALLOWED_NETWORKS = ",".join(
    f"{address}/32" for behaviour, address in ADDRESSES.items() if behaviour != "internal"
)

# Behaviour name -> (DNS answer kind, address for kind "a").
BEHAVIOURS = {
    "ok": ("a", ADDRESSES["ok"]),
    "a": ("a", ADDRESSES["ok"]),
    "refused": ("a", ADDRESSES["refused"]),
    "reset": ("a", ADDRESSES["reset"]),
    "tls_broken": ("a", ADDRESSES["tls_broken"]),
    "blackhole": ("a", ADDRESSES["blackhole"]),
    "http_only": ("a", ADDRESSES["http_only"]),
    "http_only_refused": ("a", ADDRESSES["http_only_refused"]),
    "internal": ("a", ADDRESSES["internal"]),
    "nxdomain": ("nxdomain", None),
    "servfail": ("servfail", None),
    "refused_dns": ("refused", None),
    "noanswer": ("noanswer", None),
    "silent": ("silent", None),
}

ROBOTS_ALLOW_ALL = "User-agent: *\nDisallow:\n"

# Alternative spellings of a link to host T, used by graph(messy=...) so that
# the crawler's link normalisation gets exercised.
MESSY_FORMS = (
    "http://{upper}/",
    "http://{host}./",
    "http://{host}:8080/some/path",
    "https://{host}/",
    "//{host}/",
    "HTTP://{upper}.:80/?q=1",
)


def normalize_host(name: str) -> str:
    """Lower-case a hostname and drop one trailing dot."""
    name = name.strip().lower()
    return name[:-1] if name.endswith(".") else name


def link_host(href: str, base_host: str) -> str | None:
    """Hostname an href points to, resolved against base_host; None if not web."""
    try:
        parts = urlsplit(href.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme and parts.scheme.lower() not in ("http", "https"):
        return None
    if not parts.netloc:
        return base_host
    return normalize_host(host) if host else None


class World:
    """Names, DNS rules and pages served by a fakeweb instance."""

    def __init__(
        self, seed: int = 0, *, ttl: int = 300, negative_ttl: int = 300, delay: float = 0.0
    ):
        """Create an empty world; seed drives graph(), ttl/negative_ttl the DNS.

        delay: seconds every HTTP answer waits (a slower web, for fault tests).
        """
        self.seed = seed
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.delay = delay
        self.rng = random.Random(seed)
        self.names: dict[str, dict] = {}  # exact DNS rules
        self.zones: dict[str, dict] = {}  # suffix DNS rules
        self.pages: dict[str, dict[str, dict]] = {}  # host -> path -> page
        self.robots: dict[str, str] = {}  # host -> robots.txt body
        self.farms: dict[str, int] = {}  # wildcard farm -> fresh links per page
        # Slow mode (tests/fakeweb/slow.py): host -> {"delay": s} | {"hang": True} |
        # {"trickle": [bytes, every s]}; and DNS replies delayed by uniform(lo, hi) s.
        self.timing: dict[str, dict] = {}
        self.dns_delay: list[float] | None = None
        # Extra DNS names of the one TLS certificate every https host presents, and the
        # certificates of their own that some hosts present instead (by SNI).
        self.certificate_names: list[str] = []
        self.host_certificates: dict[str, list[str]] = {}

    # -- building -----------------------------------------------------------

    def site(
        self,
        name: str,
        title: str | None = None,
        links: list[str] | tuple[str, ...] = (),
        *,
        status: int = 200,
        robots: str | None = None,
        ttl: int | None = None,
    ) -> str:
        """Serve a page at http(s)://name/ and resolve name to 127.0.0.1.

        title None means the hostname; "" means no <title> element.
        robots None gives a 404 for /robots.txt, "allow" an allow-all file,
        any other string is served verbatim. An explicit host() rule for the
        name is kept (so a site can also be made unreachable).
        """
        name = self.page(name, "/", title, links, status=status)
        if robots is not None:
            self.robots[name] = ROBOTS_ALLOW_ALL if robots == "allow" else robots
        if ttl is not None:
            self.names[name]["ttl"] = ttl
        return name

    def page(
        self,
        name: str,
        path: str,
        title: str | None = None,
        links: list[str] | tuple[str, ...] = (),
        *,
        status: int = 200,
    ) -> str:
        """Serve one more page (any path) on host name; returns the name."""
        name = normalize_host(name)
        page = {"status": status, "title": name if title is None else title}
        page["links"] = list(links)
        self._ensure_served(name)[path] = page
        return name

    def raw(
        self,
        name: str,
        body: bytes,
        *,
        content_type: str = "text/html",
        status: int = 200,
        path: str = "/",
        headers: dict[str, str | list[str]] | None = None,
    ) -> str:
        """Serve `body` byte for byte (hostile pages: bad encodings, binary, huge link lists),
        with response `headers` besides Content-Type and Content-Length (a list of values:
        one header line each)."""
        name = normalize_host(name)
        page = {"status": status, "raw": base64.b64encode(body).decode(), "type": content_type}
        if headers:
            page["headers"] = dict(headers)
        self._ensure_served(name)[path] = page
        return name

    def huge(self, name: str, size: int, *, content_type: str = "text/html") -> str:
        """Serve a body of `size` bytes at name/, streamed (never held whole)."""
        name = normalize_host(name)
        self._ensure_served(name)["/"] = {"status": 200, "size": size, "type": content_type}
        return name

    def redirect(
        self,
        name: str,
        location: str,
        *,
        status: int = 301,
        path: str = "/",
        headers: dict[str, str | list[str]] | None = None,
        body: str | None = None,
    ) -> str:
        """Make name/path answer with a redirect (Location: location), with more
        `headers` and an HTML `body` if given (default: a link to the location).

        location may name "{http_port}" or "{https_port}", filled in when fakeweb starts.
        """
        name = normalize_host(name)
        page = {"status": status, "location": location}
        if headers:
            page["headers"] = dict(headers)
        if body is not None:
            page["body"] = body
        self._ensure_served(name)[path] = page
        return name

    def host(self, name: str, behaviour: str = "ok", *, ttl: int | None = None) -> str:
        """Set how an exact name behaves (see BEHAVIOURS); overrides zones."""
        name = normalize_host(name)
        self.names[name] = self._rule(behaviour, ttl)
        return name

    def cname(self, name: str, target: str, *, ttl: int | None = None) -> str:
        """Make `name` a CNAME of `target`: the answer holds the CNAME, then the target's
        A record when the target resolves (as a recursive server answers)."""
        name = normalize_host(name)
        self.names[name] = {"kind": "cname", "target": normalize_host(target)}
        self.names[name].update(address=None, ttl=ttl)
        return name

    def cname_chain(self, name: str, via: list[str], target: str) -> str:
        """Make `name` a chain of CNAMEs through `via` to `target`, answered whole in one
        message as a recursive server answers it (CNAMEs, then the target's A record)."""
        name = self.cname(name, target)
        self.names[name]["via"] = [normalize_host(hop) for hop in via]
        return name

    def certify(self, *names: str) -> None:
        """Name `names` in the TLS certificate too (it always names *.test)."""
        self.certificate_names.extend(names)

    def certify_host(self, name: str, names: list[str]) -> str:
        """Make https://name/ present a certificate of its own naming `names` (and name)."""
        name = normalize_host(name)
        self.host_certificates[name] = [name, *names]
        return name

    def zone(
        self,
        name: str,
        behaviour: str,
        *,
        apex: bool = False,
        ttl: int | None = None,
    ) -> str:
        """Apply a behaviour to every name under name (and name itself if apex).

        The longest matching zone wins; exact names (host(), site()) win
        over any zone. Names matched by no rule are NXDOMAIN.
        """
        name = normalize_host(name)
        self.zones[name] = {**self._rule(behaviour, ttl), "apex": apex}
        return name

    def elsewhere(self, name: str, address: str) -> str:
        """Make `name` and every name under it resolve to `address`, outside fakeweb's
        loopback (an intranet's 10.20.0.5): an answer the crawl must refuse before it
        connects. Nothing of fakeweb's listens there, and a test never connects to it."""
        name = normalize_host(name)
        self.zones[name] = {"kind": "a", "address": address, "ttl": None, "apex": True}
        return name

    def farm(self, name: str, links: int = 30) -> str:
        """A live wildcard farm: every name under `name` resolves, and each request for a
        front page there gets a page linking `links` fresh random subdomains."""
        name = self.zone(name, "ok", apex=True)
        self.farms[name] = links
        return name

    def graph(
        self,
        n_hosts: int,
        roots: list[str] | tuple[str, ...] = ("alpha.test", "beta.test", "gamma.test"),
        links_per_page: int = 4,
        *,
        messy: float = 0.0,
    ) -> list[str]:
        """Add n_hosts sites under roots, linked so all are reachable from names[0].

        names[0] is roots[0]. Each page gets up to links_per_page absolute
        links: first a random spanning tree (each new host is linked from an
        earlier one), then random extra links. A fraction messy of links is
        written in odd but equivalent forms (upper case, trailing dot, port,
        https, scheme-relative). Deterministic for a given seed.
        """
        roots = [normalize_host(r) for r in roots]
        if n_hosts < len(roots) or links_per_page < 1:
            raise ValueError("need n_hosts >= len(roots) and links_per_page >= 1")
        names = self._graph_names(n_hosts, roots)
        links = self._graph_edges(names, links_per_page)
        for name in names:
            hrefs = [self._href(target, messy) for target in links[name]]
            self.site(name, title=f"Page of {name}", links=hrefs)
        return names

    def _graph_names(self, n_hosts: int, roots: list[str]) -> list[str]:
        """roots followed by generated subdomains (some nested) of them."""
        names = list(roots)
        while len(names) < n_hosts:
            # Mostly direct children of a root, sometimes deeper names.
            parent = self.rng.choice(roots if self.rng.random() < 0.7 else names)
            if parent.count(".") >= 5:
                parent = self.rng.choice(roots)
            names.append(f"h{len(names)}.{parent}")
        return names

    def _graph_edges(self, names: list[str], k: int) -> dict[str, list[str]]:
        """Spanning tree from names[0] plus random extra edges, <= k per node."""
        links: dict[str, list[str]] = {name: [] for name in names}
        open_nodes = [names[0]]  # nodes with room for another tree edge
        for child in names[1:]:
            slot = self.rng.randrange(len(open_nodes))
            parent = open_nodes[slot]
            links[parent].append(child)
            if len(links[parent]) >= k:
                open_nodes[slot] = open_nodes[-1]
                open_nodes.pop()
            open_nodes.append(child)
        if len(names) > 1:
            for name in names:
                for _ in range(k - len(links[name])):
                    target = self.rng.choice(names)
                    if target != name and target not in links[name]:
                        links[name].append(target)
        return links

    def _href(self, host: str, messy: float) -> str:
        """A link to host: plain, or in a random odd form with probability messy."""
        if messy and self.rng.random() < messy:
            form = self.rng.choice(MESSY_FORMS)
            return form.format(host=host, upper=host.upper())
        return f"http://{host}/"

    def _ensure_served(self, name: str) -> dict[str, dict]:
        """Pages dict of name; a served name resolves to 127.0.0.1 by default."""
        self.names.setdefault(name, self._rule("ok", None))
        return self.pages.setdefault(name, {})

    @staticmethod
    def _rule(behaviour: str, ttl: int | None) -> dict:
        """DNS rule dict for a behaviour name."""
        try:
            kind, address = BEHAVIOURS[behaviour]
        except KeyError:
            raise ValueError(f"unknown behaviour {behaviour!r}") from None
        return {"kind": kind, "address": address, "ttl": ttl}

    # -- slow mode ----------------------------------------------------------

    def answer_after(self, name: str, seconds: float) -> str:
        """Every HTTP answer of host `name` waits `seconds` (a slow server)."""
        name = normalize_host(name)
        self.timing[name] = {"delay": seconds}
        return name

    def hang(self, name: str, path: str | None = None) -> str:
        """Host `name` resolves, accepts TCP and TLS, reads the request and never answers
        (only a request for `path`, if given: a robots.txt that hangs)."""
        name = normalize_host(name)
        self._ensure_served(name)
        self.timing[name] = {"hang": True} if path is None else {"hang": True, "path": path}
        return name

    def answer_when_told(self, name: str, path: str = "/") -> str:
        """Host `name` reads a request for `path` and answers it only when told
        (FakeWeb.answer_waiting): an answer over a connection made long before."""
        name = normalize_host(name)
        self._ensure_served(name)
        self.timing[name] = {"told": True, "path": path}
        return name

    def trickle(self, name: str, chunk: int = 64, every: float = 0.5) -> str:
        """Host `name` sends its answer's head at once, then its body `chunk` bytes
        every `every` seconds."""
        name = normalize_host(name)
        self.timing[name] = {"trickle": [chunk, every]}
        return name

    def garble(self, name: str, kind: str) -> str:
        """Host `name` answers a request with what no HTTP client can read (a kind of
        tests/fakeweb/garbled.py: bad_status, long_line, endless_status)."""
        name = normalize_host(name)
        self._ensure_served(name)
        self.timing[name] = {"garbled": kind}
        return name

    def slow_dns(self, low: float, high: float) -> None:
        """Every DNS reply waits uniform(low, high) seconds (silent names stay silent)."""
        self.dns_delay = [low, high]

    # -- querying -----------------------------------------------------------

    def match(self, name: str) -> tuple[dict, str]:
        """DNS rule for name and the zone origin to put in a negative SOA."""
        name = normalize_host(name)
        rule = self.names.get(name)
        labels = name.split(".")
        if rule is not None:
            return rule, labels[-1]
        zone = self.zones.get(name)
        if zone is not None and zone["apex"]:
            return zone, name
        for i in range(1, len(labels)):
            suffix = ".".join(labels[i:])
            zone = self.zones.get(suffix)
            if zone is not None:
                return zone, suffix
        return {"kind": "nxdomain", "address": None, "ttl": None}, labels[-1]

    def address_of(self, name: str) -> str | None:
        """Address name resolves to, or None if it does not resolve."""
        rule, _ = self.match(name)
        if rule["kind"] == "cname":  # one hop: a CNAME of a CNAME does not resolve here
            rule, _ = self.match(rule["target"])
        return rule["address"] if rule["kind"] == "a" else None

    def successors(self, host: str) -> list[str]:
        """Hosts a crawler learns of by fetching http://host/ successfully.

        Only hosts resolving to the page server count; a redirect yields its
        target, a 2xx page its links' hosts, anything else nothing.
        """
        host = normalize_host(host)
        if self.address_of(host) != ADDRESSES["ok"]:
            return []
        page = self.pages.get(host, {}).get("/")
        if page is None:
            return []
        if "location" in page:
            target = link_host(page["location"], host)
            return [target] if target else []
        if not 200 <= page["status"] < 300:
            return []
        hosts = (link_host(href, host) for href in page["links"])
        return [h for h in hosts if h]

    def reachable(self, start: str, unexplored: Collection[str] = ()) -> set[str]:
        """Every hostname discoverable from start by following successors(), except
        the links of the hosts in unexplored (found, but their pages never read)."""
        start = normalize_host(start)
        seen = {start}
        queue = deque([start])
        while queue:
            name = queue.popleft()
            if name in unexplored:
                continue
            for target in self.successors(name):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return seen

    # -- serialisation ------------------------------------------------------

    def to_dict(self) -> dict:
        """JSON-able representation."""
        keys = ("seed", "ttl", "negative_ttl", "delay", "names", "zones", "pages", "robots")
        keys += ("farms", "timing", "dns_delay", "certificate_names", "host_certificates")
        return {"version": 1, **{key: getattr(self, key) for key in keys}}

    @classmethod
    def from_dict(cls, data: dict) -> World:
        """Inverse of to_dict()."""
        world = cls(
            data["seed"],
            ttl=data["ttl"],
            negative_ttl=data["negative_ttl"],
            delay=data.get("delay", 0.0),
        )
        for key in ("names", "zones", "pages", "robots"):
            setattr(world, key, data[key])
        world.farms = data.get("farms", {})
        world.timing = data.get("timing", {})
        world.dns_delay = data.get("dns_delay")
        world.certificate_names = data.get("certificate_names", [])
        world.host_certificates = data.get("host_certificates", {})
        return world

    def to_json(self) -> str:
        """Serialise to a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> World:
        """Parse a world written by to_json()."""
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> Path:
        """Write to_json() to path."""
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> World:
        """Read a world written by save()."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))
