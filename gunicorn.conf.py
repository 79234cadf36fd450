"""gunicorn settings for the panel, read from the directory gunicorn starts in (the
repository root in `make run`, /app in the image)."""

# gunicorn 27 opens a management socket at $HOME/.gunicorn/gunicorn.ctl by default. The
# panel needs none, and every gunicorn on a machine would share that one path.
control_socket_disable = True
