"""The fakeweb process: binds every server on loopback and serves until told to stop.

Run as ``python -m tests.fakeweb --world FILE``; prints one JSON line with the
ports once everything listens.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import errno
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import sys
import tempfile
from pathlib import Path

from .dnsserver import DnsResponder, DnsUdpProtocol, tcp_handler
from .eventlog import DNS_LOG, HTTP_LOG, EventLog
from .httpserver import (
    NETWORK,
    BlackholeProtocol,
    HttpProtocol,
    ResetProtocol,
    Responses,
    TlsBrokenProtocol,
    answer_waiting,
)
from .world import ADDRESSES, World

LOOPBACK = "127.0.0.1"
BIND_ATTEMPTS = 200
BACKLOG = 1024


class PortBusy(Exception):
    """A fixed port asked for on the command line is taken."""


def tcp_socket(address: str, port: int, *, reuse: bool = True) -> socket.socket:
    """A TCP socket bound (not yet listening) to address:port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    return sock


# Addresses whose socket on some port is bound but never listens (refused there).
NEVER_LISTENING_ON_SOME_PORT = ("refused", "http_only_refused")


def bind_on_all(port: int) -> dict[str, socket.socket]:
    """Bind port on every behaviour address; port 0 picks one free on all.

    The "refused" address gets a socket that is bound but never listens: the
    kernel then refuses connections there, and nobody else can take the port.
    """
    for _ in range(BIND_ATTEMPTS if port == 0 else 1):
        sockets: dict[str, socket.socket] = {}
        try:
            sockets["ok"] = tcp_socket(LOOPBACK, port)
            chosen = sockets["ok"].getsockname()[1]
            for behaviour, address in ADDRESSES.items():
                if behaviour != "ok":
                    # No SO_REUSEADDR on the refused one: with it, another
                    # SO_REUSEADDR socket could share the port and listen.
                    reuse = behaviour not in NEVER_LISTENING_ON_SOME_PORT
                    sockets[behaviour] = tcp_socket(address, chosen, reuse=reuse)
            return sockets
        except OSError as exc:
            for sock in sockets.values():
                sock.close()
            if exc.errno != errno.EADDRINUSE or port:
                raise PortBusy(f"port {port}: {exc}") from exc
    raise PortBusy("no port free on all loopback behaviour addresses")


def bind_dns(port: int) -> tuple[socket.socket, socket.socket]:
    """UDP and TCP sockets on the same port of 127.0.0.1."""
    for _ in range(BIND_ATTEMPTS if port == 0 else 1):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind((LOOPBACK, port))
            return udp, tcp_socket(LOOPBACK, udp.getsockname()[1])
        except OSError as exc:
            udp.close()
            if exc.errno != errno.EADDRINUSE or port:
                raise PortBusy(f"DNS port {port}: {exc}") from exc
    raise PortBusy("no DNS port free for both UDP and TCP")


def make_tls_context(
    workdir: Path, names: list[str] = (), hosts: dict[str, list[str]] | None = None
) -> ssl.SSLContext:
    """Server context with a fresh self-signed certificate for *.test and `names`; a host
    of `hosts` presents one of its own (by SNI), naming its list."""
    context = certificate_context(workdir, "cert", ["*.test", *names])
    own = {
        host: certificate_context(workdir, f"cert-{host}", host_names)
        for host, host_names in (hosts or {}).items()
    }
    if own:

        def by_server_name(ssl_object, server_name, _context) -> None:
            if server_name in own:
                ssl_object.context = own[server_name]

        context.sni_callback = by_server_name
    return context


def certificate_context(workdir: Path, stem: str, names: list[str]) -> ssl.SSLContext:
    """A server context for a fresh self-signed certificate naming `names` (files `stem`.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    # EC keys are generated in microseconds, unlike RSA.
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fakeweb.test")])
    now = datetime.datetime.now(datetime.UTC)
    alt = [x509.DNSName(name) for name in names]
    alt.append(x509.IPAddress(ipaddress.ip_address(LOOPBACK)))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = workdir / f"{stem}.pem", workdir / f"{stem}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context


def control_handler(responder: DnsResponder, stop: asyncio.Event):
    """asyncio.start_server callback for the line-based control port.

    Commands: "ping", "dns-silent on|off", "dns-nxdomain on|off", "network-down on|off",
    "answer-waiting" (World.answer_when_told), "stop"; each is
    answered "ok" once it has taken effect, or "error ...".
    """

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        """Execute commands until the client closes."""
        while line := await reader.readline():
            command = line.decode("ascii", "replace").split()
            reply = "ok"
            if command == ["dns-silent", "on"]:
                responder.silent = True
            elif command == ["dns-silent", "off"]:
                responder.silent = False
            elif command in (["dns-nxdomain", "on"], ["dns-nxdomain", "off"]):
                responder.nxdomain = command[1] == "on"
            elif command in (["network-down", "on"], ["network-down", "off"]):
                NETWORK.down = command[1] == "on"
            elif command == ["answer-waiting"]:
                answer_waiting()
            elif command == ["stop"]:
                stop.set()
            elif command != ["ping"]:
                reply = f"error unknown command {command!r}"
            writer.write(reply.encode() + b"\n")
            await writer.drain()
        writer.close()

    return handle


class FakeWebServer:
    """All servers of one fakeweb instance inside one asyncio loop."""

    def __init__(self, world: World, workdir: Path, args: argparse.Namespace):
        """Prepare to serve world; logs and certificate go to workdir."""
        self.world = world
        self.workdir = workdir
        self.args = args
        self.http_log = EventLog(workdir / HTTP_LOG)
        self.dns_log = EventLog(workdir / DNS_LOG)
        self.responder = DnsResponder(world, self.dns_log)
        self.stop = asyncio.Event()
        self.held: list[socket.socket] = []  # refused-address reservations

    async def run(self) -> None:
        """Bind, announce readiness, serve until stop is set."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        if self.args.exit_on_stdin_eof:
            self._watch_stdin(loop)
        info = await self._start_servers(loop)
        self._announce(info)
        await self.stop.wait()
        self.http_log.close()
        self.dns_log.close()

    async def _start_servers(self, loop) -> dict:
        """Start every listener and return the ports chosen."""
        udp, dns_tcp = bind_dns(self.args.dns_port)
        await loop.create_datagram_endpoint(lambda: DnsUdpProtocol(self.responder), sock=udp)
        await asyncio.start_server(tcp_handler(self.responder), sock=dns_tcp)
        control = await asyncio.start_server(
            control_handler(self.responder, self.stop), LOOPBACK, self.args.control_port
        )
        tls = make_tls_context(
            self.workdir, self.world.certificate_names, self.world.host_certificates
        )
        bound = {
            scheme: bind_on_all(port)
            for scheme, port in (("http", self.args.http_port), ("https", self.args.https_port))
        }
        ports = {scheme: sockets["ok"].getsockname()[1] for scheme, sockets in bound.items()}
        # Redirect locations may name "{http_port}"/"{https_port}": known only now.
        responses = Responses(self.world, ports)
        for scheme, sockets in bound.items():
            self.held.append(sockets.pop("refused"))
            if scheme == "https":  # plain HTTP only: https is refused there
                self.held.append(sockets.pop("http_only_refused"))
            await self._listen_all(loop, scheme, sockets, responses, tls)
        return {
            "dns_port": udp.getsockname()[1],
            "http_port": ports["http"],
            "https_port": ports["https"],
            "control_port": control.sockets[0].getsockname()[1],
        }

    async def _listen_all(self, loop, scheme, sockets, responses, tls) -> None:
        """Serve pages on the ok socket and a misbehaviour on each other one."""
        context = tls if scheme == "https" else None
        log = self.http_log
        serving = ["ok", "internal"]
        if scheme == "http":
            serving += ["http_only", "http_only_refused"]
        for behaviour in serving:
            await loop.create_server(
                lambda: HttpProtocol(responses, scheme, log),
                sock=sockets.pop(behaviour),
                ssl=context,
                backlog=BACKLOG,
            )
        protocols = {
            "reset": ResetProtocol,
            "tls_broken": TlsBrokenProtocol,
            "blackhole": BlackholeProtocol,
            "http_only": TlsBrokenProtocol,  # its https port
        }
        for behaviour, sock in sockets.items():
            protocol = protocols[behaviour]
            await loop.create_server(
                lambda protocol=protocol: protocol(log, scheme), sock=sock, backlog=BACKLOG
            )

    def _announce(self, info: dict) -> None:
        """Print the ready line (and write the ready file if asked)."""
        info = {
            "fakeweb": "ready",
            "pid": os.getpid(),
            **info,
            "nameservers": f"{LOOPBACK}:{info['dns_port']}",
            "http_template": f"http://{{hostname}}:{info['http_port']}/",
            "https_template": f"https://{{hostname}}:{info['https_port']}/",
            "workdir": str(self.workdir),
            "addresses": ADDRESSES,
        }
        line = json.dumps(info)
        if self.args.ready_file:
            tmp = Path(self.args.ready_file + ".tmp")
            tmp.write_text(line + "\n", encoding="utf-8")
            os.replace(tmp, self.args.ready_file)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def _watch_stdin(self, loop) -> None:
        """Stop when stdin reaches EOF, i.e. when the parent goes away."""
        fd = sys.stdin.fileno()

        def readable() -> None:
            """Drain stdin; EOF (or an error) means stop."""
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                self.stop.set()

        try:
            loop.add_reader(fd, readable)
        except PermissionError:
            # A regular file or /dev/null cannot be polled and has no parent
            # behind it to watch.
            print("fakeweb: stdin is not a pipe; ignoring --exit-on-stdin-eof", file=sys.stderr)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line of python -m tests.fakeweb."""
    parser = argparse.ArgumentParser(prog="python -m tests.fakeweb", description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--world", help="world JSON file written by World.save()")
    source.add_argument("--graph", type=int, metavar="N", help="serve World(seed).graph(N) instead")
    parser.add_argument("--seed", type=int, default=1, help="seed for --graph")
    parser.add_argument("--workdir", help="logs/cert directory (default: temporary)")
    for name in ("dns", "http", "https", "control"):
        parser.add_argument(f"--{name}-port", type=int, default=0, help="0 = any free")
    parser.add_argument("--ready-file", help="also write the ready line to this file")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when stdin closes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point: serve until SIGTERM/SIGINT, stdin EOF or a stop command."""
    args = parse_args(argv)
    if args.world:
        world = World.load(args.world)
    else:
        world = World(args.seed)
        world.graph(args.graph)
    own_dir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="fakeweb-") if own_dir else args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(FakeWebServer(world, workdir, args).run())
    except PortBusy as exc:
        print(f"fakeweb: {exc}", file=sys.stderr)
        return 2
    finally:
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
