"""One-vote vetoes: edits outside the blanks, deleted/loosened asserts, false
GPU-measurement claims, misconceptions.  Each veto carries Chinese text and
evidence a learner can act on (a short diff or the offending sentence).
"""
from __future__ import annotations

import ast
import difflib
import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

from . import notebook as nbio

BLANK = nbio.BLANK
# the vetoes a notebook's own template edits raise (the gpu-claim and misconception vetoes come from answers)
TEMPLATE_VETO_IDS = ("template_edit", "assert_removed", "tolerance_loosened")


@dataclass
class Veto:
    id: str
    message: str
    evidence: str = ""

    def to_dict(self):
        return asdict(self)


# ----------------------------------------------------------------------------- CUDA tokens

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TOKEN = re.compile(r"""
    "(?:\\.|[^"\\])*" | '(?:\\.|[^'\\])*'                       # string / char literals
  | ______+                                                    # the blank
  | (?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFuUlL]*              # numbers
  | 0[xX][0-9a-fA-F]+[uUlL]*
  | [A-Za-z_]\w*                                               # identifiers
  | <<=|>>=|->\*|\.\.\.|::|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|->|[-+*/%&|^!=<>]=?
  | [^\s\w]
""", re.X)


def strip_comments(code: str) -> str:
    # keep string literals intact while dropping comments
    out, pos = [], 0
    for m in re.finditer(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', code, re.S):
        out.append(code[pos:m.start()])
        out.append(m.group(0) if m.group(0).startswith('"') else " ")
        pos = m.end()
    out.append(code[pos:])
    return "".join(out)


def tokens(code: str) -> List[str]:
    return [("______" if t.startswith("______") else t) for t in _TOKEN.findall(strip_comments(code))]


def template_matches(template: str, student: str) -> bool:
    """Token-wise equality where each ``______`` in the template matches any run of tokens (even none).

    Glob matching over token lists: the first and last literal segments are
    anchored, middle segments are found at their earliest position (which is
    optimal for literal segments), so it is linear-ish and never backtracks.
    """
    t, s = tokens(template), tokens(student)
    segs = [[]]
    for tok in t:
        if tok == BLANK:
            segs.append([])
        else:
            segs[-1].append(tok)
    if len(segs) == 1:
        return t == s
    first, middle, last = segs[0], segs[1:-1], segs[-1]
    if s[:len(first)] != first or len(s) < len(first) + len(last) or (last and s[len(s) - len(last):] != last):
        return False
    pos, end = len(first), len(s) - len(last)
    for seg in middle:
        if not seg:
            continue
        found = _find(s, seg, pos, end)
        if found < 0:
            return False
        pos = found + len(seg)
    return pos <= end


def _find(s, seg, start, end) -> int:
    n = len(seg)
    for i in range(start, end - n + 1):
        if s[i] == seg[0] and s[i:i + n] == seg:
            return i
    return -1


def _norm_lines(code: str) -> List[str]:
    lines = [" ".join(tokens(ln)) for ln in strip_comments(code).splitlines()]
    return [ln for ln in lines if ln]


def short_diff(template: str, student: str, max_lines: int = 14) -> str:
    """Unified diff of comment-free, whitespace-normalised lines; blank lines filled by the learner are hidden."""
    t, s = _norm_lines(template), _norm_lines(student)
    filled = list(t)
    for i, ln in enumerate(t):
        if BLANK in ln:
            pat = re.compile(r"\s*".join(".*?" if x == BLANK else re.escape(x) for x in ln.split(" ")))
            for cand in s:
                if pat.fullmatch(cand):
                    filled[i] = cand
                    break
    diff = [d for d in difflib.unified_diff(filled, s, "模板", "你的代码", n=0, lineterm="")
            if not d.startswith("@@")]
    if len(diff) > max_lines:
        diff = diff[:max_lines] + [f"……（共 {len(diff)} 行差异）"]
    return "\n".join(diff)


def _cuda_of(cell, var: Optional[str]) -> str:
    if var:
        text = nbio.python_string_var(cell.source, var)
        if text is not None:
            return text
    return cell.source


def template_edit_vetoes(student_nb, template_nb, lesson: Dict[str, Any]) -> List[Veto]:
    out = []
    sources = lesson.get("sources") or {}
    s_cells, t_cells = nbio.cells_by_grade_id(student_nb), nbio.cells_by_grade_id(template_nb)
    for sid in (lesson.get("vetoes") or {}).get("template_edits") or []:
        var = (sources.get(sid) or {}).get("var")
        if sid not in t_cells:
            continue                       # nothing to compare against (reported by lesson checks)
        if sid not in s_cells:
            out.append(Veto("template_edit", f"源码单元格「{sid}」被删除或其 grade_id 被改动。", sid))
            continue
        tpl, mine = _cuda_of(t_cells[sid], var), _cuda_of(s_cells[sid], var)
        if not template_matches(tpl, mine):
            out.append(Veto("template_edit",
                            f"源码单元格「{sid}」在填空（______）之外被修改：只能修改 TODO/______ 所在位置。",
                            short_diff(tpl, mine)))
    return out


# ----------------------------------------------------------------------------- asserts

_CHECK_CALLS = re.compile(r"(^|\.)(assert\w*|allclose|isclose|array_equal)$")
_TOL_NAMES = ("atol", "rtol", "tol", "eps", "decimal", "places")


class _Checks(ast.NodeVisitor):
    def __init__(self):
        self.found = []

    def visit_Assert(self, node):
        self.found.append(node.test)
        self.generic_visit(node)

    def visit_Call(self, node):
        name = ast.unparse(node.func)
        if _CHECK_CALLS.search(name):
            self.found.append(node)
        self.generic_visit(node)


def _strip_msgs(node):
    """Copy of a check without assert messages / string constants (wording may change)."""
    node = ast.parse(ast.unparse(node), mode="eval").body
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            n.keywords = [k for k in n.keywords if k.arg not in ("err_msg", "msg")]
    return node


def _shape(node) -> str:
    class R(ast.NodeTransformer):
        def visit_Constant(self, c):
            return ast.Constant("NUM") if isinstance(c.value, (int, float)) and not isinstance(c.value, bool) else c
    return ast.unparse(R().visit(ast.parse(ast.unparse(node), mode="eval")))


def _numbers(node) -> List[float]:
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant):
            continue
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            out.append(float(n.value))
    return out


def checks_in(source: str) -> Optional[List[Any]]:
    try:
        tree = ast.parse(nbio._strip_magics(source))
    except SyntaxError:
        return None
    v = _Checks()
    v.visit(tree)
    top = []
    seen = set()
    for n in v.found:   # a call nested in an assert is covered by the assert
        key = id(n)
        if key in seen:
            continue
        for sub in ast.walk(n):
            seen.add(id(sub))
        top.append(_strip_msgs(n))
    return top


def _editable(cell) -> bool:
    meta = nbio.nbgrader_meta(cell)
    return not (meta.get("grade") and not meta.get("solution"))   # autograder test cells are restored


def assert_vetoes(student_nb, template_nb) -> List[Veto]:
    t_checks, s_checks, unparsable = [], [], []
    for c in template_nb.cells:
        if c.cell_type == "code" and _editable(c):
            t_checks += checks_in(c.source) or []
    for c in student_nb.cells:
        if c.cell_type == "code" and _editable(c):
            found = checks_in(c.source)
            if found is None:
                unparsable.append(c.source)
            else:
                s_checks += found
    s_text = [ast.unparse(n) for n in s_checks]
    s_shapes = [_shape(n) for n in s_checks]
    out = []
    for tn in t_checks:
        text = ast.unparse(tn)
        if text in s_text:
            continue
        if any(text.replace(" ", "") in re.sub(r"\s", "", u) for u in unparsable):
            continue
        shape = _shape(tn)
        cands = [s_checks[i] for i, sh in enumerate(s_shapes) if sh == shape]
        if cands:
            looser = [c for c in cands if _looser(tn, c)]
            if looser and len(looser) == len(cands):
                out.append(Veto("tolerance_loosened", "检查的误差容限被放宽：不要放宽误差。",
                                f"- {text}\n+ {ast.unparse(looser[0])}"))
            continue
        out.append(Veto("assert_removed", "检查（assert）被删除或改写：不要删除断言。", f"- {text}"))
    return out


def _looser(template_node, student_node) -> bool:
    """True when a numeric constant grew where it is a tolerance (keyword atol/rtol/... or the right side of <, <=)."""
    def tol_values(node):
        vals = []
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                for k in n.keywords:
                    if k.arg in _TOL_NAMES:
                        vals += _numbers(k.value)
            if isinstance(n, ast.Compare) and all(isinstance(o, (ast.Lt, ast.LtE)) for o in n.ops):
                for comp in n.comparators:
                    vals += _numbers(comp)
        return vals
    a, b = tol_values(template_node), tol_values(student_node)
    if len(a) != len(b) or not a:
        na, nb_ = _numbers(template_node), _numbers(student_node)
        return any(y > x for x, y in zip(na, nb_)) and len(na) == len(nb_)
    return any(y > x for x, y in zip(a, b))


# ----------------------------------------------------------------------------- written answers

def gpu_claim_vetoes(answers: Dict[str, str], backend: Optional[str]) -> List[Veto]:
    """A first-person GPU measurement claimed in an answer while the run recorded no GPU
    (autograder.answers.gpu_claims reads what is claimed)."""
    from .answers import gpu_claims, messages
    return [Veto("gpu_claim", messages.gpu_veto_message(gid, backend), messages.clip(sent))
            for gid, sent in gpu_claims.claims_in({g: answers_visible(t) for g, t in answers.items()}, backend)]


def answers_visible(text: str) -> str:
    from .answers import MAX_CHARS, seen_text
    return seen_text(text or "")[:MAX_CHARS]
