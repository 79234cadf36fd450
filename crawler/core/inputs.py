"""Text an operator or a client sends: what Postgres can store, and how long a note may be.

One rule for every path (panel forms, CSV import, the JSON API, the CLI): the
callers ask here and say which field failed.
"""

from __future__ import annotations

MAX_NOTE = 500  # characters in a note kept with an entry or in the change log


def unstorable(value: str) -> str | None:
    """Why this text cannot be stored (a NUL, or a lone UTF-16 surrogate that is not a
    character and has no UTF-8 form), else None."""
    if "\x00" in value:
        return "contains a NUL character, which cannot be stored"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (\\ud800-\\udfff), which is not a character"
    return None


def note_problem(note: str) -> str | None:
    """Why this note is refused (unstorable, or longer than MAX_NOTE), else None."""
    if len(note) > MAX_NOTE:
        return f"at most {MAX_NOTE} characters (this one has {len(note):,})"
    return unstorable(note)
