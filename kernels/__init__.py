"""CUDA runtime of the course: cupy's RawModule API on a GPU or on a CPU emulator.

    import kernels, numpy as np
    mod = kernels.RawModule(code=src, name_expressions=["layernorm_kernel<256>"])
    f = mod.get_function("layernorm_kernel<256>")
    x = kernels.asarray(np.random.rand(M, N).astype(np.float32))
    f((M,), (256,), (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5)))

``kernels.xp`` is numpy on the emulator and cupy on the GPU backend
(``KERNELS_BACKEND`` = cpu | cupy overrides the automatic choice).
"""
from __future__ import annotations

from ._config import active_checks, backend, check, timeout_s
from .arrays import (asarray, asnumpy, device_name, empty, empty_like, get_xp, synchronize,
                     zeros, zeros_like)
from .counters import LaunchCounters, memory_counters
from .errors import (ArgumentError, CompileError, DeadlockError, DeviceAssertError, KernelError,
                     KernelNotFoundError, KernelTimeout, LaunchError, OutOfBoundsError, RaceError,
                     ShuffleMaskError, SyncCheckError, UnsupportedFeatureError)
from .raw import Function, RawKernel, RawModule
from .signature import Param


def __getattr__(name):
    # ``kernels.xp`` follows the backend chosen now (env vars are read at call time)
    if name == "xp":
        return get_xp()
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")


__all__ = ["RawModule", "RawKernel", "Function", "Param", "backend", "check", "active_checks",
           "timeout_s", "xp", "get_xp", "asarray", "asnumpy", "zeros", "zeros_like", "empty",
           "empty_like", "synchronize", "device_name", "KernelError", "CompileError",
           "ArgumentError", "KernelNotFoundError", "LaunchError", "DeadlockError",
           "ShuffleMaskError", "OutOfBoundsError", "RaceError", "KernelTimeout",
           "DeviceAssertError", "SyncCheckError", "UnsupportedFeatureError", "memory_counters", "LaunchCounters"]
