"""Student-facing Chinese explanations of runtime diagnostics.

``explain(exc)`` is the one place a ``kernels.errors`` exception (or any other
exception) becomes a Chinese message; it always quotes the user's source line
when the runtime reported one.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional

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



# ----------------------------------------------------------------------------- compile problems, with a caret

class Problem(NamedTuple):
    """One thing to show at a place in the student's source: 1-based line, 0-based column (None: no caret)."""
    line: Optional[int]
    col: Optional[int]
    width: int
    text: str


NOT_FILLED = "这里还没有填空"

# NVRTC's wording -> Chinese; the quoted token is kept. Unknown messages are shown as the compiler wrote them.
_COMPILER_ZH = [
    (re.compile(r'identifier "(.+?)" is undefined'), lambda m: f"标识符 {m.group(1)} 未定义（拼写错了，或没有声明）"),
    (re.compile(r'expected a "(.+?)"'), lambda m: f"这里缺少 \u201c{m.group(1)}\u201d"),
    (re.compile(r"expected an expression"), lambda m: "这里缺少一个表达式"),
    (re.compile(r"expected an identifier"), lambda m: "这里缺少一个名字（标识符）"),
    (re.compile(r"too few arguments in function call"), lambda m: "函数调用的参数太少"),
    (re.compile(r"too many arguments in function call"), lambda m: "函数调用的参数太多"),
    (re.compile(r"expression must be a modifiable lvalue"), lambda m: "赋值号左边不能被赋值（例如它是 const）"),
    (re.compile(r'"(.+?)" has already been declared in the current scope'), lambda m: f"{m.group(1)} 在这里重复声明了"),
    (re.compile(r'no operator "(.+?)" matches these operands'), lambda m: f"运算符 {m.group(1)} 不能用于这些类型的操作数"),
    (re.compile(r'no instance of overloaded function "(.+?)" matches the argument list'),
     lambda m: f"没有与这些参数类型匹配的 {m.group(1)}"),
    (re.compile(r'a value of type "(.+?)" cannot be (?:used to initialize|assigned to) an entity of type "(.+?)"'),
     lambda m: f"类型不匹配：{m.group(1)} 不能赋给 {m.group(2)}"),
    (re.compile(r"unrecognized token"), lambda m: "无法识别的符号"),
]


def compiler_text_zh(text: str) -> str:
    for pat, fn in _COMPILER_ZH:
        m = pat.search(text)
        if m:
            return fn(m)
    return f"编译器报告：{text}"


def blank_problems(source: str) -> List[Problem]:
    """Every untouched ``______`` as a problem with a caret under it."""
    from .cuda_cell import blanks, BLANK
    return [Problem(line, col, len(BLANK), NOT_FILLED) for line, col in blanks(source)]


def _code_part(line: str) -> str:
    return re.sub(r"//.*$", "", line).rstrip()


def compile_problems(exc, source: Optional[str], limit: int = 3) -> List[Problem]:
    """The compiler's errors placed on the student's lines (line numbers of the CUDA cell)."""
    lines = (source or "").splitlines()
    diags = list(getattr(exc, "diagnostics", None) or [])
    errors = [d for d in diags if isinstance(d, (tuple, list)) and len(d) == 3 and "error" in str(d[1])]
    out: List[Problem] = []
    for line, _sev, text in (errors or [d for d in diags if isinstance(d, (tuple, list)) and len(d) == 3]):
        text = str(text)
        line = int(line) if line else None
        col, width = None, 1
        m = re.search(r'identifier "(.+?)" is undefined', text)
        if m and m.group(1).startswith("______"):
            text_zh = NOT_FILLED
        else:
            text_zh = compiler_text_zh(text)
        if line and 0 < line <= len(lines):
            src = lines[line - 1]
            q = re.search(r'"(.+?)"', text)
            if re.search(r'expected a "[;)\]}]"', text):
                # the compiler names the line where the next token stands; the ';' belongs after the previous code
                j = line - 2
                while j >= 0 and not _code_part(lines[j]).strip():
                    j -= 1
                prev = _code_part(lines[j]) if j >= 0 else ""
                if j >= 0 and not prev.endswith((";", "{", "}", ",", ":", "(")) and not prev.lstrip().startswith("#"):
                    line, col = j + 1, len(prev)
                else:
                    col = len(src) - len(src.lstrip())
            elif q and (hit := re.search((r"\b" + re.escape(q.group(1)) + r"\b") if q.group(1).isidentifier()
                                          else re.escape(q.group(1)), _code_part(src))):
                col, width = hit.start(), len(q.group(1))
            else:
                col, width = len(src) - len(src.lstrip()), max(1, len(src.strip()))
        elif not line:
            text_zh = compiler_text_zh(text)
        if (line, text_zh) not in [(p.line, p.text) for p in out]:
            out.append(Problem(line, col, width, text_zh))
        if len(out) >= limit:
            break
    if not out:
        log = getattr(exc, "log", "") or str(exc)
        out.append(Problem(None, None, 0, "编译器报告：" + " / ".join(ln.strip() for ln in str(log).splitlines()
                                                                   if ln.strip())[:400]))
    return out


def compile_advice(problems: List[Problem]) -> str:
    if problems and all(p.text == NOT_FILLED for p in problems):
        return "把 ______ 换成你的代码，再运行一次 CUDA 单元格和编译单元格。"
    return "改好上面标出的行（行号就是 CUDA 单元格里的行号），再运行一次 CUDA 单元格和编译单元格。"


# ----------------------------------------------------------------------------- runtime diagnostics

def diagnostic_title(kind: Optional[str]) -> str:
    return _WHAT.get(kind or "error", _WHAT["error"])[0]


def diagnostic_advice(kind: Optional[str]) -> str:
    return _WHAT.get(kind or "error", _WHAT["error"])[1]


def where_text(diag: Dict[str, Any]) -> str:
    parts = []
    if diag.get("kernel"):
        parts.append(f"kernel {diag['kernel']}")
    if diag.get("line"):
        parts.append(f"第 {diag['line']} 行")
    if diag.get("block") is not None:
        parts.append("block (%d, %d, %d)" % tuple(diag["block"]))
    if diag.get("thread") is not None:
        parts.append("thread (%d, %d, %d)" % tuple(diag["thread"]))
    return "位置：" + "，".join(parts) if parts else ""


_OOB = re.compile(r"out-of-bounds (read|write|access) of (\d+) bytes at 0x[0-9a-f]+: (.*)")
_OOB_ARRAY = re.compile(r"array '(.+?)' \((\d+) bytes\), (\d+) bytes (past the end|before the start)")
_OOB_VAR = re.compile(r"shared/global variable '(.+?)' \((\d+) bytes past its end\)")
_DIVERGENT = re.compile(r"divergent __syncthreads\(\): (\d+) thread\(s\) wait at line (\d+), but (\d+) thread\(s\) "
                        r"of the block have already exited")
_HEX = re.compile(r"\b0x[0-9a-f]{6,}\b")


def runtime_fact(diag: Dict[str, Any]) -> str:
    """What the runtime observed, in Chinese where we know the wording; addresses dropped."""
    msg = str(diag.get("message") or "")
    m = _OOB.search(msg)
    if m:
        verb = {"read": "读取", "write": "写入"}.get(m.group(1), "访问")
        what = m.group(3)
        a = _OOB_ARRAY.search(what)
        if a:
            side = "末尾之后" if a.group(4) == "past the end" else "开头之前"
            return (f"越界{verb} {m.group(2)} 字节：数组 {a.group(1)} 共 {a.group(2)} 字节，"
                    f"访问落在它{side}第 {a.group(3)} 字节处")
        v = _OOB_VAR.search(what)
        if v:
            return f"越界{verb} {m.group(2)} 字节：变量 {v.group(1)}（超出末尾 {v.group(2)} 字节）"
        if "dynamic shared memory" in what:
            return f"越界{verb}：动态共享内存（extern __shared__）超出了启动时给的 shared_mem 字节数"
        return f"越界{verb} {m.group(2)} 字节"
    d = _DIVERGENT.search(msg)
    if d:
        return (f"{d.group(1)} 个线程停在第 {d.group(2)} 行的 __syncthreads()，但本 block 另外 {d.group(3)} 个线程"
                f"已经退出，永远到不了这个屏障")
    if not msg:
        return ""
    msg = _HEX.sub("…", msg)
    return "运行时报告：" + (msg if len(msg) <= 240 else msg[:237] + "…")
