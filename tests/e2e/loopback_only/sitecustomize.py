"""A guard for a crawler process under test: no connection outside 127.0.0.0/8 (and ::1).

Put this directory first on PYTHONPATH, and LOOPBACK_ONLY_LOG in the environment: every
Python socket's connect() or connect_ex() to any other address is written there, one line
each, and refused before a packet leaves (ConnectionRefusedError). A test reads the file
to prove that nothing was even tried (tests/e2e/test_intranet.py).
"""

from __future__ import annotations

import ipaddress
import os
import socket

_LOG = os.environ.get("LOOPBACK_ONLY_LOG")


def _outside_loopback(address) -> bool:
    if not isinstance(address, tuple):  # a Unix socket's path
        return False
    try:
        return not ipaddress.ip_address(address[0]).is_loopback
    except ValueError:  # a name: it would be resolved elsewhere first
        return True


def _guarded(connect):
    def guarded(self, address):
        if _outside_loopback(address):
            with open(_LOG, "a") as log:
                log.write(f"{address!r}\n")
            raise ConnectionRefusedError(111, f"the test refuses a connection to {address!r}")
        return connect(self, address)

    return guarded


if _LOG:
    socket.socket.connect = _guarded(socket.socket.connect)
    socket.socket.connect_ex = _guarded(socket.socket.connect_ex)
