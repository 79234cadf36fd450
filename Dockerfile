# syntax=docker/dockerfile:1
#
# One image for every hostcrawl process: the one-shot schema migration
# (`hostcrawl db upgrade`), the panel (gunicorn) and the crawler workers
# (`scrapy crawl hosts`). docker-compose.yml says which one each service runs.

FROM python:3.12-slim

# PYTHONPATH=/app: the code is imported from /app, not from the installed copy in
# site-packages. crawler/db/engine.py finds alembic.ini, migrations/ and var/
# next to the `crawler` package it was imported from, and scrapy.cfg is here too.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONPATH=/app \
    HOSTCRAWL_VAR=/app/var

RUN groupadd --system --gid 10001 hostcrawl \
    && useradd --system --uid 10001 --gid hostcrawl --create-home \
        --home-dir /home/hostcrawl --shell /usr/sbin/nologin hostcrawl

WORKDIR /app

# Dependencies first, from pyproject.toml alone, so that a code change does not
# reinstall Scrapy and the rest.
COPY pyproject.toml README.md* ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The package itself (gives the `hostcrawl` command).
COPY crawler/ crawler/
COPY webpanel/ webpanel/
RUN pip install --no-cache-dir --no-deps . \
    && rm -rf build hostcrawl.egg-info

# What the processes read at run time from the app dir.
COPY migrations/ migrations/
COPY alembic.ini scrapy.cfg gunicorn.conf.py ./

RUN mkdir -p /app/var && chown hostcrawl:hostcrawl /app/var

USER hostcrawl

EXPOSE 8000

# The panel by default; compose sets the command of each service.
CMD ["gunicorn", "--bind", "0.0.0.0:8000", "--access-logfile", "-", "webpanel:create_app()"]
