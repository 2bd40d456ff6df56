"""Checks made before every launch, on both backends.

cupy passes whatever it is given: a Python float becomes 8 bytes of double, a
float64 array becomes a ``float*`` that reads garbage.  Here such launches stop
with an :class:`ArgumentError` naming the parameter (index, name, C type) and
saying what to do; launch configurations outside CUDA's limits stop with a
:class:`LaunchError`.  Messages are English; ``details`` carries the Chinese
advice shown to students.
"""
from __future__ import annotations

import numbers
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import ArgumentError, LaunchError
from .signature import Param

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2 ** 31 - 1, 65535, 65535)
MAX_DYNAMIC_SHARED = 227 * 1024       # opt-in maximum per block on sm_80/sm_90
DEFAULT_DYNAMIC_SHARED = 48 * 1024    # without opting in (cupy: max_dynamic_shared_size_bytes)

Dim3 = Tuple[int, int, int]


# --------------------------------------------------------------------------- launch config

def _dim3(value, what: str, kernel: Optional[str]) -> Dim3:
    if isinstance(value, (bool, np.bool_)):
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}",
                          kernel=kernel, details=f"{what} 应为整数或 1~3 个整数组成的元组。")
    if isinstance(value, numbers.Integral):
        dims = (int(value),)
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in value):
        dims = tuple(int(v) for v in value)
    else:
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}",
                          kernel=kernel,
                          details=f"{what} 应为整数或 1~3 个整数组成的元组，例如 (M,) 或 (32, 8)。"
                                  "如果是除法结果，请用 // 或 (n + b - 1) // b 得到整数。")
    dims = dims + (1,) * (3 - len(dims))
    for axis, d in zip("xyz", dims):
        if d <= 0:
            raise LaunchError(f"{what}.{axis} = {d}: every launch dimension must be >= 1",
                              kernel=kernel,
                              details=f"{what}.{axis} 为 {d}：CUDA 不允许大小为 0 或负数的维度"
                                      "（cudaErrorInvalidConfiguration）。输入为空时请在 Python 里直接跳过启动。")
    return dims  # type: ignore[return-value]


def check_launch(grid, block, shared_mem=0, *, kernel: Optional[str] = None
                 ) -> Tuple[Dim3, Dim3, int]:
    """Normalise ``grid``/``block`` to 3-tuples and enforce CUDA's limits."""
    g = _dim3(grid, "grid", kernel)
    b = _dim3(block, "block", kernel)
    threads = b[0] * b[1] * b[2]
    for axis, d, lim in zip("xyz", b, MAX_BLOCK):
        if d > lim:
            raise LaunchError(f"block.{axis} = {d} exceeds the limit {lim}", kernel=kernel,
                              details=f"block.{axis} = {d} 超过上限 {lim}（x、y ≤ 1024，z ≤ 64）。")
    if threads > MAX_THREADS_PER_BLOCK:
        raise LaunchError(f"block {b} has {threads} threads; at most {MAX_THREADS_PER_BLOCK} per block",
                          kernel=kernel,
                          details=f"一个 block 最多 1024 个线程，而 {b} 共 {threads} 个。请减小 block，增大 grid。")
    for axis, d, lim in zip("xyz", g, MAX_GRID):
        if d > lim:
            raise LaunchError(f"grid.{axis} = {d} exceeds the limit {lim}", kernel=kernel,
                              details=f"grid.{axis} = {d} 超过上限 {lim}（grid.y、grid.z ≤ 65535）。"
                                      "大的维度请放在 grid.x，或在 kernel 内用 grid-stride 循环。")
    if isinstance(shared_mem, (bool, np.bool_)) or not isinstance(shared_mem, numbers.Integral):
        raise LaunchError(f"shared_mem must be an int (bytes), got {shared_mem!r}", kernel=kernel,
                          details="shared_mem 是动态共享内存的字节数，必须是整数。")
    shared_mem = int(shared_mem)
    if shared_mem < 0:
        raise LaunchError(f"shared_mem = {shared_mem} is negative", kernel=kernel,
                          details="shared_mem 不能为负数。")
    if shared_mem > MAX_DYNAMIC_SHARED:
        raise LaunchError(f"shared_mem = {shared_mem} bytes exceeds the {MAX_DYNAMIC_SHARED} bytes "
                          "(227 KiB) of dynamic shared memory a block may have", kernel=kernel,
                          details=f"动态共享内存 {shared_mem} 字节超过每个 block 的上限 227 KiB"
                                  f"（{MAX_DYNAMIC_SHARED} 字节）。请减小 tile 或改用多个 block。")
    return g, b, shared_mem


# --------------------------------------------------------------------------- arguments

def _is_cupy_array(obj) -> bool:
    return type(obj).__module__.startswith("cupy") and hasattr(obj, "data") and hasattr(obj, "dtype")


def _where(obj) -> str:
    if isinstance(obj, np.ndarray):
        return "a numpy (host) array"
    if _is_cupy_array(obj):
        return "a cupy (GPU) array"
    return f"a {type(obj).__module__}.{type(obj).__name__}"


def _accepted_dtypes(p: Param) -> List[np.dtype]:
    if p.dtype is None:
        return []
    out = [p.dtype]
    base = p.ctype.replace("const", "").replace("*", "").split()
    if base and base[0] in ("__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"):
        out.append(np.dtype(np.uint16))  # raw bf16 bits are always accepted
        try:
            import ml_dtypes
            out.append(np.dtype(ml_dtypes.bfloat16))
        except ImportError:
            pass
    if p.ctype.replace("const", "").replace("*", "").strip() == "char":
        out.append(np.dtype(np.uint8))  # plain char buffers are byte buffers either way
    seen, uniq = set(), []
    for d in out:
        if d.str not in seen:
            seen.add(d.str)
            uniq.append(d)
    return uniq


def _dtype_name(d: np.dtype) -> str:
    return "bfloat16" if d.name == "bfloat16" else d.name


def _fail(kernel, p: Param, i: int, msg: str, zh: str):
    raise ArgumentError(f"{p.describe(i)}: {msg}", param=p.name, index=i, kernel=kernel,
                        details=f"第 {i} 个参数 {p.name}（{p.ctype}）：{zh}")


def _address(arr) -> int:
    if isinstance(arr, np.ndarray):
        return int(arr.ctypes.data)
    return int(arr.data.ptr)


def _check_pointer(kernel, p: Param, i: int, a, backend: str):
    device_arr = _is_cupy_array(a)
    if not isinstance(a, np.ndarray) and not device_arr:
        if isinstance(a, (numbers.Number, np.generic)):
            _fail(kernel, p, i, f"a pointer parameter needs an array, got the scalar {a!r}",
                  "这是指针参数，需要传入数组（kernels.asarray(...) 得到的设备数组），而不是标量。")
        _fail(kernel, p, i, f"a pointer parameter needs an array, got {_where(a)}",
              "这是指针参数，请传入 kernels.asarray(...) / kernels.zeros(...) 得到的数组。")
    if backend == "cupy" and not device_arr:
        _fail(kernel, p, i, "got a numpy (host) array but kernels run on the GPU; "
                            "copy it with kernels.asarray(x)",
              "这是主机端 numpy 数组，GPU 无法访问。请先用 d = kernels.asarray(x) 拷到设备上。")
    if backend == "cpu" and device_arr:
        _fail(kernel, p, i, "got a cupy array but the CPU emulator backend is active; "
                            "use kernels.asarray / kernels.asnumpy",
              "这是 cupy 数组，但当前是 CPU 模拟后端。请用 kernels.asarray(...) 创建数组。")
    if not a.flags.c_contiguous:
        _fail(kernel, p, i, "array is not C-contiguous (a transposed or strided view); "
                            "pass kernels.xp.ascontiguousarray(x)",
              "数组不是 C 连续的（转置或切片视图），kernel 按连续内存读取会读错元素。"
              "请传入 kernels.xp.ascontiguousarray(x)。")
    accepted = _accepted_dtypes(p)
    if accepted and a.dtype not in accepted:
        want = " or ".join(_dtype_name(d) for d in accepted)
        _fail(kernel, p, i, f"expected an array of {want}, got {_dtype_name(a.dtype)}",
              f"需要 {want} 数组，实际是 {_dtype_name(a.dtype)}。请用 x.astype(numpy.{accepted[0].name}) 转换"
              "（例如 float* 对应 float32，而 numpy 默认是 float64）。")
    if p.lanes > 1 and p.dtype is not None:
        if a.size % p.lanes:
            _fail(kernel, p, i, f"{a.size} elements cannot be viewed as {p.ctype.rstrip('*')} "
                                f"({p.lanes} per vector)",
                  f"向量类型指针要求元素个数是 {p.lanes} 的倍数，实际有 {a.size} 个。")
        if p.align and _address(a) % p.align:
            _fail(kernel, p, i, f"array address is not {p.align}-byte aligned as "
                                f"{p.ctype.rstrip('*')} requires",
                  f"向量类型需要 {p.align} 字节对齐，这个数组（可能是偏移切片）地址未对齐。请传入新建的连续数组。")
    if backend == "cpu" and not p.is_const and not a.flags.writeable:
        _fail(kernel, p, i, "array is read-only but the parameter is a non-const pointer",
              "数组是只读的，而参数是非 const 指针（kernel 可能写入）。请传入 x.copy()。")


# how cupy passes Python scalars (cupy/_core/_scalar.pyx)
_PY_AS_C = {bool: "a 1-byte bool", int: "an 8-byte long long", float: "an 8-byte double",
            complex: "a 16-byte complex<double>"}
_PY_AS_C_ZH = {bool: "1 字节 bool", int: "8 字节 long long", float: "8 字节 double",
               complex: "16 字节 complex<double>"}


def _python_scalar_exact(a, want: Optional[np.dtype]):
    """The numpy scalar cupy would pass for Python scalar ``a`` when that is exactly the
    parameter's type (bool -> bool, int -> 64-bit int, float -> double); else None."""
    if want is None:
        return None
    if type(a) is bool and want == np.bool_:
        return np.bool_(a)
    if type(a) is int and want == np.int64 and -2 ** 63 <= a < 2 ** 63:
        return np.int64(a)
    if type(a) is int and want == np.uint64 and 0 <= a < 2 ** 63:
        return np.uint64(a)
    if type(a) is float and want == np.float64:
        return np.float64(a)
    return None


def _check_scalar(kernel, p: Param, i: int, a):
    """Returns the argument to pass (Python scalars cupy passes exactly become numpy)."""
    if isinstance(a, np.ndarray) or _is_cupy_array(a):
        _fail(kernel, p, i, f"a scalar parameter needs a numpy scalar, got {_where(a)}",
              "这是标量参数，不能传数组。请传 numpy 标量，例如 numpy.int32(n)。")
    want = p.dtype
    if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
        exact = _python_scalar_exact(a, want)
        if exact is not None:
            return exact
        ctor = f"numpy.{want.name}({a!r})" if want is not None else "a numpy scalar"
        as_c = _PY_AS_C[type(a)]
        _fail(kernel, p, i, f"got a Python {type(a).__name__} {a!r}; cupy would pass it as "
                            f"{as_c}, not a {p.ctype}. Wrap it: {ctor}",
              f"传入的是 Python {type(a).__name__}，cupy 会按 {_PY_AS_C_ZH[type(a)]} 传递，与 {p.ctype} 不符，"
              f"kernel 会读到错误的值。请写成 {ctor}。")
    if not isinstance(a, np.generic):
        _fail(kernel, p, i, f"expected a numpy scalar, got {_where(a)}",
              "标量参数需要 numpy 标量，例如 numpy.float32(eps)。")
    if p.lanes > 1:
        # a vector passed by value (float4 v): the bytes of a structured scalar
        if not isinstance(a, np.void) or a.nbytes != p.size:
            fields = ", ".join(f"('{c}', '{want.str}')" for c in "xyzw"[:p.lanes])
            example = f"numpy.array(({', '.join(['0'] * p.lanes)},), dtype=[{fields}])[()]"
            _fail(kernel, p, i, f"a {p.ctype} passed by value needs a {p.size}-byte numpy "
                                f"structured scalar, e.g. {example}",
                  f"按值传递的 {p.ctype} 需要 {p.size} 字节的 numpy 结构化标量，例如 {example}；"
                  "更常见的做法是改为传指针。")
        return a
    if want is None:
        if p.size and a.nbytes != p.size:
            _fail(kernel, p, i, f"expected {p.size} bytes, got {a.nbytes}",
                  f"参数需要 {p.size} 字节，实际传入 {a.nbytes} 字节。")
        return a
    accepted = _accepted_dtypes(p)
    if a.dtype not in accepted:
        _fail(kernel, p, i, f"expected numpy.{want.name}, got numpy.{a.dtype.name}; "
                            f"wrap it: numpy.{want.name}(value)",
              f"需要 numpy.{want.name}，实际是 numpy.{a.dtype.name}。请写成 numpy.{want.name}(...)。")
    return a


def check_args(kernel: str, params: Sequence[Param], args, backend: str) -> list:
    """Validate ``args`` against ``params``; returns them as a list."""
    if not isinstance(args, (tuple, list)):
        raise ArgumentError(f"args must be a tuple of kernel arguments, got {type(args).__name__}",
                            kernel=kernel,
                            details="第三个参数应为元组，例如 f(grid, block, (x, y, numpy.int32(n)))。")
    args = list(args)
    if len(args) != len(params):
        sig = ", ".join(f"{p.ctype} {p.name}" for p in params)
        raise ArgumentError(f"kernel takes {len(params)} arguments ({sig}), got {len(args)}",
                            kernel=kernel,
                            details=f"kernel 需要 {len(params)} 个参数，实际传了 {len(args)} 个。"
                                    f"参数表：({sig})")
    for i, (p, a) in enumerate(zip(params, args)):
        if p.is_pointer:
            _check_pointer(kernel, p, i, a, backend)
        else:
            args[i] = _check_scalar(kernel, p, i, a)
    return args


__all__ = ["check_launch", "check_args", "MAX_DYNAMIC_SHARED", "DEFAULT_DYNAMIC_SHARED"]
