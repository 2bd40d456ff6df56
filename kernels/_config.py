"""Runtime settings: backend choice, checking modes and the kernel time limit.

Environment variables (read at call time, so tests can monkeypatch them):

* ``KERNELS_BACKEND`` = ``cpu`` | ``cupy`` (default: ``cupy`` when cupy imports
  and sees a GPU, else ``cpu``).
* ``KERNELS_CHECK`` = comma list of ``memcheck``, ``racecheck``, ``synccheck`` (like
  compute-sanitizer's tools).  ``kernels.check(...)`` adds to it for a block.
* ``KERNELS_TIMEOUT`` = seconds one launch may run on the CPU emulator.
"""
from __future__ import annotations

import contextlib
import os
import threading
from functools import lru_cache

CHECKS = ("memcheck", "racecheck", "synccheck")
DEFAULT_TIMEOUT_S = 20.0

_local = threading.local()


@lru_cache(maxsize=1)
def _gpu_available() -> bool:
    try:
        import cupy  # noqa: F401
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def backend() -> str:
    """``"cupy"`` or ``"cpu"``: where kernels run in this process."""
    want = os.environ.get("KERNELS_BACKEND", "").strip().lower()
    if want in ("cpu", "emu", "emulator"):
        return "cpu"
    if want in ("cupy", "gpu", "cuda"):
        if not _gpu_available():
            raise RuntimeError("KERNELS_BACKEND=cupy but cupy cannot see a GPU")
        return "cupy"
    if want:
        raise ValueError(f"KERNELS_BACKEND={want!r}: expected 'cpu' or 'cupy'")
    return "cupy" if _gpu_available() else "cpu"


def _parse(text: str):
    out = set()
    for part in text.replace(";", ",").split(","):
        part = part.strip().lower()
        if not part:
            continue
        if part not in CHECKS:
            raise ValueError(f"unknown check {part!r}; known: {', '.join(CHECKS)}")
        out.add(part)
    return out


def active_checks() -> frozenset:
    """The checks on for launches made now (environment + ``check()`` blocks)."""
    extra = getattr(_local, "stack", [])
    active = _parse(os.environ.get("KERNELS_CHECK", ""))
    for s in extra:
        active |= s
    return frozenset(active)


@contextlib.contextmanager
def check(*names: str):
    """Turn on costlier checks for launches in this block, e.g.
    ``with kernels.check("memcheck", "racecheck"): f(grid, block, args)``."""
    wanted = _parse(",".join(names))
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(wanted)
    try:
        yield frozenset(wanted)
    finally:
        stack.pop()


def timeout_s() -> float:
    """Seconds one CPU-emulated launch may run before ``KernelTimeout``."""
    raw = os.environ.get("KERNELS_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    value = float(raw)
    if value <= 0:
        raise ValueError("KERNELS_TIMEOUT must be a positive number of seconds")
    return value
