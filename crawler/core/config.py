"""Every setting of hostcrawl, declared once (the table; one declaration is
crawler/core/setting_declaration.py): its name, default, type and meaning.

The crawler (through the add-on, at its priority: `-s` and a project's own settings
win), the CLI and the panel read their values here, from the same environment;
`hostcrawl settings` prints them with where each came from, and `.env.example` is
written from this table. Pure: the environment is passed in, nothing is read here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from crawler.core.crawl_settings import CRAWL_SETTINGS
from crawler.core.service_settings import SERVICE_SETTINGS
from crawler.core.setting_declaration import CLI, CRAWL, PANEL, Setting, SettingError

__all__ = ["CLI", "CRAWL", "PANEL", "SETTINGS", "Setting", "SettingError"]

# In the order `hostcrawl settings`, .env.example and docs/settings.md list them.
SETTINGS: tuple[Setting, ...] = CRAWL_SETTINGS + SERVICE_SETTINGS
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    try:
        return BY_NAME[name]
    except KeyError:
        raise SettingError(f"{name}: no such setting") from None


def from_environment(name: str, environ: Mapping[str, str]) -> Any:
    """A setting's value: the environment's when set and not empty, else its default."""
    declared = setting(name)
    raw = environ.get(name)
    if raw is None or (not raw.strip() and declared.kind is not str):
        return declared.default
    return declared.parse(raw)


def effective(environ: Mapping[str, str]) -> Iterator[tuple[Setting, Any, str]]:
    """Every setting with its value and where it came from: "default" or "environment"."""
    for declared in SETTINGS:
        value = from_environment(declared.name, environ)
        source = "environment" if declared.name in environ else "default"
        yield declared, value, source


ENV_EXAMPLE_MARK = "# === hostcrawl settings: written by `hostcrawl settings --env-example` ==="


def env_example() -> str:
    """`.env.example`'s settings part: every setting at its default, commented out but for
    the secrets, which a deployment must fill in."""
    lines = [ENV_EXAMPLE_MARK]
    group = None
    for declared in SETTINGS:
        if declared.group != group:
            group = declared.group
            lines += ["", f"# --- {group} " + "-" * (74 - len(group))]
        readers = ", ".join(declared.readers)
        lines.append(f"# {declared.meaning} (read by: {readers})")
        if declared.secret:
            lines.append(f"{declared.name}=")
        else:
            lines.append(f"# {declared.name}={declared.shown(declared.default)}")
    return "\n".join(lines) + "\n"
