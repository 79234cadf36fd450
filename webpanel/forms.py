"""The panel's forms. Every POST is one of these, so Flask-WTF checks its CSRF token."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import BooleanField, HiddenField, PasswordField, StringField, SubmitField
from wtforms.fields import TextAreaField
from wtforms.validators import DataRequired, Length, Optional

from crawler.core.inputs import MAX_NOTE

FORCE_LABEL = "Store bare public suffixes such as com or co.uk (denies every name under them)"


class LoginForm(FlaskForm):
    username = StringField("Username", validators=[DataRequired(), Length(max=64)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)])
    submit = SubmitField("Log in")


class EmptyForm(FlaskForm):
    """One button: the whole request is the action (logout)."""

    submit = SubmitField("Submit")


class ConfirmForm(FlaskForm):
    """The confirmation of a removal or an unblock, with an optional note for the change log."""

    note = StringField(
        "Note (kept in the change log)", validators=[Optional(), Length(max=MAX_NOTE)]
    )
    submit = SubmitField("Confirm")


class NoFollowForm(FlaskForm):
    """Add one entry or paste many, one per line; Preview first, then Save."""

    entries = TextAreaField(
        "Domains, one per line",
        validators=[DataRequired(message="give at least one domain"), Length(max=500_000)],
    )
    note = StringField("Note (why)", validators=[Optional(), Length(max=MAX_NOTE)])
    force = BooleanField(FORCE_LABEL)
    preview = SubmitField("Preview")
    save = SubmitField("Save")


class ImportForm(FlaskForm):
    """A CSV file of hostname[,note] rows; previewed, then saved from the hidden copy."""

    file = FileField("CSV file (hostname, note)")
    csv_text = HiddenField()
    force = BooleanField(FORCE_LABEL)
    preview = SubmitField("Preview import")
    save = SubmitField("Import")
