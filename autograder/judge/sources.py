"""The learner's CUDA sources, read statically from the submitted notebook (nothing of it is run).

A source cell is a ``%%cuda VAR`` cell (``autograder.cuda_cell``) or ``VAR = r\"\"\"...\"\"\"`` (the Python
variable named by ``sources.<id>.var`` in grading_rubric.yaml). The judge grades exactly that string literal: whatever else a
cell does at run time (``VAR = VAR.replace(...)``, ``L.grade = lambda *a: None``) changes nothing, and any
Python added to a source cell besides the literal is reported as an edit outside the blanks.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, Optional

from .. import notebook as nbio

_ANY_MAGIC = re.compile(r"^\s*%%cuda\b")


@dataclass(frozen=True)
class Extracted:
    code: Optional[str]          # the CUDA text, or None
    problem: str = ""            # Chinese: why no source could be read
    python_shape: str = ""       # the cell's Python with the literal replaced (compared with the template's)


def _shape(tree: ast.AST, var: str) -> str:
    class Hole(ast.NodeTransformer):
        def visit_Assign(self, node):
            if any(isinstance(t, ast.Name) and t.id == var for t in node.targets) and \
                    isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                node.value = ast.Constant("<CUDA>")
            return node
    return ast.dump(Hole().visit(tree), annotate_fields=False)


def magic_shape(var: str) -> str:
    return f"%%cuda {var}"


def assignment_shape(var: str) -> str:
    """The shape of a cell that is nothing but ``VAR = r\"\"\"...\"\"\"``."""
    return _shape(ast.parse(f'{var} = ""'), var)


def extract(cell_source: str, var: str) -> Extracted:
    """The string literal assigned to ``var`` in one code cell (see module doc)."""
    from .. import cuda_cell
    magic = cuda_cell.parse(cell_source or "")
    if magic is not None:
        if magic[0] != var:
            return Extracted(None, f"%%cuda 单元格的变量名是 {magic[0]}，应为 {var}（第一行应为 %%cuda {var}）")
        return Extracted(magic[1], python_shape=magic_shape(var))
    if _ANY_MAGIC.match(cell_source or ""):
        return Extracted(None, f"%%cuda 单元格的第一行应为 %%cuda {var}")
    try:
        tree = ast.parse(nbio._strip_magics(cell_source or ""))
    except SyntaxError as exc:
        text = nbio.python_string_var(cell_source or "", var)     # the literal may still be intact
        if text is not None:
            return Extracted(text, python_shape=f"<SyntaxError line {exc.lineno}>")
        return Extracted(None, f"源码单元格不是合法的 Python（第 {exc.lineno} 行：{exc.msg}）：多半是 CUDA 源码外面的三引号 "
                               f"r\"\"\" … \"\"\" 被改坏了，评分找不到 {var}")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == var for t in targets):
                found.append(node)
    literals = [n for n in found if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                and isinstance(n.value.value, str)]
    if not found:
        return Extracted(None, f"源码单元格里找不到 {var} = r\"\"\" … \"\"\"：不要改变量名，也不要删除这个赋值")
    if not literals:
        return Extracted(None, f"{var} 必须直接赋值为一个字符串常量（r\"\"\" … \"\"\"）：评分只读这个字符串，"
                               "不运行拼接、f-string 或函数调用")
    return Extracted(literals[0].value.value, python_shape=_shape(tree, var))


def extract_all(nb, lesson: Dict) -> Dict[str, Extracted]:
    """``{source_id: Extracted}`` for every source of the lesson."""
    cells = nbio.cells_by_grade_id(nb)
    out = {}
    for sid, spec in (lesson.get("sources") or {}).items():
        cell = cells.get(sid)
        if cell is None:
            out[sid] = Extracted(None, f"找不到源码单元格「{sid}」：它被删除了（或 nbgrader 元数据被改动）；"
                                       "请从原始课程笔记本把它复制回来")
        elif cell.cell_type != "code":
            out[sid] = Extracted(None, f"源码单元格「{sid}」被改成了 {cell.cell_type} 单元格：请改回代码单元格")
        else:
            out[sid] = extract(cell.source, spec["var"])
    return out
