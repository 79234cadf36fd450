"""/api: JSON for scripts, with a bearer token from `hostcrawl user token NAME`.

No cookies are accepted here, so there is nothing for CSRF to forge: the
blueprint is CSRF-exempt. Changes go through crawler.db.rules.deny_entries, like the forms'.
"""

from __future__ import annotations

import json

from flask import Blueprint, abort, current_app, g, jsonify, request

from crawler.core.denylist import BLOCKED, NO_FOLLOW
from crawler.core.hostnames import HostnameError, normalize
from crawler.core.inputs import MAX_NOTE, note_problem, unstorable
from crawler.db.operators import accounts
from crawler.db.operators.host_filter import PREFIX
from crawler.db.rules import deny_entries
from crawler.db.rules.deny_entries import current_denial
from webpanel.dashboard_cache import cached_dashboard
from webpanel.entry_input import MAX_NAMES
from webpanel.extensions import db
from webpanel.hosts import host_filter
from webpanel.queries import deny_lists, host_rows, root_rows
from webpanel.roots import root_budget, root_filter, root_json
from webpanel.security import READ_METHODS, VIEWER_REFUSED
from webpanel.view_helpers import engine, fetch_page

bp = Blueprint("api", __name__, url_prefix="/api")
MAX_DEPTH = 32  # deeper JSON is refused before it can exhaust the parser's recursion


@bp.before_request
def authenticate():
    """Every API call needs `Authorization: Bearer <token>` of an enabled operator;
    a call that may change something needs an admin's."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    user = accounts.user_by_token(db.session, token.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        response = jsonify(error="an API token is required: Authorization: Bearer <token>")
        response.headers["WWW-Authenticate"] = 'Bearer realm="hostcrawl"'
        return response, 401
    if request.method not in READ_METHODS and user.role != accounts.ADMIN:
        abort(403, description=VIEWER_REFUSED)
    g.api_user = user.username
    return None


def json_body() -> dict:
    """The request's JSON object: 415 unless it says JSON, 400 unless it is a JSON object
    nested at most MAX_DEPTH deep (errors are JSON: webpanel.error_page)."""
    if not request.is_json:
        abort(415, description="send a JSON body (Content-Type: application/json)")
    data = request.get_data(cache=True)  # 413 past MAX_CONTENT_LENGTH
    try:
        body = json.loads(data)
    except RecursionError:
        body = None  # deeper than the parser goes: far deeper than MAX_DEPTH
    except ValueError as exc:  # UnicodeDecodeError included
        abort(400, description=f"the body is not JSON: {exc}")
    if body is None or nesting(body) > MAX_DEPTH:
        abort(400, description=f"JSON nested deeper than {MAX_DEPTH} levels")
    if not isinstance(body, dict):
        abort(400, description="send a JSON object")
    for text in strings(body):
        problem = unstorable(text)
        if problem:
            abort(400, description=f"the JSON body {problem}: {ascii(text[:40])}")
    return body


def strings(value) -> list[str]:
    """Every string in a JSON value, object keys included (a loop, not recursion)."""
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def nesting(value) -> int:
    """How deep lists and objects nest in `value` (a loop, not recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest


def names_from_body() -> tuple[list[str], str | None]:
    """{"names": [...], "note": "..."}, or 400."""
    body = json_body()
    if not isinstance(body.get("names"), list):
        abort(400, description='send JSON {"names": ["example.org", ...], "note": "why"}')
    names = body["names"]
    if len(names) > MAX_NAMES:  # one bulk batch at most: written whole or not at all
        abort(413, description=f'"names": at most {MAX_NAMES} in one request')
    if not names or not all(isinstance(n, str) for n in names):
        abort(400, description=f'"names": 1 to {MAX_NAMES} strings')
    note = body.get("note")
    if note is not None and not isinstance(note, str):
        abort(400, description=f'"note": a string of at most {MAX_NOTE} characters')
    problem = note and note_problem(note)
    if problem:
        abort(400, description=f'"note": {problem}')
    return names, note


def results(changes) -> dict:
    items = [
        {"input": c.input, "hostname": c.hostname, "status": c.status, "message": c.message}
        for c in changes
    ]
    return {"results": items, "ok": all(c.ok for c in changes)}


def entry_list(rule: str):
    q, match = request.args.get("q", ""), request.args.get("match", PREFIX)
    try:
        page = fetch_page(deny_lists.entry_page, rule, q, match)
    except HostnameError as exc:
        return jsonify(error=f"q: {exc.reason}"), 400
    keys = (
        "hostname",
        "note",
        "blocked_reason",
        "blocked_at",
        "took_out",
        "links_dropped",
        "added_at",
        "added_by",
    )
    rows = [{k: _json(getattr(r, k)) for k in keys} for r in page.rows]
    return jsonify(entries=rows, next=page.next, prev=page.prev)


def _json(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


@bp.get("/check_host")
def check_host():
    """Is `name` denied, and by which entry and rule? (the crawler's own DenyList)"""
    value = request.args.get("name", "")
    try:
        name = normalize(value)
    except HostnameError as exc:
        return jsonify(input=value, error=exc.reason), 400
    denial = current_denial(db.session, name)
    return jsonify(
        input=value,
        hostname=name,
        denied=denial is not None,
        entry=denial.entry if denial else None,
        rule=denial.rule if denial else None,
    )


@bp.get("/no_follow")
def no_follow_list():
    """No_follow entries, a keyset page (?q=, ?match=prefix|domain, ?after=, ?n=)."""
    return entry_list(NO_FOLLOW)


@bp.post("/no_follow/add")
def no_follow_add():
    """Add entries: {"names": [...], "note": "...", "force": false}; a result per name."""
    names, note = names_from_body()
    force = (request.get_json(silent=True) or {}).get("force") is True
    changes = deny_entries.add_no_follow(engine(), names, g.api_user, note=note, force=force)
    return jsonify(results(changes))


@bp.post("/no_follow/remove")
def no_follow_remove():
    """Remove entries: {"names": [...], "note": "..."}; a result per name."""
    names, note = names_from_body()
    return jsonify(results(deny_entries.remove_no_follow(engine(), names, g.api_user, note)))


@bp.get("/blocked")
def blocked_list():
    """Blocked entries with blocked_reason, a keyset page."""
    return entry_list(BLOCKED)


@bp.post("/blocked/unblock")
def blocked_unblock():
    """Unblock: {"names": [...], "note": "..."}; a result per name."""
    names, note = names_from_body()
    return jsonify(results(deny_entries.unblock(engine(), names, g.api_user, note=note)))


@bp.get("/stats")
def api_stats():
    """The dashboard figures."""
    return jsonify(cached_dashboard().as_dict())


@bp.get("/roots")
def roots_list():
    """Roots as /roots shows them (q, match, sort, wildcards=1), a keyset page."""
    try:
        page = fetch_page(root_rows.root_page, root_filter())
    except HostnameError as exc:
        return jsonify(error=f"q: {exc.reason}"), 400
    budget = root_budget()
    return jsonify(
        roots=[root_json(r, budget, current_app.config["TRAP_NEAR_BLOCK"]) for r in page.rows],
        next=page.next,
        prev=page.prev,
    )


@bp.get("/hosts")
def hosts_list():
    """Hosts as / lists them (q, match, outcome, root, sort, since), a keyset page."""
    try:
        page = fetch_page(host_rows.host_page, host_filter())
    except HostnameError as exc:
        return jsonify(error=f"q or root: {exc.reason}"), 400
    rows = [
        {k: _json(v) for k, v in row._mapping.items() if not k.startswith("_k")}
        for row in page.rows
    ]
    return jsonify(hosts=rows, next=page.next, prev=page.prev)
