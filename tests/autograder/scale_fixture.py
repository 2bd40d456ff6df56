"""A small, fast lesson for batch-scale tests: one CUDA ``cases`` item (copy x to y, two families, no
runtime checks; the reference is ``autograder.references.identity``) and one written answer. Sixty submissions draw from three CUDA variants, so the emulator builds
are shared and the batch measures the grader, not the compiler."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader_fixtures import _nbg as _meta

RUBRIC = """
version: 1
settings:
  pass_score: 3
  hint_penalty: [0, 0, 0, 0]
  time_limit_s: 60
  cell_timeout_s: 30
  checks: []
lessons:
  "96_scale":
    title: "测试课：逐元素复制"
    notebook: 96_scale.ipynb
    sources:
      scale_src: {var: SCALE_CU}
    kernels:
      scale:
        source: scale_src
        function: scale
        grid: "(ceil_div(n, 256),)"
        block: "(256,)"
        args: [x, y, "int32(n)"]
        outputs: [y]
        reference: identity
    arrays:
      x: {shape: "(n,)", dtype: float32, dist: {normal: {mean: 0.0, std: 1.0}}}
      y: {shape: "(n,)", dtype: float32, fill: nan}
    items:
      code:
        points: 2
        kind: cases
        grade_id: test_code
        cases:
          - {family: "n 为 256 的整数倍", kernel: scale, params: {n: "choice([256, 512])"}}
          - {family: "n 不是 256 的整数倍", kernel: scale, params: {n: "randint(257, 700)"}}
      answer:
        points: 2
        kind: rubric
        rubric:
          parts:
            bound: ["越界", "i < n", "边界", "bounds"]
            tail: ["最后一个 block", "多出来的线程", "尾部", "tail"]
            need: ["需要", "必须", "要", "need", "must"]
          claims:
            - {id: tail, label: "最后一个 block 有多出来的线程", says: [[tail]]}
            - {id: guard, label: "多出来的线程需要越界检查", says: [[tail, bound], [need, bound]]}
          points: {full: 2, partial: 1, term_list: 2}
          nudge: "说明为什么需要 i < n"
    vetoes:
      template_edits: [scale_src]
"""

SOURCE = '''SCALE_CU = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = /*BEGIN SOLUTION*/ x[i] /*END SOLUTION*/;
    }
}
"""'''
ANSWER = "最后一个 block 里多出来的线程下标超过 n，所以需要 i < n 的越界检查。"
FILLS = ["x[i]", "x[i] * 1.0f", "2.0f * x[i]"]          # right, right written otherwise, wrong
ANSWERS = [ANSWER, "越界 尾部", "不知道"]


def solution_notebook():
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        _meta(new_code_cell('from autograder import lesson\nL = lesson.load("96_scale")'), "setup", locked=True),
        _meta(new_code_cell(SOURCE), "scale_src", solution=True),
        _meta(new_code_cell('### BEGIN HIDDEN TESTS\nL.grade("code")\n### END HIDDEN TESTS'), "test_code",
              grade=True, locked=True, points=2),
        _meta(new_markdown_cell(ANSWER), "answer", solution=True, grade=True, points=2),
    ]
    return nb


def write_course(root: Path, n: int, subs: Path):
    """``root``: the course (rubric, solutions/, lessons/); ``subs``: ``n`` submissions."""
    from autograder import generate

    (root / "solutions").mkdir(parents=True, exist_ok=True)
    (root / "grading_rubric.yaml").write_text(RUBRIC, encoding="utf-8")
    nbformat.write(solution_notebook(), str(root / "solutions" / "96_scale.ipynb"))
    generate.generate_all(root)
    released = nbformat.read(str(root / "lessons" / "96_scale.ipynb"), as_version=4)
    subs.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        nb = nbformat.from_dict(released)
        for c in nb.cells:
            gid = c.metadata.get("nbgrader", {}).get("grade_id")
            if gid == "scale_src":
                c.source = c.source.replace("______", FILLS[i % 3])
            if gid == "answer":
                c.source = ANSWERS[(i // 3) % 3]
        nbformat.write(nb, str(subs / f"s{i:02d}.ipynb"))
    return root / "grading_rubric.yaml"
