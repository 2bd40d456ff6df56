"""A tiny nbgrader source notebook (pure Python + a CUDA string) for the glue tests,
so they do not depend on the real lessons or on a working kernels runtime."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def _nbg(cell, grade_id, *, solution=False, grade=False, locked=False, points=None, task=False):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": task}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


CUDA_SRC = '''KERNEL_CU = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float factor = /*BEGIN SOLUTION*/ 2.0f * 1.5f /*END SOLUTION*/;
    if (i < n) {
        // BEGIN SOLUTION write the scaled value
        y[i] = x[i] * factor + 0.0f;
        // END SOLUTION
    }
}
"""'''

ANSWER = "先读取输入，因为方差会被消减成负数，所以需要 fmaxf 截断。"


def make_source_notebook(hidden_assert: str = "assert add(20, 22) == 42, 'add 结果错误'") -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        _nbg(new_markdown_cell("# 第 99 课：测试夹具"), "intro", locked=True),
        _nbg(new_code_cell("import math\nSETUP_DONE = True"), "setup", locked=True),
        _nbg(new_code_cell(CUDA_SRC), "kernel_src", solution=True),
        _nbg(new_code_cell("def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b  # reference-add-body\n"
                           "    ### END SOLUTION"), "add_impl", solution=True),
        _nbg(new_code_cell("assert SETUP_DONE\n### BEGIN HIDDEN TESTS\n" + hidden_assert
                           + "  # hidden-check-marker\n### END HIDDEN TESTS"),
             "test_add", grade=True, points=2),
        _nbg(new_markdown_cell(ANSWER), "q1", solution=True, grade=True, points=2),
    ]
    return nb


def write_source_notebook(path, **kw):
    nb = make_source_notebook(**kw)
    nbformat.write(nb, str(path))
    return path


RUBRIC_YAML = """
version: 1
settings:
  pass_score: 3
  hint_penalty: [0, 0, 0, 0]
  time_limit_s: 60
  cell_timeout_s: 30
  checks: []
lessons:
  "99_fixture":
    title: "第 99 课：测试夹具"
    notebook: 99_fixture.ipynb
    items:
      add:
        points: 2
        kind: test
        grade_id: test_add
      q1:
        points: 2
        kind: rubric
        grade_id: q1
        rubric:
          parts:
            input: ["输入", "读取", "input"]
            clamp: ["fmaxf", "截断", "clamp"]
          claims:
            - {id: input, label: "输入", says: [[input]]}
            - {id: negative_clamp, label: "负方差需要截断", says: [[negative, clamp], [clamp, negative]]}
          misconceptions:
            - id: clamp_for_speed
              says: [[[fmaxf, 截断, clamp], [更快, 加速, faster]]]
              why: fmaxf 是为了防止负方差，不是为了加速
          points: {full: 2}
          nudge: "说明负方差为什么需要截断"
"""


def write_fixture_lesson(tmp_path):
    """A course root: solutions/ with the fixture notebook and grading_rubric.yaml; returns (root, rubric_path)."""
    root = tmp_path / "root"
    (root / "solutions").mkdir(parents=True)
    write_source_notebook(root / "solutions" / "99_fixture.ipynb")
    rubric = root / "grading_rubric.yaml"
    rubric.write_text(RUBRIC_YAML, encoding="utf-8")
    return root, rubric


def student_variant(solution_path, out_path, *, add_body=None, answer=None, extra_cell=None):
    """A 'student' notebook: the generated lesson with the blanks filled in."""
    nb = nbformat.read(str(solution_path), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid == "add_impl" and add_body is not None:
            cell.source = f"def add(a, b):\n    {add_body}"
        if gid == "q1" and answer is not None:
            cell.source = answer
    if extra_cell is not None:  # one cell's source, or a list of them
        idx = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "add_impl")
        for k, src in enumerate([extra_cell] if isinstance(extra_cell, str) else extra_cell):
            nb.cells.insert(idx + 1 + k, new_code_cell(src))
    nbformat.write(nb, str(out_path))
    return out_path
