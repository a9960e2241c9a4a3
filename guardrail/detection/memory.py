"""Give freed heap memory back to the operating system after loading large models.

Loading py3langid's model and the embedding weights allocates and frees tens of megabytes of
temporaries; glibc keeps them mapped, so the process looks 15-20 MB larger than it is. Elsewhere
(another C library, another OS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


def release_freed_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError:
        return None
    return function
