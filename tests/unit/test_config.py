"""Every setting has one home: crawler/core/config.py, read without fallbacks of its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.settings import Settings

from crawler.addon import HostcrawlAddon, typed
from crawler.cli.show_settings import markdown_table
from crawler.core import config
from crawler.db.server.engine import PROJECT_ROOT

SOURCES = sorted(
    p
    for folder in ("crawler", "webpanel")
    for p in (PROJECT_ROOT / folder).rglob("*.py")
    if p.name != "config.py" or p.parent.name != "core"
)
GETTERS = {"get", "getint", "getfloat", "getbool", "getlist", "getdict"}


def setting_reads(path: Path):
    """(line, name, has fallback) of each `x.get*("NAME", ...)` and `environ.get("NAME")`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in GETTERS or not node.args:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and first.value in config.BY_NAME:
            owner = ast.unparse(node.func.value)
            yield node.lineno, first.value, owner, len(node.args) > 1 or bool(node.keywords)


def test_names_are_declared_once():
    names = [s.name for s in config.SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.meaning and s.readers for s in config.SETTINGS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_no_component_keeps_a_default_or_reads_the_environment_itself(path):
    wrong = [
        f"{path.name}:{line} {owner}.get…({name!r})"
        for line, name, owner, fallback in setting_reads(path)
        if fallback or "environ" in owner
    ]
    assert not wrong, f"read through crawler.core.config instead: {wrong}"


def test_defaults_parse_as_their_own_type():
    for declared in config.SETTINGS:
        assert isinstance(declared.default, declared.kind), declared.name
        if declared.kind is not str:
            assert declared.parse(declared.shown(declared.default)) == declared.default


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("TRAP_WINDOW", "lots", "TRAP_WINDOW='lots': expected int"),
        ("TRAP_WINDOW", "0", "TRAP_WINDOW='0': expected a number >= 1"),
        ("AUDIT_TLS", "maybe", "AUDIT_TLS='maybe': expected 1 or 0"),
    ],
)
def test_a_bad_value_names_the_setting_and_the_value(name, raw, message):
    with pytest.raises(config.SettingError, match=message):
        config.from_environment(name, {name: raw})


def applied(command_line: dict) -> Settings:
    """Scrapy settings after the add-on, with `command_line` given as -s."""
    settings = Settings()
    settings.setdict(command_line, priority="cmdline")
    HostcrawlAddon.__new__(HostcrawlAddon).update_settings(settings)
    return settings


def test_the_addon_applies_defaults_environment_then_command_line(monkeypatch):
    monkeypatch.setenv("ROOT_BUDGET", "77")
    monkeypatch.setenv("TRAP_WINDOW", "30")
    settings = applied({"TRAP_WINDOW": "12"})
    assert typed(settings, config.setting("CLAIM_BATCH")) == 32
    assert typed(settings, config.setting("ROOT_BUDGET")) == 77
    assert typed(settings, config.setting("TRAP_WINDOW")) == 12


def test_root_concurrency_given_with_s_sets_the_slot_concurrency():
    settings = applied({"ROOT_CONCURRENCY": "4"})
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") == 4


def test_the_panel_reads_crawl_wide_values_from_the_same_environment(monkeypatch):
    from webpanel.settings import defaults

    monkeypatch.setenv("ROOT_BUDGET", "123")
    monkeypatch.setenv("TRAP_WINDOW", "40")
    values = defaults()
    assert values["ROOT_BUDGET"] == 123 and values["TRAP_WINDOW"] == 40


def test_env_example_holds_the_generated_list():
    text = (PROJECT_ROOT / ".env.example").read_text()
    assert config.env_example() in text, "regenerate: hostcrawl settings --env-example"


def test_the_settings_page_holds_the_generated_table():
    page = (PROJECT_ROOT / "docs" / "settings.md").read_text()
    assert markdown_table() in page, "regenerate: hostcrawl settings --markdown"


def test_hostcrawl_settings_prints_value_and_source():
    env = {"PATH": "/usr/bin:/bin", "ROOT_BUDGET": "900", "DATABASE_URL": "postgresql://u:pw@h/d"}
    run = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "settings"],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = {line.split()[0]: line.split() for line in run.stdout.splitlines()}
    assert lines["ROOT_BUDGET"][1:3] == ["900", "environment"]
    assert lines["TRAP_WINDOW"][1:3] == ["50", "default"]
    assert "pw" not in run.stdout and "postgresql://u:***@h/d" in run.stdout
    assert set(lines) == set(config.BY_NAME)
