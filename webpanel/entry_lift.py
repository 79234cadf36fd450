"""Lifting one deny entry from its list: /blocked's unblock and /no_follow's remove.

Both ask for a confirmation (and a note for the change log) on GET, lift the entry on
its POST through crawler.db.rules.deny_entries (the hosts it took out come back into routing),
and go back to the list with what changed.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import abort, flash, redirect, render_template, url_for

from crawler.db.operators.bulk import EntryChange
from webpanel.extensions import db
from webpanel.forms import ConfirmForm
from webpanel.queries import deny_lists
from webpanel.view_helpers import actor, engine

# deny_entries.unblock or deny_entries.remove_no_follow.
Lift = Callable[..., list[EntryChange]]


def confirm_and_lift(
    kind: str,
    hostname: str,
    lift: Lift,
    template: str,
    shown: Callable[[], dict] = dict,
):
    """The confirmation page of `hostname`'s entry of `kind` (404 if there is none), with
    what `shown` adds to it; on its POST, `lift` the entry and back to the list."""
    found = deny_lists.entry(db.session, kind, hostname)
    if found is None:
        abort(404)
    form = ConfirmForm()
    if form.validate_on_submit():
        (change,) = lift(engine(), [hostname], actor(), note=form.note.data)
        flash(change.describe())
        return redirect(url_for(".index"))
    return render_template(template, entry=found, form=form, **shown())
