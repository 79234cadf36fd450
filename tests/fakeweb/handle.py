"""Parent-side handle: start a fakeweb subprocess, talk to it, read its logs."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from .eventlog import DNS_LOG, HTTP_LOG, read_events
from .world import ADDRESSES, World, normalize_host

# The directory holding the top-level ``tests`` package, so that
# ``python -m tests.fakeweb`` works whatever the caller's cwd is.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class FakeWebError(RuntimeError):
    """The fakeweb subprocess failed to start or to obey a command."""


def read_ready_line(proc: subprocess.Popen, timeout: float) -> dict:
    """The JSON ready line a fakeweb process prints, waiting at most timeout."""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    buffer = b""
    while b"\n" not in buffer:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FakeWebError(f"fakeweb not ready after {timeout}s")
        readable, _, _ = select.select([fd], [], [], remaining)
        if readable:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise FakeWebError("fakeweb exited before it was ready")
            buffer += chunk
    return json.loads(buffer.split(b"\n", 1)[0])


class FakeWeb:
    """A running fakeweb subprocess serving one World; use as a context manager."""

    def __init__(
        self,
        world: World,
        *,
        workdir: str | Path | None = None,
        dns_port: int = 0,
        http_port: int = 0,
        https_port: int = 0,
        startup_timeout: float = 15.0,
        stop_timeout: float = 5.0,
    ):
        """Configure (not start); ports 0 mean any free port.

        workdir receives world.json, the logs (http.jsonl, dns.jsonl),
        stderr.log and the certificate; by default a temporary directory
        that lives as long as this object.
        """
        self.world = world
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fakeweb-")
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self._ports = {"dns": dns_port, "http": http_port, "https": https_port}
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.info: dict = {}
        self._proc: subprocess.Popen | None = None

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> FakeWeb:
        """Start the subprocess and wait until all its servers listen."""
        if self._proc is not None:
            raise FakeWebError("already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        world_file = self.world.save(self.workdir / "world.json")
        command = [sys.executable, "-m", "tests.fakeweb", "--world", str(world_file)]
        command += ["--workdir", str(self.workdir), "--exit-on-stdin-eof"]
        for name, port in self._ports.items():
            command += [f"--{name}-port", str(port)]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")])
        )
        with open(self.workdir / "stderr.log", "ab") as stderr:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # closing it tells the child to exit
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=PROJECT_ROOT,
                env=env,
            )
        try:
            self.info = self._read_ready_line()
        except BaseException:
            self.stop()
            raise
        return self

    def _read_ready_line(self) -> dict:
        """Wait (bounded) for the child's JSON ready line on stdout."""
        try:
            return read_ready_line(self._proc, self.startup_timeout)
        except FakeWebError as exc:
            raise FakeWebError(f"{exc}\n{self.stderr()}") from None

    def stop(self) -> None:
        """Stop the subprocess: EOF on stdin, then SIGTERM, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for escalate in (proc.stdin.close, proc.terminate, proc.kill):
            try:
                escalate()
                proc.wait(timeout=self.stop_timeout)
                break
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                continue
        proc.stdout.close()

    def __enter__(self) -> FakeWeb:
        """Start on entering the with-block."""
        return self.start()

    def __exit__(self, *exc_info) -> None:
        """Stop on leaving the with-block."""
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the subprocess was started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def stderr(self) -> str:
        """What the subprocess wrote to stderr so far."""
        path = self.workdir / "stderr.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- where things are ---------------------------------------------------

    @property
    def pid(self) -> int:
        """Process id of the fakeweb subprocess."""
        return self.info["pid"]

    @property
    def dns_port(self) -> int:
        """UDP and TCP port of the DNS server on 127.0.0.1."""
        return self.info["dns_port"]

    @property
    def http_port(self) -> int:
        """Port P of the HTTP server (and of every behaviour address)."""
        return self.info["http_port"]

    @property
    def https_port(self) -> int:
        """Port PS of the HTTPS server (and of every behaviour address)."""
        return self.info["https_port"]

    @property
    def control_port(self) -> int:
        """Port of the line-based control server on 127.0.0.1."""
        return self.info["control_port"]

    @property
    def nameservers(self) -> str:
        """DNS_NAMESERVERS value: "127.0.0.1:PORT"."""
        return self.info["nameservers"]

    @staticmethod
    def address(behaviour: str) -> str:
        """Loopback address of a connection behaviour ("ok", "reset", ...)."""
        return ADDRESSES[behaviour]

    def url_template(self, scheme: str = "http") -> str:
        """HOST_URL_TEMPLATE value, e.g. "http://{hostname}:P/"."""
        return self.info[f"{scheme}_template"]

    def scrapy_settings(self, scheme: str = "http") -> dict[str, str]:
        """Settings pointing the crawler at this fakeweb."""
        return {
            "DNS_NAMESERVERS": self.nameservers,
            "HOST_URL_TEMPLATE": self.url_template(scheme),
            "HTTP_FALLBACK_TEMPLATE": self.url_template("http"),
        }

    # -- control ------------------------------------------------------------

    def command(self, line: str, timeout: float = 5.0) -> None:
        """Send a control command and wait until the server confirms it."""
        address = ("127.0.0.1", self.control_port)
        with socket.create_connection(address, timeout=timeout) as sock:
            sock.sendall(line.encode("ascii") + b"\n")
            reply = sock.makefile("rb").readline().decode().strip()
        if reply != "ok":
            raise FakeWebError(f"command {line!r}: {reply or 'no reply'}")

    def set_dns_silent(self, silent: bool) -> None:
        """Make the DNS server drop every query (True) or answer again (False)."""
        self.command("dns-silent on" if silent else "dns-silent off")

    def set_dns_nxdomain(self, lying: bool) -> None:
        """Make the DNS server answer NXDOMAIN to every name (True), as a broken or captive
        resolver does, or answer from the world again (False)."""
        self.command("dns-nxdomain on" if lying else "dns-nxdomain off")

    def set_network_down(self, down: bool) -> None:
        """Reset every HTTP(S) connection (True), as if our network were gone, or not."""
        self.command("network-down on" if down else "network-down off")

    def answer_waiting(self) -> None:
        """Answer the requests of hosts that answer only when told (World.answer_when_told)."""
        self.command("answer-waiting")

    # -- logs ---------------------------------------------------------------

    def requests(self) -> list[dict]:
        """Every HTTP(S) request record so far, oldest first.

        Keys: t, scheme, address, port, method, host (lower case, no port,
        no trailing dot), raw_host, path (no query), target, status,
        user_agent.
        """
        events = read_events(self.workdir / HTTP_LOG)
        return [e for e in events if e["event"] == "request"]

    def fetches(
        self,
        host: str | None = None,
        path: str | None = "/",
        scheme: str | None = None,
        method: str | None = "GET",
    ) -> list[dict]:
        """Request records, filtered by host, path (None = any), scheme and method.

        GET by default: the crawler fetches with GET; its self-check asks with HEAD.
        """
        host = normalize_host(host) if host is not None else None
        return [
            r
            for r in self.requests()
            if (host is None or r["host"] == host)
            and (path is None or r["path"] == path)
            and (scheme is None or r["scheme"] == scheme)
            and (method is None or r["method"] == method)
        ]

    def fetch_counts(
        self, path: str | None = "/", scheme: str | None = None, method: str | None = "GET"
    ) -> Counter:
        """Counter host -> number of requests (same filters as fetches())."""
        fetched = self.fetches(path=path, scheme=scheme, method=method)
        return Counter(r["host"] for r in fetched)

    def connections(self, behaviour: str | None = None) -> list[dict]:
        """Connections accepted by the reset/tls_broken/blackhole endpoints."""
        events = read_events(self.workdir / HTTP_LOG)
        return [
            e
            for e in events
            if e["event"] == "connection" and (behaviour is None or e["behaviour"] == behaviour)
        ]

    def dns_queries(self, name: str | None = None, qtype: str | None = None) -> list[dict]:
        """DNS query records, filtered by name and type (e.g. "A").

        Keys: t, name (lower case), qname, type, answer (a, nxdomain,
        servfail, refused, noanswer, silent), address, proto (udp/tcp),
        switched_off (answered by a switch: set_dns_silent or set_dns_nxdomain).
        """
        name = normalize_host(name) if name is not None else None
        return [
            q
            for q in read_events(self.workdir / DNS_LOG)
            if (name is None or q["name"] == name) and (qtype is None or q["type"] == qtype)
        ]
