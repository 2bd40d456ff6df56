"""GPU backend: a thin wrapper over ``cupy.RawModule`` (same code, options, name expressions).

The NVRTC front end has already accepted the source, so cupy compile errors are
rare (a different architecture or header version); they are mapped to the same
:class:`CompileError` format all the same.
"""
from __future__ import annotations

from typing import Sequence, Tuple

from .args import DEFAULT_DYNAMIC_SHARED
from .errors import CompileError, KernelNotFoundError
from . import nvrtc


def cupy_options(options: Sequence[str]) -> Tuple[str, ...]:
    """The user's options plus the front end's C++ standard, so both compile the same
    language (cupy's own default standard differs between versions)."""
    opts = tuple(str(o) for o in options)
    if not any(o.startswith(("-std=", "--std=")) for o in opts):
        opts += (nvrtc.DEFAULT_STD,)
    return opts


class CupyModule:
    def __init__(self, code: str, options: Sequence[str], name_expressions: Sequence[str],
                 enable_cooperative_groups: bool = False):
        import cupy
        self._cupy = cupy
        self.code = code
        names = tuple(name_expressions) if name_expressions else None
        try:
            self._mod = cupy.RawModule(code=code, options=cupy_options(options),
                                       name_expressions=names,
                                       enable_cooperative_groups=enable_cooperative_groups)
            self._mod.compile()  # cupy compiles lazily; compile errors belong here
        except cupy.cuda.compiler.CompileException as exc:
            raise _map_compile_error(exc, code) from None

    def get_function(self, name: str) -> "CupyFunction":
        try:
            fn = self._mod.get_function(name)
            fn.kernel  # resolve the symbol now (cupy may defer it to the first call)
            return CupyFunction(fn)
        except self._cupy.cuda.driver.CUDADriverError as exc:
            raise KernelNotFoundError(f"cupy cannot find kernel {name!r}: {exc}", kernel=name) from None


class CupyFunction:
    def __init__(self, fn):
        self.fn = fn

    def launch(self, grid, block, args, shared_mem: int = 0, stream=None,
               enable_cooperative_groups: bool = False) -> None:
        if shared_mem > DEFAULT_DYNAMIC_SHARED:
            # opt in to large dynamic shared memory, as a CUDA C++ program would
            self.fn.max_dynamic_shared_size_bytes = shared_mem
        # a cooperative launch is the module's setting (cupy.RawModule(enable_cooperative_groups=True)); cupy 14
        # rejects the keyword again at the call (measured on the H200)
        self.fn(grid, block, tuple(args), shared_mem=shared_mem, stream=stream)


def _map_compile_error(exc, code: str) -> CompileError:
    log = exc.get_message() if hasattr(exc, "get_message") else str(exc)
    return nvrtc.compile_error(log, code, headline="CUDA source does not compile (cupy)")


__all__ = ["CupyModule", "CupyFunction", "cupy_options"]
