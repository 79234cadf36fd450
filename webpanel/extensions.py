"""The Flask extensions, created once and bound to the app in create_app()."""

from __future__ import annotations

from flask_login import LoginManager
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect

from crawler.db.models import Base

# The crawler's own models and metadata: one schema for every process.
db = SQLAlchemy(model_class=Base)
login_manager = LoginManager()
csrf = CSRFProtect()
