"""``RawModule`` / ``RawKernel``: cupy's API over either backend.

Every source goes through the NVRTC front end first (compile errors and
parameter types are the same on every machine); then the active backend
(cupy on a GPU, the CPU emulator elsewhere) builds it.  Each launch checks the
launch configuration and the arguments against the kernel's real parameter
types before anything runs.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from . import _config
from .args import check_args, check_launch
from .errors import KernelNotFoundError
from . import nvrtc
from .signature import Param


def _backend_module(backend: str, code: str, options: tuple, names: list,
                    kernels: Dict[str, List[Param]], enable_cooperative_groups: bool = False,
                    lockstep: Optional[Dict[str, dict]] = None):
    if backend == "cupy":
        from ._cupy import CupyModule
        return CupyModule(code, options, names, enable_cooperative_groups)
    try:
        from .cpu import CpuModule
    except ImportError as exc:
        raise RuntimeError(f"the CPU emulator backend is not available: {exc}") from exc
    return CpuModule(code, options, names, kernels, lockstep)


class RawModule:
    """``kernels.RawModule(code=src, options=(...), name_expressions=[...])``, as in cupy."""

    def __init__(self, code: Optional[str] = None, *, path: Optional[str] = None,
                 options: Sequence[str] = (), backend: str = "nvrtc",
                 translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 name_expressions: Optional[Sequence[str]] = None, jitify: bool = False):
        if path is not None or code is None:
            raise TypeError("kernels.RawModule needs CUDA source as code=...; loading "
                            "cubin/ptx files (path=...) is not supported")
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of CUDA source, got {type(code).__name__}")
        if backend != "nvrtc":
            raise ValueError("only backend='nvrtc' is supported (the compiler cupy uses by default)")
        if isinstance(options, str):
            options = (options,)
        self.code = code
        self.options = tuple(options)
        self.name_expressions = list(name_expressions or [])
        self.enable_cooperative_groups = enable_cooperative_groups
        self.backend = _config.backend()
        # NVRTC first: same diagnostics everywhere; raises CompileError
        self.front_end = nvrtc.compile_source(code, self.options, self.name_expressions)
        self._impl = _backend_module(self.backend, code, self.options, self.name_expressions,
                                     dict(self.front_end.kernels),
                                     enable_cooperative_groups=enable_cooperative_groups,
                                     lockstep=self.front_end.lockstep)
        self._functions: Dict[str, Function] = {}

    @property
    def kernels(self) -> Dict[str, List[Param]]:
        """Callable names (name expressions and ``extern "C"`` kernels) -> parameters."""
        return dict(self.front_end.kernels)

    @property
    def compile_warnings(self):
        """NVRTC warnings as ``[(line, severity, text)]`` (never printed)."""
        return list(self.front_end.warnings)

    def get_function(self, name: str) -> "Function":
        if name in self._functions:
            return self._functions[name]
        params = self.front_end.kernels.get(name)
        if params is None:
            raise self._not_found(name)
        fn = Function(name, params, self._impl.get_function(name), self.backend)
        self._functions[name] = fn
        return fn

    def _not_found(self, name: str) -> KernelNotFoundError:
        from .signature import base_name
        known = sorted(self.front_end.kernels)
        base = base_name(name)
        decls = [d for d in self.front_end.decls if d.name == base]
        if decls and decls[0].is_template:
            hint = (f"'{base}' is a template: list the instantiation in name_expressions, e.g. "
                    f"name_expressions=['{base}<256>'], and ask for exactly that name")
            zh = f"{base} 是模板 kernel：请在 name_expressions 中列出具体实例（如 '{base}<256>'），并用同一个名字调用 get_function。"
        elif decls:
            hint = (f"'{base}' has C++ linkage: declare it extern \"C\" or pass "
                    f"name_expressions=['{base}']")
            zh = f"{base} 没有 extern \"C\"，其符号名被 C++ 改编：请加上 extern \"C\"，或在 name_expressions 中列出它。"
        else:
            hint = "check the spelling"
            zh = "源代码中没有这个 __global__ 函数，请检查拼写。"
        return KernelNotFoundError(
            f"no kernel {name!r} in this module ({hint}); callable: {', '.join(known) or 'none'}",
            kernel=name, details=zh)


class Function:
    """A launchable kernel: ``f(grid, block, args, shared_mem=0)`` exactly as in cupy."""

    def __init__(self, name: str, params: List[Param], impl, backend: str):
        self.name = name
        self.params = list(params)
        self._impl = impl
        self.backend = backend

    def __call__(self, grid, block, args, *, shared_mem: int = 0, stream=None,
                 enable_cooperative_groups: bool = False) -> None:
        grid3, block3, shared = check_launch(grid, block, shared_mem, kernel=self.name)
        checked = check_args(self.name, self.params, args, self.backend)
        if self.backend == "cupy":
            self._impl.launch(grid3, block3, checked, shared, stream=stream,
                              enable_cooperative_groups=enable_cooperative_groups)
        else:
            self._impl.launch(grid3, block3, checked, shared)

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<kernels.Function {self.name}({sig}) on {self.backend}>"


class RawKernel(Function):
    """``kernels.RawKernel(code, name, options=(...))``: one kernel of a one-off module."""

    def __init__(self, code: str, name: str, options: Sequence[str] = (), backend: str = "nvrtc",
                 *, translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 jitify: bool = False):
        self.code = code
        self.options = tuple(options) if not isinstance(options, str) else (options,)
        self.module = RawModule(code=code, options=self.options, backend=backend,
                                enable_cooperative_groups=enable_cooperative_groups)
        fn = self.module.get_function(name)
        super().__init__(name, fn.params, fn._impl, fn.backend)


__all__ = ["RawModule", "RawKernel", "Function"]
