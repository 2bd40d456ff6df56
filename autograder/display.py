"""What the student sees: HTML panels and tables (with a text/plain twin), and the
exception display that turns an expected failure into a short Chinese panel.

Everything here only formats; deciding what is wrong lives in ``messages`` (compile
and runtime diagnostics) and in the grading engine. No emoji anywhere: a machine
without an emoji font shows them as empty boxes; badges are styled text.
"""
from __future__ import annotations

import html
import unicodedata
from typing import Any, Dict, Iterable, List, Optional, Sequence

from . import messages

_COLORS = {"ok": ("#1a7f37", "#dafbe1"), "fail": ("#cf222e", "#ffebe9"), "todo": ("#6e7781", "#f6f8fa"),
           "warn": ("#9a6700", "#fff8c5"), "info": ("#0969da", "#ddf4ff")}
_FONT = ("font-family: var(--jp-ui-font-family, system-ui), 'Noto Sans CJK SC', 'WenQuanYi Zen Hei', "
         "'Microsoft YaHei', 'PingFang SC', sans-serif;")
_MONO = "font-family: var(--jp-code-font-family, monospace), 'WenQuanYi Zen Hei Mono', monospace;"


class StudentError(Exception):
    """An expected failure with a Chinese message for the student (shown as a panel, no traceback)."""

    def __init__(self, message: str, title: str = "还不能运行"):
        self.title = title
        super().__init__(message)


# ----------------------------------------------------------------------------- primitives

def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def badge(text: str, kind: str = "ok") -> str:
    fg, bg = _COLORS[kind]
    return (f'<span style="display:inline-block;padding:0 .5em;border-radius:.8em;border:1px solid {fg};'
            f'color:{fg};background:{bg};font-weight:600;white-space:nowrap">{esc(text)}</span>')


def text_width(s: str) -> int:
    """Display width of ``s`` in a monospace terminal (CJK characters count 2)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in str(s))


def _pad(s: str, width: int) -> str:
    return str(s) + " " * max(0, width - text_width(s))


def text_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table whose columns line up with CJK text (east-asian width)."""
    rows = [[str(c) for c in r] for r in rows]
    heads = [str(h) for h in headers]
    widths = [max([text_width(h)] + [text_width(r[i]) for r in rows if i < len(r)]) for i, h in enumerate(heads)]
    line = lambda cells: "  ".join(_pad(c, w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(heads), line(["-" * w for w in widths])] + [line(r) for r in rows])


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], raw_cols: Sequence[int] = ()) -> str:
    """An HTML table; cells in ``raw_cols`` are HTML already, the rest are escaped."""
    th = "".join(f'<th style="text-align:left;padding:2px 10px;border-bottom:1px solid #d0d7de">{esc(h)}</th>'
                 for h in headers)
    body = []
    for r in rows:
        tds = "".join(f'<td style="text-align:left;padding:2px 10px;vertical-align:top">'
                      f'{c if i in raw_cols else esc(c)}</td>' for i, c in enumerate(r))
        body.append(f"<tr>{tds}</tr>")
    return (f'<table style="border-collapse:collapse;{_FONT}margin:4px 0"><thead><tr>{th}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def show(html_text: str, text: str, extra: Optional[Dict[str, Any]] = None) -> None:
    """Display ``html_text`` (text/plain ``text`` for other front ends); plain print outside IPython."""
    try:
        from IPython import get_ipython
        ip = get_ipython()
    except Exception:
        ip = None
    if ip is None or getattr(ip, "display_pub", None) is None:
        print(text)
        return
    from IPython.display import display
    data = {"text/html": html_text, "text/plain": text}
    data.update(extra or {})
    display(data, raw=True)


def panel(kind: str, title: str, body_html: str, text: str) -> str:
    fg, bg = _COLORS[kind]
    return (f'<div style="{_FONT}border-left:4px solid {fg};background:{bg};padding:6px 12px;margin:4px 0;'
            f'border-radius:3px"><div style="font-weight:700;color:{fg};margin-bottom:2px">{esc(title)}</div>'
            f'{body_html}</div>')


def show_panel(kind: str, title: str, lines: Sequence[str], code: Optional[str] = None) -> None:
    """A titled panel: ``lines`` of text, then optionally a preformatted ``code`` block."""
    body = "".join(f"<div>{esc(ln)}</div>" for ln in lines)
    if code:
        body += f'<pre style="{_MONO}margin:4px 0;padding:4px 8px;background:#ffffff80">{esc(code)}</pre>'
    text = "\n".join([f"[{title}]"] + [f"  {ln}" for ln in lines] + ([code] if code else []))
    show(panel(kind, title, body, text), text)


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], title: Optional[str] = None) -> None:
    """A result table for lesson cells: HTML in the notebook, CJK-aligned text elsewhere."""
    head = f'<div style="{_FONT}font-weight:600">{esc(title)}</div>' if title else ""
    show(head + html_table(headers, rows), ((title + "\n") if title else "") + text_table(headers, rows))


# ----------------------------------------------------------------------------- source excerpts

def code_excerpt(source: str, marks: Sequence[messages.Problem], context: int = 1) -> str:
    """The student's lines around each problem, numbered, with a caret line under the spot."""
    lines = (source or "").splitlines()
    want = {}
    for p in marks:
        for ln in range(max(1, p.line - context), min(len(lines), p.line + context) + 1):
            want.setdefault(ln, [])
        want.setdefault(p.line, []).append(p)
    out, prev = [], None
    width = len(str(max(want) if want else 1))
    for ln in sorted(want):
        if ln > len(lines):
            continue
        if prev is not None and ln > prev + 1:
            out.append(" " * width + " | …")
        out.append(f"{ln:>{width}} | {lines[ln - 1]}")
        for p in want[ln]:
            if p.col is not None:
                out.append(" " * width + " | " + " " * p.col + "^" * max(1, p.width) + " " + p.text)
        prev = ln
    return "\n".join(out)


def show_problems(title: str, problems: Sequence[messages.Problem], source: str, advice: str = "",
                  kind: str = "fail") -> None:
    lines = [f"第 {p.line} 行：{p.text}" for p in problems if p.line] + [p.text for p in problems if not p.line]
    if advice:
        lines.append(advice)
    show_panel(kind, title, lines, code_excerpt(source, [p for p in problems if p.line]))


def show_diagnostic(diag: Dict[str, Any], source: Optional[str] = None, title_prefix: str = "") -> None:
    """A runtime diagnostic (OOB, race, divergent barrier, deadlock, ...) as a short panel naming the line."""
    title, advice = messages.diagnostic_title(diag.get("kind")), messages.diagnostic_advice(diag.get("kind"))
    lines = []
    where = messages.where_text(diag)
    if where:
        lines.append(where)
    what = messages.runtime_fact(diag)
    if what:
        lines.append(what)
    if advice:
        lines.append("建议：" + advice)
    code = None
    if diag.get("line") and source:
        code = code_excerpt(source, [messages.Problem(int(diag["line"]), None, 0, "")])
    elif diag.get("line") and diag.get("source_line"):
        code = f"{diag['line']} | {diag['source_line'].rstrip()}"
    show_panel("fail", title_prefix + title, lines, code)


# ----------------------------------------------------------------------------- CUDA cell

def cuda_cell_summary(var: str, text: str) -> None:
    from .cuda_cell import blanks
    n = len(text.splitlines())
    spots = blanks(text)
    if spots:
        where = "、".join(f"第 {ln} 行" for ln, _ in spots)
        show(f'<div style="{_FONT}">{badge("未完成", "todo")} CUDA 源码已存入 <code>{esc(var)}</code>（{n} 行）；'
             f'还有 {len(spots)} 处填空 <code>______</code>：{esc(where)}。</div>',
             f"CUDA 源码已存入 {var}（{n} 行）；还有 {len(spots)} 处填空 ______：{where}。")
    else:
        show(f'<div style="{_FONT}">CUDA 源码已存入 <code>{esc(var)}</code>（{n} 行），没有未填的空。'
             f'下一步：运行下面的编译单元格。</div>',
             f"CUDA 源码已存入 {var}（{n} 行），没有未填的空。下一步：运行下面的编译单元格。")


# ----------------------------------------------------------------------------- exceptions

def _assert_location(tb) -> Optional[str]:
    """``第 k 行：<assert line>`` of the innermost frame that runs in the notebook cell."""
    import linecache
    last = None
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if "ipykernel" in fname or fname.startswith("<ipython-input") or "/tmp/ipykernel" in fname:
            last = tb
        tb = tb.tb_next
    if last is None:
        return None
    line = linecache.getline(last.tb_frame.f_code.co_filename, last.tb_lineno).strip()
    return f"单元格第 {last.tb_lineno} 行：{line}" if line else None


def exception_panel(etype, value, tb) -> List[str]:
    """Display the panel for an expected failure; returns the one-line text of the error output."""
    try:
        from kernels import errors as kerr
    except Exception:  # pragma: no cover
        kerr = None
    if isinstance(value, StudentError):
        show_panel("todo", value.title, [str(value)])
        return [f"{value.title}：{value}"]
    if kerr is not None and isinstance(value, kerr.CompileError):
        problems = messages.compile_problems(value, None)
        show_problems("编译失败", problems, "", messages.compile_advice(problems))
        return ["编译失败（见上方说明）"]
    if kerr is not None and isinstance(value, kerr.KernelError):
        show_diagnostic(value.to_dict())
        return [f"{messages.diagnostic_title(value.kind)}（见上方说明）"]
    # AssertionError: a visible check failed
    msg = str(value) or "断言失败"
    lines = [msg]
    loc = _assert_location(tb)
    if loc:
        lines.append(loc)
    show_panel("fail", "检查未通过", lines)
    return [f"检查未通过：{msg.splitlines()[0][:200]}"]


def install_exception_panels(ip) -> None:
    """Show AssertionError, kernels.errors.KernelError and StudentError as panels (idempotent).

    The cell still fails (its execute reply is an error, so nbgrader scores a failing test cell 0);
    only the traceback is replaced by the panel and one line.
    """
    if ip is None or getattr(ip, "_autograder_panels", False):
        return
    try:
        from kernels.errors import KernelError
        kinds = (AssertionError, StudentError, KernelError)
    except Exception:  # pragma: no cover
        kinds = (AssertionError, StudentError)

    def handler(shell, etype, value, tb, tb_offset=None):
        try:
            stb = exception_panel(etype, value, tb)
        except Exception:            # never hide the original error behind a bug of ours
            stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
        # IPython leaves showing a custom exception to the handler: publish the error output ourselves,
        # so the cell still records an error (ename/evalue) that nbgrader and the grader score as failed
        shell._showtraceback(etype, value, stb)
        return stb

    ip.set_custom_exc(kinds, handler)
    ip._autograder_panels = True


# ----------------------------------------------------------------------------- matplotlib

_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
                 "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC", "Hiragino Sans GB", "Noto Sans CJK JP",
                 "AR PL UMing CN", "Droid Sans Fallback")


def use_cjk_font() -> Optional[str]:
    """Make matplotlib draw Chinese labels: the first installed CJK family, DejaVu Sans for the rest.

    Returns the family used, or None when no CJK font is installed (labels then show empty boxes;
    ``lesson.load`` says how to install one).
    """
    try:
        import matplotlib
        from matplotlib import font_manager
    except Exception:
        return None
    names = {f.name for f in font_manager.fontManager.ttflist}
    found = next((f for f in _CJK_FAMILIES if f in names), None)
    if found:
        import logging
        # DejaVu first, the CJK family second: matplotlib falls back glyph by glyph along the list, so Latin
        # text, the minus sign U+2212 and mathtext tick labels (10^-2) keep DejaVu's glyphs, Chinese gets the CJK font
        fams = ["DejaVu Sans", found] + [f for f in matplotlib.rcParams["font.sans-serif"] if f not in (found, "DejaVu Sans")]
        matplotlib.rcParams["font.sans-serif"] = fams
        matplotlib.rcParams["font.family"] = fams[:2]      # a list of families: glyph-by-glyph fallback
        # e.g. WenQuanYi Zen Hei has only weight 500: matplotlib uses it and says so on every figure
        logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    return found
