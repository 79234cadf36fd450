"""gunicorn settings for the panel, read from the directory gunicorn starts in (the
repository root in `make run`, /app in the image)."""

# gunicorn 27 opens a management socket at $HOME/.gunicorn/gunicorn.ctl by default. The
# panel needs none, and every gunicorn on a machine would share that one path.
control_socket_disable = True

# Threads, not one request per process: a login waiting on its Argon2 check holds one
# thread, and the panel allows one such check per process at a time (LOGIN_HASH_SLOTS),
# so the rest of a burst of logins is answered 429 at once while /healthz and the pages
# are served beside it. With sync workers every login would queue for its own check.
threads = 4
