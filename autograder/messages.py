"""Student-facing Chinese explanations of runtime diagnostics.

``explain(exc)`` is the one place a ``kernels.errors`` exception (or any other
exception) becomes a Chinese message; it always quotes the user's source line
when the runtime reported one.
"""
from __future__ import annotations

try:  # kernels may be mid-construction; errors.py is stable
    from kernels import errors as kerr
except Exception:  # pragma: no cover
    kerr = None

_WHAT = {
    "compile": ("编译失败", "检查上面编译器指出的行：语法、变量名和类型。"),
    "argument": ("启动参数与 kernel 形参不匹配", "检查参数个数、数组 dtype（float* 需要 float32）以及标量是否用 np.int32/np.float32 包装。"),
    "not_found": ("找不到 kernel 函数", "检查 get_function 的名字：模板 kernel 要写完整的实例名（如 layernorm_kernel<256>），并出现在 name_expressions 里；不要改动 kernel 的名字。"),
    "launch": ("启动配置非法", "检查 grid/block 大小（每个 block 至多 1024 个线程）和动态共享内存大小。"),
    "deadlock": ("死锁：部分线程在 __syncthreads() 等待永远不会到达的线程",
                 "不要把 __syncthreads() 放在只有部分线程会进入的分支里（例如 if (tid == 0) 或提前 return 之后）。"),
    "shuffle_mask": ("warp 洗牌指令的 mask 包含了已退出或未参与的线程",
                     "检查 __shfl_*_sync 的 mask 与实际参与的 lane 是否一致。"),
    "out_of_bounds": ("越界访问（或未对齐访问）", "检查下标上界，例如 col < N、row < M，以及共享内存数组的大小。"),
    "race": ("数据竞争：结果依赖线程执行顺序", "在写共享内存与读共享内存之间加 __syncthreads()，并检查连续两次归约之间的同步。"),
    "timeout": ("kernel 运行超时", "检查循环终止条件（例如 col += BLOCK_SIZE 写成了 col += 0）或是否存在无限等待。"),
    "device_assert": ("设备端 assert 失败", "kernel 内的 assert 条件不成立。"),
    "error": ("运行时错误", ""),
}


def _where(exc) -> str:
    parts = []
    if getattr(exc, "kernel", None):
        parts.append(f"kernel {exc.kernel}")
    if getattr(exc, "line", None):
        parts.append(f"第 {exc.line} 行")
    if getattr(exc, "block", None) is not None:
        parts.append("block (%d, %d, %d)" % tuple(exc.block))
    if getattr(exc, "thread", None) is not None:
        parts.append("thread (%d, %d, %d)" % tuple(exc.thread))
    return "，".join(parts)


def compiler_lines(exc, limit: int = 8) -> list:
    """The compiler's own lines for a CompileError (diagnostics first, else the log)."""
    out = []
    diags = list(getattr(exc, "diagnostics", None) or [])
    # errors first: a warning is rarely why compilation failed
    diags.sort(key=lambda d: 0 if isinstance(d, (tuple, list)) and len(d) == 3 and "error" in str(d[1]) else 1)
    for d in diags:
        try:
            line, sev, text = d
        except (TypeError, ValueError):
            out.append(str(d))
            continue
        out.append(f"  第 {line} 行 {sev}: {text}" if line else f"  {sev}: {text}")
    if not out:
        log = getattr(exc, "log", "") or getattr(exc, "message", "") or str(exc)
        out = ["  " + ln for ln in str(log).splitlines() if ln.strip()]
    return out[:limit]


def explain(exc: BaseException) -> str:
    """A Chinese explanation of ``exc`` that quotes the reported source line."""
    kind = getattr(exc, "kind", None)
    if kind is None or not (kerr and isinstance(exc, kerr.KernelError)):
        if isinstance(exc, AssertionError):
            return f"断言失败：{exc}" if str(exc) else "断言失败"
        if isinstance(exc, MemoryError):
            return "内存不足：数组太大或泄漏。"
        return f"运行出错（{type(exc).__name__}）：{exc}"
    title, advice = _WHAT.get(kind, _WHAT["error"])
    head = title
    where = _where(exc)
    if where:
        head += f"（{where}）"
    lines = [head]
    if kind == "compile":
        lines += compiler_lines(exc)
        if getattr(exc, "source_line", None):
            lines.append(f"  出错的行 {exc.line}: {exc.source_line.strip()}")
    else:
        if getattr(exc, "source_line", None):
            lines.append(f"  {exc.line}: {exc.source_line.strip()}")
        if kind == "argument" and getattr(exc, "param", None):
            lines.append(f"  参数：{exc.param}")
        msg = getattr(exc, "message", "")
        if msg:
            lines.append(f"  运行时报告：{msg}")
    if advice:
        lines.append(f"  建议：{advice}")
    return "\n".join(lines)


def short(exc: BaseException) -> str:
    """One line version for tables: the title plus the quoted source line."""
    full = explain(exc).splitlines()
    first = full[0]
    quoted = [ln.strip() for ln in full[1:] if ln.strip() and not ln.strip().startswith(("建议", "运行时报告"))]
    return first + (f"：{quoted[0]}" if quoted else "")
