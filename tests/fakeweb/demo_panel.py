"""`make demo`'s panel: refused before anything starts when its address is taken, served
by gunicorn on loopback until Ctrl-C, and stopped (tests/fakeweb/demo.py runs the rest)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request

from crawler.runner.run import bind_problem

from .handle import PROJECT_ROOT

PANEL_STARTUP = 30  # seconds


def serving() -> bool:
    """Whether the demo serves its panel: unless DEMO_NO_SERVE=1, when it is installed."""
    installed = importlib.util.find_spec("webpanel") is not None
    return installed and os.environ.get("DEMO_NO_SERVE") != "1"


def bind_refused(bind: str) -> str | None:
    """Why the panel could not listen on `bind` (make run's own words), or None."""
    return bind_problem(bind, "DEMO_BIND", "DEMO_BIND={} make demo")


def serve_panel(bind: str) -> subprocess.Popen | None:
    """Start gunicorn with the panel on loopback; wait until /healthz answers."""
    if busy := bind_refused(bind):  # taken since the demo started
        print(f"\nerror: {busy}")
        return None
    env = dict(os.environ)
    env.setdefault("SESSION_COOKIE_SECURE", "0")  # plain HTTP on loopback
    args = [sys.executable, "-m", "gunicorn", "--bind", bind, "--workers", "2"]
    proc = subprocess.Popen(
        [*args, "webpanel:create_app()"], cwd=PROJECT_ROOT, env=env, start_new_session=True
    )
    deadline = time.monotonic() + PANEL_STARTUP
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://{bind}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return proc
            except OSError:
                time.sleep(0.3)
    except BaseException:  # Ctrl-C while it starts: do not leave it behind
        stop(proc)
        raise
    stop(proc)
    print("\nthe panel did not come up; see gunicorn's output above")
    return None


def stop(proc: subprocess.Popen, how: signal.Signals = signal.SIGTERM) -> None:
    """Stop a child gracefully (gunicorn: SIGTERM), killing it after 30 s."""
    if proc.poll() is None:
        proc.send_signal(how)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for_ctrl_c(panel: subprocess.Popen) -> None:
    try:
        while panel.poll() is None:
            time.sleep(0.5)
        print(f"\nthe panel exited ({panel.returncode})")
    except KeyboardInterrupt:
        print("\nstopping the panel and the fake internet…")
