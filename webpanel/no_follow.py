"""/no_follow: the operators' entries. Add one or paste many (preview, then save),
remove with a confirmation, CSV export and import. crawler.db.rules.deny_entries does every write.

A paste or an import of more than entry_input.MAX_NAMES names is refused whole, with the
reason beside the field; skipped lines and repeated names are counted on screen.
"""

from __future__ import annotations

from io import BytesIO

from flask import Blueprint, render_template, request, send_file

from crawler.core.denylist import NO_FOLLOW
from crawler.db.operators.host_filter import MATCHES
from crawler.db.rules import deny_entries
from webpanel import entry_input
from webpanel.entry_lift import confirm_and_lift
from webpanel.extensions import db
from webpanel.forms import ImportForm, NoFollowForm
from webpanel.queries import deny_lists
from webpanel.view_helpers import actor, arg, choice, engine, search_page

bp = Blueprint("no_follow", __name__, url_prefix="/no_follow")


@bp.context_processor
def limits() -> dict:
    return {"max_names": entry_input.MAX_NAMES}


def render_index(
    form: NoFollowForm,
    preview: entry_input.Preview | None = None,
    status: int = 200,
    counted: str = "",
    offers: list[entry_input.Offer] | None = None,
):
    """The list with the add form (and a preview of the form's lines, if any, with the
    registered domains it offers instead of URLs and www. names)."""
    q, match = arg("q"), choice("match", MATCHES)
    page, error = search_page(deny_lists.entry_page, NO_FOLLOW, q, match)
    body = render_template(
        "no_follow/index.html",
        page=page,
        q=q,
        match=match,
        error=error,
        form=form,
        preview=preview,
        counted=counted,
        offers=offers or [],
    )
    return body, status


@bp.get("")
def index():
    """The no_follow entries (search, keyset pages) and the form to add more."""
    form = NoFollowForm(formdata=None)
    form.entries.data = request.args.get("add", "")[: entry_input.ADD_CHARS]
    return render_index(form)


@bp.post("")
def add():
    """Preview the pasted lines, or save them; bad lines show their reason by the field."""
    form = NoFollowForm()
    if not form.validate_on_submit():
        return render_index(form, status=400)
    pasted = entry_input.lines(form.entries.data)
    if too_many := pasted.too_many():
        form.entries.errors = [too_many]
        return render_index(form, status=400, counted=pasted.counted())
    note = form.note.data or None
    if form.save.data:
        changes = deny_entries.add_no_follow(
            engine(), pasted.items, actor(), note=note, force=form.force.data
        )
        summary = entry_input.Summary(changes, pasted.counted())
        return render_template("no_follow/summary.html", summary=summary)
    preview = entry_input.preview(db.session, pasted.items, form.force.data)
    form.entries.errors = [c.describe_problem() for c in preview.problems]
    status = 400 if preview.problems and not preview.storable else 200
    offers = entry_input.offers(preview, form.entries.data)
    return render_index(
        form, preview if preview.storable else None, status, pasted.counted(), offers
    )


@bp.route("/<hostname>/remove", methods=["GET", "POST"])
def remove(hostname: str):
    """Remove an entry after a confirmation; the hosts it took out come back."""
    return confirm_and_lift(
        NO_FOLLOW, hostname, deny_entries.remove_no_follow, "no_follow/remove.html"
    )


@bp.get("/export.csv")
def export():
    """Every entry as CSV (hostname, note); cells a spreadsheet would run are neutralised."""
    data = entry_input.export_csv(deny_lists.entries_for_export(db.session, NO_FOLLOW))
    return send_file(
        BytesIO(data), mimetype="text/csv", as_attachment=True, download_name="no_follow.csv"
    )


@bp.route("/import", methods=["GET", "POST"])
def import_csv():
    """Upload a CSV (hostname[,note]); preview every row, then import them all."""
    form = ImportForm()
    if not form.validate_on_submit():
        return render_template("no_follow/import.html", form=form, preview=None)
    data = form.csv_text.data or _read_upload(form)
    try:
        read = entry_input.import_rows(data or "")
    except ValueError as exc:  # e.g. a cell past the csv module's field limit
        return _refuse_file(form, str(exc))
    if not read.items:
        return _refuse_file(form, "no hostname rows in that file")
    if too_many := read.too_many():
        form.csv_text.data = ""  # not carried to a save
        return _refuse_file(form, too_many)
    rows = read.items
    if form.save.data and form.csv_text.data:
        summary = entry_input.Summary(_save_rows(rows, form.force.data), read.counted())
        return render_template("no_follow/summary.html", summary=summary)
    form.csv_text.data = data
    preview = entry_input.preview(
        db.session, [v for v, _ in rows], form.force.data, [n for _, n in rows]
    )
    return render_template(
        "no_follow/import.html", form=form, preview=preview, counted=read.counted()
    )


def _refuse_file(form: ImportForm, why: str):
    """The import form again, with the reason beside the file field; nothing written."""
    form.file.errors = [*form.file.errors, why]
    return render_template("no_follow/import.html", form=form, preview=None), 400


def _read_upload(form: ImportForm) -> str | None:
    upload = form.file.data
    if upload is None or not getattr(upload, "filename", ""):
        form.file.errors = ["choose a CSV file"]
        return None
    try:
        return upload.read().decode("utf-8-sig")
    except UnicodeDecodeError:
        form.file.errors = ["not UTF-8 text"]
        return None


def _save_rows(rows: list[tuple[str, str | None]], force: bool):
    """Every row in one bulk batch (one transaction), each with its note; results in order."""
    return deny_entries.add_no_follow(engine(), rows, actor(), force=force)
