"""Alembic environment: the shared Base.metadata on DATABASE_URL (or the embedded server)."""

from logging.config import fileConfig

from alembic import context
from sqlalchemy import engine_from_config, pool

from crawler.db.models import Base
from crawler.db.server.engine import database_url

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name)

target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    section = {"sqlalchemy.url": database_url()}
    engine = engine_from_config(section, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)


# On Citus, a distributed function or view is created or dropped over one connection per
# worker, which a parallel write to the shards earlier in the same transaction rules out
# (0030 copies the queue's rows, then makes a view and installs the claim): the
# migrations' writes to the shards go one connection per worker.
CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata)
    with context.begin_transaction():
        if connection.exec_driver_sql(CITUS).scalar():
            connection.exec_driver_sql("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
