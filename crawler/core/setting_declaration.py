"""One setting's declaration: its name, default, type and readers, how a text becomes its
value, how it is shown.

The table of every setting is crawler/core/config.py. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Who reads a setting: the crawl (Scrapy workers and `scrapy audit`), the panel, the CLI.
CRAWL, PANEL, CLI = "crawl", "panel", "cli"
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
PASSWORD_IN_URL = re.compile(r"(://[^:/@]+:)[^@]*@")


class SettingError(ValueError):
    """A value that is not what its setting takes; the message names both."""


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    kind: type
    meaning: str
    readers: tuple[str, ...] = (CRAWL,)
    minimum: float | None = None
    secret: bool = False
    group: str = "crawl"

    def parse(self, raw: str) -> Any:
        """The value a text (from the environment or `-s`) stands for, or SettingError."""
        text = raw.strip()
        if self.kind is str:
            return text
        if self.kind is bool:
            if text.lower() in TRUE_WORDS | FALSE_WORDS:
                return text.lower() in TRUE_WORDS
            raise SettingError(f"{self.name}={raw!r}: expected 1 or 0")
        try:
            value = self.kind(text)
        except ValueError:
            expected = getattr(self.kind, "expected", self.kind.__name__)  # a kind may say it
            raise SettingError(f"{self.name}={raw!r}: expected {expected}") from None
        if self.minimum is not None and value < self.minimum:
            raise SettingError(f"{self.name}={raw!r}: expected a number >= {self.minimum:g}")
        return value

    def shown(self, value: Any) -> str:
        """The value as an operator reads it, a secret masked."""
        if self.secret and value:
            return "(set)"
        if self.kind is bool:
            return "1" if value else "0"
        return PASSWORD_IN_URL.sub(r"\1***@", str(value))


def set_but_blank(name: str, environ: Mapping[str, str]) -> bool:
    """True when the environment sets `name` to white space alone: not unset, not empty,
    but a value gone missing (a setting's value reads it as empty)."""
    raw = environ.get(name)
    return bool(raw) and not raw.strip()
