"""Array helpers that read the same on both backends (numpy on cpu, cupy on GPU)."""
from __future__ import annotations

import platform

import numpy as np

from . import _config


def _cupy():
    import cupy
    return cupy


def get_xp():
    """``numpy`` on the CPU emulator, ``cupy`` on the GPU backend."""
    return _cupy() if _config.backend() == "cupy" else np


def asarray(a, dtype=None):
    """Host -> device: a cupy array on the GPU backend, a C-contiguous numpy array
    (no copy when already one) on the CPU emulator."""
    if _config.backend() == "cupy":
        return _cupy().ascontiguousarray(_cupy().asarray(a, dtype=dtype))
    if type(a).__module__.startswith("cupy"):
        a = a.get()
    return np.ascontiguousarray(np.asarray(a, dtype=dtype))


def asnumpy(a):
    """Device -> host numpy array (works for numpy input too)."""
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def zeros(shape, dtype=np.float32):
    return get_xp().zeros(shape, dtype=dtype)


def empty(shape, dtype=np.float32):
    return get_xp().empty(shape, dtype=dtype)


def empty_like(a, dtype=None):
    xp = get_xp()
    return xp.empty(a.shape, dtype=dtype or a.dtype)


def zeros_like(a, dtype=None):
    xp = get_xp()
    return xp.zeros(a.shape, dtype=dtype or a.dtype)


def synchronize() -> None:
    """Wait for queued GPU work (launches on the CPU emulator are synchronous)."""
    if _config.backend() == "cupy":
        _cupy().cuda.Device().synchronize()


def device_name() -> str:
    """``"NVIDIA H200"`` on the GPU backend, ``"CPU emulator (x86_64)"`` otherwise."""
    if _config.backend() == "cupy":
        cupy = _cupy()
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    return f"CPU emulator ({platform.machine() or 'unknown'})"


__all__ = ["get_xp", "asarray", "asnumpy", "zeros", "empty", "empty_like", "zeros_like",
           "synchronize", "device_name"]
