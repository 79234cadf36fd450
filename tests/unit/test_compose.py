"""The container files: docker-compose.yml, Dockerfile, .dockerignore, .env.example.

Structure checks that need no Docker engine; plus `docker-compose config`, which
needs no engine either (.ci/run installs Debian's docker-compose, and there
HOSTCRAWL_REQUIRE_COMPOSE=1 makes its absence a failure, not a skip).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from crawler.core import config

config_module = config  # the fixture's inner function is named config

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / ".env.example"

SERVICES = ["db", "migrate", "web", "crawler"]
APP_SERVICES = ["migrate", "web", "crawler"]
# What the processes need in the app dir (WORKDIR), besides the installed package.
APP_DIR = ["crawler/", "webpanel/", "migrations/", "alembic.ini", "scrapy.cfg", "gunicorn.conf.py"]

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, $VAR
INTERPOLATION = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?[^}]*\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
ENV_LINE = re.compile(r"^(?P<comment>#\s*)?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$", re.M)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def command_words(command: str | list[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else [str(w) for w in command]


def healthcheck_test(service: dict) -> str:
    """The healthcheck command as one string (without CMD / CMD-SHELL)."""
    test = service.get("healthcheck", {}).get("test")
    assert test, "no healthcheck"
    if isinstance(test, str):
        return test
    assert test[0] in ("CMD", "CMD-SHELL"), test
    return " ".join(str(word) for word in test[1:])


def depends_on(service: dict) -> dict[str, str]:
    """{dependency: condition}; the short (list) form means service_started."""
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def seconds(duration: str | int) -> float:
    """A compose duration ("90s", "1m30s", "500ms") in seconds."""
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    if isinstance(duration, int | float):
        return float(duration)
    parts = re.findall(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def strings(node):
    """Every string value in the parsed compose file."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def required_variables(compose: dict) -> set[str]:
    """Variables interpolated without a default (${VAR}, ${VAR:?...}, $VAR)."""
    names = set()
    for value in strings(compose):
        for match in INTERPOLATION.finditer(value.replace("$$", "")):
            op = match["op"]
            if match["bare"] or op is None or "?" in op:
                names.add(match["bare"] or match["braced"])
    return names


def passthrough_variables(compose: dict) -> set[str]:
    """Environment entries without a value: taken from .env when set there."""
    names = set()
    for service in compose["services"].values():
        env = service.get("environment") or {}
        if isinstance(env, dict):
            names |= {name for name, value in env.items() if value is None}
        else:
            names |= {entry for entry in env if "=" not in entry}
    return names


def all_variables(compose: dict) -> set[str]:
    names = passthrough_variables(compose)
    for value in strings(compose):
        for match in INTERPOLATION.finditer(value.replace("$$", "")):
            names.add(match["bare"] or match["braced"])
    return names


def env_example() -> dict[str, tuple[bool, str]]:
    """{name: (commented out, value)} of the VAR=value lines of .env.example."""
    return {
        m["name"]: (m["comment"] is not None, m["value"])
        for m in ENV_LINE.finditer(ENV_EXAMPLE.read_text())
    }


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


# -- services ------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVICES)
def test_service_exists(services, name):
    assert name in services


def test_db_is_postgres_with_a_tcp_readiness_check(services):
    db = services["db"]
    assert str(db["image"]).startswith("postgres:")
    assert "pg_isready -h 127.0.0.1" in healthcheck_test(db)


def test_db_keeps_its_data_in_a_named_volume(compose, services):
    mounts = [str(m).split(":")[:2] for m in services["db"].get("volumes", [])]
    named = {source for source, target in mounts if target.startswith("/var/lib/postgresql")}
    assert named & set(compose.get("volumes") or {}), mounts


def test_migrate_runs_the_schema_upgrade_once(services):
    assert command_words(services["migrate"]["command"]) == ["hostcrawl", "db", "upgrade"]


@pytest.mark.parametrize(
    ("name", "dependency", "condition"),
    [
        ("migrate", "db", "service_healthy"),
        ("web", "migrate", "service_completed_successfully"),
        ("crawler", "migrate", "service_completed_successfully"),
    ],
)
def test_start_order(services, name, dependency, condition):
    assert depends_on(services[name]).get(dependency) == condition


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("db", "unless-stopped"),
        ("migrate", "no"),
        ("web", "unless-stopped"),
        ("crawler", "unless-stopped"),
    ],
)
def test_restart_policy(services, name, policy):
    assert services[name].get("restart") == policy


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_build_the_project_image(services, name):
    assert services[name].get("build"), "no build"
    assert services[name].get("image") == services["migrate"].get("image")


def test_web_runs_the_panel_under_gunicorn(services):
    words = command_words(services["web"]["command"])
    assert words[0] == "gunicorn"
    assert "webpanel:create_app()" in words
    assert "0.0.0.0:8000" in " ".join(words)


def test_web_healthcheck_hits_healthz_with_python(services):
    test = healthcheck_test(services["web"])
    assert "/healthz" in test
    assert "python" in test and "curl" not in test  # no curl in python:*-slim


def test_crawler_runs_the_hosts_spider(services):
    assert command_words(services["crawler"]["command"]) == ["scrapy", "crawl", "hosts"]


@pytest.mark.parametrize("key", ["container_name", "ports"])
def test_crawler_can_be_scaled(services, key):
    assert key not in services["crawler"], f"{key} breaks --scale crawler=N"


def test_crawler_gets_time_to_stop_gracefully(services):
    crawler = services["crawler"]
    assert crawler.get("stop_signal", "SIGTERM") in ("SIGINT", "SIGTERM")
    assert seconds(crawler.get("stop_grace_period", "10s")) >= 30


@pytest.mark.parametrize("name", ["web", "crawler", "migrate"])
def test_app_services_get_the_database_url(services, name):
    assert "@db:5432/" in str(services[name]["environment"]["DATABASE_URL"])


def test_panel_secret_key_has_no_default(services):
    value = str(services["web"]["environment"]["SECRET_KEY"])
    assert re.fullmatch(r"\$\{SECRET_KEY(:?\?[^}]*)?\}", value), value


# -- Dockerfile -----------------------------------------------------------------


def test_image_does_not_run_as_root():
    users = [args.split()[0] for op, args in dockerfile_instructions() if op == "USER"]
    assert users, "no USER instruction"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_image_installs_the_package():
    runs = " ".join(args for op, args in dockerfile_instructions() if op == "RUN")
    assert re.search(r"pip install [^;&|]*--no-cache-dir[^;&|]* \.(\s|$)", runs), runs


@pytest.mark.parametrize("path", APP_DIR)
def test_image_has_the_app_dir(path):
    copied = " ".join(args for op, args in dockerfile_instructions() if op == "COPY")
    assert path.rstrip("/") in re.split(r"[\s/]+", copied), path


def test_code_is_imported_from_the_app_dir():
    """crawler/db/server/engine.py finds alembic.ini and migrations/ beside the imported package,
    so the code must come from /app, not from the copy pip put in site-packages."""
    instructions = dockerfile_instructions()
    workdirs = [args for op, args in instructions if op == "WORKDIR"]
    env = " ".join(args for op, args in instructions if op == "ENV")
    assert workdirs and workdirs[-1] == "/app"
    assert re.search(r"PYTHONPATH=/app(\s|:|$)", env), env


def test_build_context_leaves_out_local_state():
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*", "expected an allowlist (first pattern '*')"
    reincluded = {p[1:].strip("/") for p in patterns if p.startswith("!")}
    assert not reincluded & {".env", "var", ".venv", ".git", "tests"}, reincluded


# -- .env.example ---------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> dict[str, tuple[bool, str]]:
    return env_example()


def test_env_example_sets_every_required_variable(compose, example):
    required = required_variables(compose)
    assert "SECRET_KEY" in required
    missing = {name for name in required if name not in example or example[name][0]}
    assert not missing, f"set in .env.example: {sorted(missing)}"


def test_env_example_lists_every_passthrough_setting(compose, example):
    passthrough = passthrough_variables(compose)
    assert {"HOST_URL_TEMPLATE", "CLAIM_BATCH", "RECRAWL_AFTER"} <= passthrough
    missing = passthrough - set(example)
    assert not missing, f"list in .env.example: {sorted(missing)}"


def test_env_example_names_only_variables_compose_uses(compose, example):
    built_by_compose = {"DATABASE_URL"}  # from POSTGRES_*, pointing at the db service
    unknown = {
        name
        for name in example
        if name not in all_variables(compose) | built_by_compose and not name.startswith("COMPOSE_")
    }
    assert not unknown, f"not used by docker-compose.yml: {sorted(unknown)}"


def test_env_example_holds_no_secret(example):
    assert example["SECRET_KEY"] == (False, "")
    assert example["POSTGRES_PASSWORD"] == (False, "")


def test_env_example_keeps_the_secure_cookie_on(example):
    assert example["SESSION_COOKIE_SECURE"][1] == "1"


def test_env_example_settings_part_is_written_from_the_settings_module():
    """Compose's own variables by hand above; below, `hostcrawl settings --env-example`."""
    text = ENV_EXAMPLE.read_text()
    hand, mark, generated = text.partition(config.ENV_EXAMPLE_MARK)
    assert mark, "no generated settings part"
    assert mark + generated == config.env_example(), "run: hostcrawl settings --env-example"
    assert "POSTGRES_PASSWORD=" in hand and "WEB_PORT=" in hand
    assert not {s.name for s in config.SETTINGS} & {m["name"] for m in ENV_LINE.finditer(hand)}


# Which services read what: the crawl is the workers, the panel is web, the CLI runs as
# migrate and as `docker compose run --rm web hostcrawl ...`.
SERVICES_OF = {
    config.CRAWL: ["crawler", "crawler-pooled", "crawler-citus"],
    config.PANEL: ["web", "web-citus"],
    config.CLI: ["migrate", "web", "citus-migrate", "web-citus"],
}


@pytest.mark.parametrize("declared", config.SETTINGS, ids=lambda s: s.name)
def test_every_setting_reaches_every_service_that_reads_it(services, declared):
    for reader in declared.readers:
        for name in SERVICES_OF[reader]:
            assert declared.name in services[name]["environment"], (name, declared.name)


@pytest.mark.parametrize("name", ["SECRET_KEY", "POSTGRES_PASSWORD"])
def test_secrets_have_no_default_anywhere(compose, name):
    """Every use of a secret is ${NAME:?...}: compose refuses to start without it."""
    uses = [
        match
        for value in strings(compose)
        for match in INTERPOLATION.finditer(value.replace("$$", ""))
        if (match["braced"] or match["bare"]) == name
    ]
    assert uses, f"{name} is not used"
    assert all(m["op"] == ":?" for m in uses), [m.group(0) for m in uses]


def test_no_default_panel_credentials(compose, example):
    names = all_variables(compose) | set(example)
    assert not [n for n in names if "PASSWORD" in n and not n.startswith("POSTGRES_")]


# -- docker compose config ------------------------------------------------------


def compose_command() -> list[str] | None:
    """`docker-compose`, or the `docker compose` plugin, if one is installed and runs."""
    candidates = []
    if shutil.which("docker-compose"):
        candidates.append(["docker-compose"])
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    for command in candidates:
        try:
            probe = subprocess.run(
                [*command, "version"], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return command
    return None


@pytest.fixture(scope="module")
def compose_config():
    """Run `docker-compose config` on the file with .env.example and `extra` variables."""
    command = compose_command()
    if command is None:
        if os.environ.get("HOSTCRAWL_REQUIRE_COMPOSE"):
            pytest.fail("no docker-compose: .ci/run installs Debian's docker-compose")
        pytest.skip("no docker-compose and no docker compose plugin on this machine")

    def config(
        env_file: Path = ENV_EXAMPLE, profile: str | None = None, **extra: str
    ) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
        env = {k: v for k, v in env.items() if k not in ("SECRET_KEY", "POSTGRES_PASSWORD")}
        env = {k: v for k, v in env.items() if k not in config_module.BY_NAME}
        profiles = ["--profile", profile] if profile else []
        return subprocess.run(
            [*command, "--env-file", str(env_file), "-f", str(COMPOSE_FILE), *profiles, "config"],
            cwd=ROOT,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )

    return config


def test_compose_config_is_valid(compose_config):
    result = compose_config(SECRET_KEY="only-for-config", POSTGRES_PASSWORD="only4config")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    assert "only4config@db:5432/" in resolved["web"]["environment"]["DATABASE_URL"]
    assert resolved["db"]["environment"]["POSTGRES_PASSWORD"] == "only4config"


@pytest.mark.parametrize("missing", ["SECRET_KEY", "POSTGRES_PASSWORD"])
def test_compose_refuses_to_start_without_a_secret(compose_config, missing):
    secrets = {"SECRET_KEY": "only-for-config", "POSTGRES_PASSWORD": "only4config"}
    del secrets[missing]
    result = compose_config(**secrets)
    assert result.returncode != 0
    assert f"set {missing} in .env" in result.stderr


def test_compose_passes_the_same_settings_to_the_panel_and_the_workers(compose_config, tmp_path):
    """An operator's .env: .env.example with a few settings set."""
    env_file = tmp_path / ".env"
    settings = "ROOT_BUDGET=1234\nTRAP_WINDOW=7\nCHANGE_LOG_RETENTION_DAYS=45\n"
    env_file.write_text(ENV_EXAMPLE.read_text() + settings)
    result = compose_config(env_file, SECRET_KEY="only-for-config", POSTGRES_PASSWORD="x1")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    for name in ("web", "crawler", "crawler-pooled"):
        env = resolved[name]["environment"]
        assert (env["ROOT_BUDGET"], env["TRAP_WINDOW"]) == ("1234", "7"), name
    for name in ("web", "migrate", "crawler"):
        assert resolved[name]["environment"]["CHANGE_LOG_RETENTION_DAYS"] == "45", name
    assert resolved["crawler"]["environment"]["HTTP_FALLBACK_TEMPLATE"] is None  # its default


def test_prometheus_scrapes_every_worker_on_its_metrics_port(compose_config):
    """The workers' /metrics listen on the container's interface at METRICS_PORT, and the
    scrape example (docker/prometheus.yml, the metrics profile) asks for that port."""
    result = compose_config(SECRET_KEY="only-for-config", POSTGRES_PASSWORD="only4config")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    crawler = resolved["crawler"]
    port = crawler["environment"]["METRICS_PORT"]
    assert crawler["environment"]["METRICS_ADDRESS"] == "0.0.0.0"
    assert [str(p) for p in crawler["expose"]] == [port]
    assert "ports" not in crawler  # scalable: reached on the compose network only
    mounts = [
        m if isinstance(m, str) else f"{m['source']}:{m['target']}"
        for m in resolved["prometheus"]["volumes"]
    ]
    source = next(m.split(":")[0] for m in mounts if "/etc/prometheus/prometheus.yml" in m)
    scrape = yaml.safe_load(Path(source).read_text())
    targets = [sd for job in scrape["scrape_configs"] for sd in job.get("dns_sd_configs", [])]
    assert any("crawler" in sd["names"] and str(sd["port"]) == port for sd in targets), targets


CITUS_NODES = ["citus-coordinator", "citus-worker-1", "citus-worker-2"]
CITUS_SERVICES = [*CITUS_NODES, "citus-setup", "citus-migrate", "web-citus", "crawler-citus"]


def test_citus_profile_migrates_the_coordinator_once_it_knows_its_workers(compose_config):
    """`--profile citus`: the official image's coordinator and two workers, a one-shot job
    that adds the workers to the coordinator, then the migration against the coordinator
    and the panel and workers on it."""
    result = compose_config(
        profile="citus", SECRET_KEY="only-for-config", POSTGRES_PASSWORD="only4config"
    )
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    assert set(CITUS_SERVICES) <= set(resolved), sorted(resolved)
    for name in CITUS_SERVICES:
        assert resolved[name].get("profiles") == ["citus"], name
    for name in CITUS_NODES:
        assert re.fullmatch(r"citusdata/citus:13\.\d+(\.\d+)?", resolved[name]["image"]), name
        assert "pg_isready -h 127.0.0.1" in healthcheck_test(resolved[name])
        assert depends_on(resolved["citus-setup"])[name] == "service_healthy"
    setup = " ".join(command_words(resolved["citus-setup"]["command"]))
    assert "citus_set_coordinator_host('citus-coordinator', 5432)" in setup
    for worker in CITUS_NODES[1:]:
        assert f"citus_add_node('{worker}', 5432)" in setup
    assert resolved["citus-setup"]["environment"]["PGHOST"] == "citus-coordinator"
    migrate = resolved["citus-migrate"]
    assert command_words(migrate["command"]) == ["hostcrawl", "db", "upgrade"]
    assert depends_on(migrate) == {"citus-setup": "service_completed_successfully"}
    for name in ("citus-migrate", "web-citus", "crawler-citus"):
        url = resolved[name]["environment"]["DATABASE_URL"]
        assert "only4config@citus-coordinator:5432/" in url, (name, url)
    for name in ("web-citus", "crawler-citus"):
        assert depends_on(resolved[name]) == {"citus-migrate": "service_completed_successfully"}


def test_grafana_shows_the_provisioned_dashboard_from_prometheus(compose_config):
    """Grafana (the metrics profile) mounts docker/grafana's provisioning and dashboards
    where its provisioning file looks, reads Prometheus, and needs no password."""
    result = compose_config(SECRET_KEY="only-for-config", POSTGRES_PASSWORD="only4config")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    grafana = resolved["grafana"]
    mounts = dict(
        (m["target"], Path(m["source"])) if isinstance(m, dict) else mount_of(m)
        for m in grafana["volumes"]
    )
    provisioning = mounts["/etc/grafana/provisioning"]
    assert provisioning == ROOT / "docker" / "grafana" / "provisioning"
    assert (provisioning / "datasources" / "prometheus.yml").is_file()
    providers = yaml.safe_load((provisioning / "dashboards" / "hostcrawl.yml").read_text())
    dashboards = providers["providers"][0]["options"]["path"]
    assert (mounts[dashboards] / "hostcrawl.json").is_file()
    assert "prometheus" in depends_on(grafana)
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert grafana["environment"]["GF_AUTH_DISABLE_LOGIN_FORM"] == "true"
    port = grafana["ports"][0]
    assert (port["host_ip"] if isinstance(port, dict) else port).startswith("127.0.0.1")


def mount_of(volume: str) -> tuple[str, Path]:
    """(target, source) of a short-form volume, source:target[:mode]."""
    source, target = volume.split(":")[:2]
    return target, Path(source)
