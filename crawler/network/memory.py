"""Memory a process gives back to the system: its name caches, its garbage, glibc's malloc_trim.

The worker calls it after a burst (crawler/extensions/giveback.py), and its reader process
after each heavy response (crawler/network/reader.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

from crawler.core import hostnames, suffixes, urls

# Modules whose caches (functools.lru_cache, up to 65,536 names each) hold names.
NAME_CACHES = (suffixes, hostnames, urls)


def _malloc_trim():
    """glibc's malloc_trim, or None (another C library: musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


MALLOC_TRIM = _malloc_trim()


def clear_name_caches() -> None:
    """Empty every name cache: after a flood they hold its names, one entry per name."""
    for module in NAME_CACHES:
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if clear is not None:
                clear()


def give_back(flooded: bool) -> None:
    """Empty the name caches after a flood, collect every generation, then hand free heap
    pages back to the system."""
    if flooded:
        clear_name_caches()
    gc.collect()
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)
