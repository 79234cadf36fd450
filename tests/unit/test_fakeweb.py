"""fakeweb: the loopback DNS + HTTP(S) world the crawler tests run against."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys

import dns.exception
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from tests.fakeweb import ADDRESSES, FakeWeb, World, link_host
from tests.fakeweb.handle import PROJECT_ROOT, read_ready_line
from tests.fakeweb.hostile import link_lines

TIMEOUT = 3.0  # bound for every answer we expect to arrive
SILENCE = 0.3  # how long to wait for an answer we expect never to come

LINKS = ["http://b.test/", "/about", "http://SOCIAL.test:8080/x", "https://c.test./"]


def build_world() -> World:
    """One world exercising every rule kind."""
    w = World(seed=1, ttl=120, negative_ttl=300)
    w.site("a.test", title="A & co", links=LINKS, robots="allow")
    w.site("b.test", links=["http://a.test/"])
    w.site("short.test", ttl=7)
    w.site("broken.test", title="Oops", links=["http://hidden.test/"], status=500)
    w.redirect("r.test", "http://social.test/")
    w.redirect("r2.test", "https://a.test/", status=302)
    w.zone("trap.test", "nxdomain")
    w.site("ok.trap.test")
    w.zone("wild.test", "a")
    for behaviour in ("refused", "reset", "tls_broken", "blackhole"):
        w.host(f"{behaviour}.test", behaviour=behaviour)
    for behaviour in ("servfail", "refused_dns", "noanswer", "silent"):
        w.host(f"{behaviour}.test", behaviour=behaviour)
    w.site("owncert.test")
    w.certify_host("owncert.test", ["x1.test", "x2.test"])
    link_lines(50)(w, "flood.test", "fl")
    return w


@pytest.fixture(scope="module")
def web():
    """One fakeweb for the whole module (starting one costs ~0.2 s)."""
    with FakeWeb(build_world()) as running:
        yield running


def ask(web: FakeWeb, name: str, rdtype: str = "A", *, tcp: bool = False, timeout=TIMEOUT):
    """Query the fakeweb DNS server directly."""
    query = dns.message.make_query(name, rdtype)
    send = dns.query.tcp if tcp else dns.query.udp
    return send(query, "127.0.0.1", port=web.dns_port, timeout=timeout)


def addresses(response) -> list[str]:
    """A-record addresses in a response."""
    return [rd.address for rrset in response.answer for rd in rrset]


def get(web, host, path="/", *, scheme="http", address="127.0.0.1"):
    """GET path from address with a Host header; returns (status, headers, body)."""
    if scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(
            address, web.https_port, timeout=TIMEOUT, context=context
        )
    else:
        conn = http.client.HTTPConnection(address, web.http_port, timeout=TIMEOUT)
    try:
        conn.request("GET", path, headers={"Host": f"{host}:{web.http_port}"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


# -- DNS ----------------------------------------------------------------------


def test_a_record_with_world_and_per_host_ttl(web):
    """Sites resolve to the page server with the configured TTLs."""
    response = ask(web, "a.test")
    assert addresses(response) == ["127.0.0.1"]
    assert response.answer[0].ttl == 120
    assert ask(web, "short.test").answer[0].ttl == 7


def test_behaviour_hosts_resolve_to_their_addresses(web):
    """Connection behaviours are told apart by the loopback address."""
    for behaviour in ("refused", "reset", "tls_broken", "blackhole"):
        assert addresses(ask(web, f"{behaviour}.test")) == [ADDRESSES[behaviour]]


def test_names_are_case_insensitive(web):
    """Upper-case queries get the same answer, with the name as asked."""
    response = ask(web, "A.TeSt")
    assert addresses(response) == ["127.0.0.1"]
    assert response.answer[0].name.to_text() == "A.TeSt."


def test_nxdomain_carries_soa_for_negative_caching(web):
    """Unknown names are NXDOMAIN with an SOA whose minimum is negative_ttl."""
    response = ask(web, "nowhere.test")
    assert response.rcode() == dns.rcode.NXDOMAIN
    soa = response.authority[0]
    assert soa.rdtype == dns.rdatatype.SOA
    assert soa[0].minimum == 300
    assert soa.ttl == 300


def test_zone_rules_and_exact_overrides(web):
    """Zones cover names under them (not the apex); exact names win."""
    trapped = ask(web, "deep.x.trap.test")
    assert trapped.rcode() == dns.rcode.NXDOMAIN
    assert trapped.authority[0].name.to_text() == "trap.test."
    assert addresses(ask(web, "ok.trap.test")) == ["127.0.0.1"]
    assert addresses(ask(web, "anything.wild.test")) == ["127.0.0.1"]
    assert addresses(ask(web, "a.b.wild.test")) == ["127.0.0.1"]
    assert ask(web, "wild.test").rcode() == dns.rcode.NXDOMAIN


def test_error_rcodes_and_noanswer(web):
    """SERVFAIL, REFUSED and NOERROR-without-answer come out as configured."""
    assert ask(web, "servfail.test").rcode() == dns.rcode.SERVFAIL
    assert ask(web, "refused_dns.test").rcode() == dns.rcode.REFUSED
    for name, rdtype in (("noanswer.test", "A"), ("a.test", "AAAA")):
        response = ask(web, name, rdtype)
        assert response.rcode() == dns.rcode.NOERROR
        assert response.answer == []
        assert response.authority[0].rdtype == dns.rdatatype.SOA


def test_silent_name_times_out(web):
    """A silent name gets no reply at all, but the query is logged."""
    with pytest.raises(dns.exception.Timeout):
        ask(web, "silent.test", timeout=SILENCE)
    assert web.dns_queries("silent.test")[-1]["answer"] == "silent"


def test_dns_over_tcp(web):
    """The same answers are available over TCP."""
    assert addresses(ask(web, "b.test", tcp=True)) == ["127.0.0.1"]


def test_set_dns_silent_toggles_the_whole_server(web):
    """set_dns_silent(True) drops every query until switched back."""
    web.set_dns_silent(True)
    try:
        with pytest.raises(dns.exception.Timeout):
            ask(web, "a.test", timeout=SILENCE)
        assert web.dns_queries("a.test")[-1]["switched_off"] is True
    finally:
        web.set_dns_silent(False)
    assert addresses(ask(web, "a.test")) == ["127.0.0.1"]


def test_set_dns_nxdomain_denies_every_name(web):
    """set_dns_nxdomain(True): every name "does not exist", as a lying resolver says."""
    web.set_dns_nxdomain(True)
    try:
        assert ask(web, "a.test").rcode() == dns.rcode.NXDOMAIN
        assert web.dns_queries("a.test")[-1]["switched_off"] is True
    finally:
        web.set_dns_nxdomain(False)
    assert addresses(ask(web, "a.test")) == ["127.0.0.1"]


# -- HTTP ---------------------------------------------------------------------


def test_page_per_host_header(web):
    """The Host header picks the page: its title and links, verbatim."""
    status, _, body = get(web, "a.test")
    assert status == 200
    assert "<title>A &amp; co</title>" in body
    for href in LINKS:
        assert f'href="{href}"' in body
    status, _, body = get(web, "B.TEST.")
    assert status == 200
    assert "<title>b.test</title>" in body


def test_unknown_host_gets_plain_ok_page(web):
    """Wildcard-zone and other unknown hosts get a 200 page without links."""
    status, _, body = get(web, "x.wild.test")
    assert status == 200
    assert "href" not in body


def test_status_paths_and_robots(web):
    """Per-host status, 404 for unknown paths, robots.txt per host."""
    status, _, body = get(web, "broken.test")
    assert status == 500
    assert "http://hidden.test/" in body
    assert get(web, "a.test", "/nope")[0] == 404
    status, _, body = get(web, "a.test", "/robots.txt")
    assert (status, body) == (200, "User-agent: *\nDisallow:\n")
    assert get(web, "b.test", "/robots.txt")[0] == 404


def test_redirects(web):
    """Redirect hosts answer 301/302 with the configured Location."""
    status, headers, _ = get(web, "r.test")
    assert (status, headers["Location"]) == (301, "http://social.test/")
    status, headers, _ = get(web, "r2.test")
    assert (status, headers["Location"]) == (302, "https://a.test/")


def test_https_serves_the_same_pages(web):
    """HTTPS works with verification off and serves the world's pages."""
    status, _, body = get(web, "a.test", scheme="https")
    assert status == 200
    assert "<title>A &amp; co</title>" in body
    assert web.fetches("a.test", scheme="https")


def certificate_names(web, server_name: str) -> list[str]:
    """The DNS names of the certificate the https port presents for `server_name` (SNI)."""
    from cryptography import x509

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", web.https_port), timeout=TIMEOUT)
    with context.wrap_socket(raw, server_hostname=server_name) as tls:
        der = tls.getpeercert(binary_form=True)
    names = x509.load_der_x509_certificate(der).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    return names.value.get_values_for_type(x509.DNSName)


def test_a_host_may_present_a_certificate_of_its_own(web):
    assert certificate_names(web, "owncert.test") == ["owncert.test", "x1.test", "x2.test"]
    assert certificate_names(web, "a.test") == ["*.test"]


def test_a_header_flood_is_built_in_the_fakeweb(web):
    conn = http.client.HTTPConnection("127.0.0.1", web.http_port, timeout=TIMEOUT)
    try:
        conn.request("GET", "/", headers={"Host": "flood.test"})
        links = conn.getresponse().msg.get_all("Link")
    finally:
        conn.close()
    assert links == [f"<https://fl{i}.test/>" for i in range(50)]


def test_refused_address_refuses(web):
    """Nothing listens on the refused address, on either port."""
    for port in (web.http_port, web.https_port):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ADDRESSES["refused"], port), timeout=TIMEOUT)


def test_reset_address_drops_the_connection(web):
    """The reset address accepts, then the connection dies without an answer."""
    for port in (web.http_port, web.https_port):
        assert reset_or_closed(ADDRESSES["reset"], port)
    assert len(web.connections("reset")) >= 2


def reset_or_closed(address: str, port: int) -> bool:
    """Whether a request to address:port ends in a reset or EOF, never data."""
    # The RST may arrive while connect() or send() is still running, so
    # every step may be the one that fails.
    try:
        with socket.create_connection((address, port), timeout=TIMEOUT) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: reset.test\r\n\r\n")
            return s.recv(100) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_tls_broken_address_fails_handshake(web):
    """The TLS-broken address answers a ClientHello with an alert."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    address = (ADDRESSES["tls_broken"], web.https_port)
    with (
        socket.create_connection(address, timeout=TIMEOUT) as raw,
        pytest.raises(ssl.SSLError),
    ):
        context.wrap_socket(raw, server_hostname="tls_broken.test")


def test_blackhole_address_never_answers(web):
    """The blackhole address accepts and stays silent."""
    address = (ADDRESSES["blackhole"], web.http_port)
    with socket.create_connection(address, timeout=SILENCE) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: blackhole.test\r\n\r\n")
        with pytest.raises(TimeoutError):
            s.recv(100)


def test_request_log_counts_fetches(web):
    """Every request is logged with host (normalised), path and scheme."""
    for _ in range(3):
        get(web, "Short.Test")
    get(web, "short.test", "/robots.txt")
    assert len(web.fetches("short.test")) == 3
    assert len(web.fetches("short.test", path=None)) == 4
    assert web.fetch_counts()["short.test"] == 3
    record = web.fetches("short.test")[0]
    assert (record["address"], record["scheme"], record["status"]) == (
        "127.0.0.1",
        "http",
        200,
    )


# -- world and process --------------------------------------------------------


def test_graph_reaches_every_host_and_scales():
    """A 2,000-host graph: every host reachable from names[0] (bench/crawl.py builds it)."""
    world = World(seed=7)
    names = world.graph(2000, links_per_page=4, messy=0.2)
    assert len(set(names)) == 2000
    assert names[0] == "alpha.test"
    assert world.reachable(names[0]) >= set(names)
    assert all(len(world.pages[n]["/"]["links"]) <= 4 for n in names)
    copy = World.from_json(world.to_json())
    assert copy.reachable(names[0]) == world.reachable(names[0])


def test_link_host_normalises():
    """Link targets are compared as lower-case hosts without port or dot."""
    assert link_host("http://SOCIAL.test:8080/x", "a.test") == "social.test"
    assert link_host("https://c.test./", "a.test") == "c.test"
    assert link_host("/about", "a.test") == "a.test"
    assert link_host("mailto:x@y.test", "a.test") is None


def test_factory_serves_a_graph(fakeweb_factory):
    """The pytest fixture starts a fakeweb; graph pages link their successors."""
    world = World(seed=3)
    names = world.graph(50, roots=["alpha.test"], links_per_page=3)
    web = fakeweb_factory(world)
    status, _, body = get(web, names[0])
    assert status == 200
    for target in world.successors(names[0]):
        assert f"http://{target}/" in body
    assert web.url_template("https") == f"https://{{hostname}}:{web.https_port}/"
    assert web.scrapy_settings()["DNS_NAMESERVERS"] == web.nameservers


def test_cli_prints_ready_line_and_writes_ready_file(tmp_path):
    """python -m tests.fakeweb announces its ports once serving, then stops on EOF."""
    ready_file = tmp_path / "ready.json"
    command = [sys.executable, "-m", "tests.fakeweb", "--graph", "5"]
    command += ["--ready-file", str(ready_file), "--exit-on-stdin-eof"]
    proc = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        info = read_ready_line(proc, timeout=15)
        assert info["fakeweb"] == "ready"
        assert json.loads(ready_file.read_text()) == info
        with socket.create_connection(("127.0.0.1", info["http_port"]), TIMEOUT):
            pass
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=5) == 0
        proc.stdout.close()
