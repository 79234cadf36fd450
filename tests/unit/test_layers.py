"""The layers (docs/design.md): dependencies point one way, checked on the source.

core (pure rules) ← crawler/db ← {the Scrapy parts, the CLI, the panel}; the
Scrapy parts and the panel never import each other. A module's layer is its
folder: crawler/core, crawler/db, crawler/cli, webpanel; the rest of crawler/
is the Scrapy side, whose rooms (ROOMS) point one way too: the network knows
nothing of the crawl, the rules know the network, the shared state
(crawler/shared.py) knows the rules, and the Scrapy components (middlewares,
extensions, spiders, pipelines) share that state; the add-on and the commands wire
them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from crawler.db.server.engine import PROJECT_ROOT

FOLDER_LAYERS = {"core": "core", "db": "db", "cli": "cli"}
FRAMEWORKS = {"scrapy", "twisted", "flask", "flask_login", "flask_wtf", "werkzeug"}
DATABASE_DRIVERS = {"sqlalchemy", "psycopg", "psycopg_pool", "alembic"}


def modules() -> list[Path]:
    files = [*PROJECT_ROOT.glob("crawler/**/*.py"), *PROJECT_ROOT.glob("webpanel/**/*.py")]
    return sorted(f for f in files if "__pycache__" not in f.parts)


def imported(path: Path) -> set[str]:
    """Every module a file imports (absolute names), at any depth of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def layer(module: str) -> str:
    """core, db, cli, scrapy (the crawling side) or panel."""
    parts = module.split(".")
    if parts[0] == "webpanel":
        return "panel"
    if len(parts) > 1 and parts[1] in FOLDER_LAYERS:
        return FOLDER_LAYERS[parts[1]]
    return "scrapy"


def name_of(path: Path) -> str:
    relative = path.relative_to(PROJECT_ROOT).with_suffix("")
    return ".".join(p for p in relative.parts if p != "__init__")


# What each layer may import of ours.
ALLOWED = {
    "core": {"core"},
    "db": {"core", "db"},
    "cli": {"core", "db", "cli"},
    "scrapy": {"core", "db", "scrapy"},
    "panel": {"core", "db", "panel"},
}
FORBIDDEN_LIBRARIES = {
    "core": FRAMEWORKS | DATABASE_DRIVERS,
    "db": FRAMEWORKS,
    "cli": {"scrapy", "twisted", "flask"},
    "scrapy": {"flask", "flask_login", "flask_wtf"},
    "panel": {"scrapy", "twisted"},
}


@pytest.mark.parametrize("path", modules(), ids=name_of)
def test_imports_point_one_way(path):
    own = layer(name_of(path))
    ours = {n for n in imported(path) if n.split(".")[0] in ("crawler", "webpanel")}
    modules_only = {
        n
        for n in ours
        if (PROJECT_ROOT / n.replace(".", "/")).exists()
        or (PROJECT_ROOT / (n.replace(".", "/") + ".py")).exists()
    }
    wrong = sorted(n for n in modules_only if n != "crawler" and layer(n) not in ALLOWED[own])
    assert not wrong, f"{name_of(path)} ({own}) imports {wrong}"
    libraries = {n.split(".")[0] for n in imported(path)} & FORBIDDEN_LIBRARIES[own]
    assert not libraries, f"{name_of(path)} ({own}) imports {sorted(libraries)}"


# What each room of the Scrapy side may import of the Scrapy side (core and db are the
# layers' business). The wiring (addon, commands) may import any room.
ROOMS = {
    "network": set(),
    "utils": set(),
    "rules": {"network", "utils"},
    "shared": {"network", "rules"},
    "downloadermiddlewares": {"network", "shared"},
    "extensions": {"network", "shared"},
    "items": set(),
    "logformatter": {"items"},
    "pipelines": {"items", "rules", "shared", "utils"},
    # The spider reads its room in flight through the shared state, not the extension.
    "spiders": {"downloadermiddlewares", "items", "network", "shared"},
    "runner": set(),
    "settings": set(),
}
WIRING = {"addon", "commands"}


def room(module: str) -> str:
    """The Scrapy side's room of a module: crawler.<room>[.module]."""
    return module.split(".")[1]


SCRAPY_SIDE = [p for p in modules() if layer(name_of(p)) == "scrapy" and name_of(p) != "crawler"]


@pytest.mark.parametrize("path", SCRAPY_SIDE, ids=name_of)
def test_the_scrapy_side_rooms_point_one_way(path):
    own = room(name_of(path))
    assert own in ROOMS or own in WIRING, f"{name_of(path)}: a room the table does not know"
    if own in WIRING:
        return
    side = {n for n in imported(path) if n.startswith("crawler.") and layer(n) == "scrapy"}
    wrong = sorted(n for n in side if room(n) != own and room(n) not in ROOMS[own])
    assert not wrong, f"{name_of(path)} ({own}) imports {wrong}"


def test_the_runner_starts_processes_and_imports_no_scrapy():
    for path in SCRAPY_SIDE:
        if room(name_of(path)) == "runner":
            libraries = {n.split(".")[0] for n in imported(path)} & {"scrapy", "twisted"}
            assert not libraries, f"{name_of(path)} imports {sorted(libraries)}"


def test_the_layer_table_knows_every_core_module():
    core = {name_of(p) for p in modules() if layer(name_of(p)) == "core"}
    assert {
        "crawler.core.hostnames",
        "crawler.core.denylist",
        "crawler.core.links",
        "crawler.core.traps",
    } <= core
    assert "crawler.core.outcomes" in core


DEPLOYMENTS = "crawler.db.deployments"


def test_the_deployments_statements_are_theirs():
    """crawler/db/deployments holds each deployment's statements (its own room of the db
    layer); the code outside it asks the deployment (`deployment_of`) and imports none of
    one deployment's modules."""
    inside = {name_of(p) for p in modules() if name_of(p).startswith(f"{DEPLOYMENTS}.")}
    assert {f"{DEPLOYMENTS}.one_server", f"{DEPLOYMENTS}.cluster"} <= inside
    assert {layer(name) for name in inside} == {"db"}
    for path in modules():
        if not name_of(path).startswith(DEPLOYMENTS):
            wrong = sorted(imported(path) & inside)
            assert not wrong, f"{name_of(path)} imports {wrong}: ask {DEPLOYMENTS}"
