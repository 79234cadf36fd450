"""gunicorn settings for the panel, read from the directory gunicorn starts in (the
repository root in `make run`, /app in the image).

Nothing here may import the panel: its modules import psycopg, which picks how it
waits on the network when it is first imported. Only in the worker, after gevent
has patched the standard library, does psycopg choose a wait that lets other
requests run meanwhile (the panel refuses to start otherwise: webpanel.create_app).
"""

from gunicorn import util
from gunicorn.workers.ggevent import GeventWorker

# gunicorn 27 opens a management socket at $HOME/.gunicorn/gunicorn.ctl by default. The
# panel needs none, and every gunicorn on a machine would share that one path.
control_socket_disable = True


class PanelWorker(GeventWorker):
    """gevent: a connection is a greenlet, not a worker or a thread, so clients that
    send their request slowly hold nothing anyone else needs (up to worker_connections
    of them per process). gunicorn's own refusals of a malformed request (400, a
    request line too long 414, headers too large 431) are JSON with the panel's
    security headers, like the panel's errors under /api/."""

    def init_process(self):
        util.write_error = write_json_error  # gunicorn writes its own errors through this
        super().init_process()


def write_json_error(sock, status_int, reason, mesg):
    from webpanel.security import server_refusal  # in the worker, after gevent's patching

    util.write_nonblock(sock, server_refusal(status_int, reason, mesg))


worker_class = PanelWorker
worker_connections = 1000  # open connections per worker process
