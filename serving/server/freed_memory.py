"""Giving the memory a large request freed back to the system: glibc's `malloc_trim`.

A REST body of megabytes is parsed into many Python objects and arrays; once answered they are
freed, but glibc's allocator keeps the pages in its arenas (one per thread that allocated), so the
server's resident memory stays at its high-water mark after a burst, or creeps up from burst to burst
as the workers' arenas fragment. `malloc_trim(0)` hands every free page of every arena back. It takes
about a millisecond, so the REST front end calls it once the bodies answered since the last call add up
to 1 MiB, when no other body is being decoded (`serving.server.rest_service`). Where the C library is
not glibc (musl, macOS) it does nothing.

Example:
    >>> give_back_freed_memory() in (True, False)
    True
"""

from __future__ import annotations

import ctypes
import ctypes.util


def _malloc_trim():
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), "malloc_trim", None)
    except OSError:
        return None


_MALLOC_TRIM = _malloc_trim()


def give_back_freed_memory() -> bool:
    """glibc's malloc_trim(0): whether it gave memory back (False where there is no glibc)."""
    return bool(_MALLOC_TRIM(0)) if _MALLOC_TRIM is not None else False
