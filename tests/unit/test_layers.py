"""The layers (docs/design.md): dependencies point one way, checked on the source.

core (pure rules) ← crawler/db ← {the Scrapy parts, the CLI, the panel}; the
Scrapy parts and the panel never import each other. A module's layer is its
folder: crawler/core, crawler/db, crawler/cli, webpanel; the rest of crawler/
is the Scrapy side.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from crawler.db.engine import PROJECT_ROOT

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


def test_the_layer_table_knows_every_core_module():
    core = {name_of(p) for p in modules() if layer(name_of(p)) == "core"}
    assert {
        "crawler.core.hostnames",
        "crawler.core.denylist",
        "crawler.core.links",
        "crawler.core.traps",
    } <= core
    assert "crawler.core.outcomes" in core
