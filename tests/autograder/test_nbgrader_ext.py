"""ClearCudaSolutions and its place in nbgrader's generate_assignment pipeline."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

sys.path.insert(0, str(Path(__file__).parent))
import nbgrader_fixtures as F  # noqa: E402

from autograder.nbgrader_ext import ClearCudaSolutions, generate_preprocessors, make_config  # noqa: E402
from autograder.nbgrader_ext.config import CODE_STUB, TEXT_STUB  # noqa: E402


def _solution(cell, gid="c"):
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3,
                                 "solution": True, "task": False}
    return cell


def _clear(*cells):
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    pp = ClearCudaSolutions(config=make_config())
    nb, _ = pp.preprocess(nb, {})
    return nb.cells


def test_inline_marker_becomes_blank_with_todo():
    (cell,) = _clear(_solution(new_code_cell(
        'SRC = r"""\n    float var = /*BEGIN SOLUTION*/ fmaxf(sq / n - m * m, 0.0f) /*END SOLUTION*/;\n"""')))
    assert cell.source == 'SRC = r"""\n    float var = ______;  // TODO\n"""'


def test_inline_marker_keeps_existing_comment_and_handles_two_blanks():
    (cell,) = _clear(_solution(new_code_cell(
        "X = r'''\nint a = /* BEGIN SOLUTION */ 1 /* END SOLUTION */ + /*BEGIN SOLUTION*/ 2 /*END SOLUTION*/; // sum\n'''")))
    assert cell.source == "X = r'''\nint a = ______ + ______; // sum\n'''"


def test_line_region_becomes_todo_and_blank_at_indent():
    src = ('K = r"""\n{\n    if (i < n) {\n        // BEGIN SOLUTION write y\n        y[i] = x[i];\n'
           '        z[i] = 0;\n        // END SOLUTION\n    }\n}\n"""')
    (cell,) = _clear(_solution(new_code_cell(src)))
    assert cell.source == 'K = r"""\n{\n    if (i < n) {\n        // TODO: write y\n        ______;\n    }\n}\n"""'


def test_line_region_without_text_uses_default_todo():
    (cell,) = _clear(_solution(new_code_cell('K = r"""\n  // BEGIN SOLUTION\n  a();\n  // END SOLUTION\n"""')))
    assert cell.source == 'K = r"""\n  // TODO: 在此补全代码\n  ______;\n"""'


def test_python_region_and_plain_solution_cells_still_use_stock_stubs():
    py = _solution(new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION"), "py")
    whole = _solution(new_code_cell("ANSWER = 42"), "whole")
    md = _solution(new_markdown_cell("因为方差会变成负数，所以要截断。"), "md")
    md_region = _solution(new_markdown_cell("题目\n<!-- BEGIN SOLUTION -->\n参考答案\n<!-- END SOLUTION -->"), "mdr")
    py, whole, md, md_region = _clear(py, whole, md, md_region)
    assert py.source == "def f():\n" + "\n".join("    " + x for x in CODE_STUB.split("\n"))
    assert whole.source == CODE_STUB
    assert md.source == TEXT_STUB
    assert md_region.source == "题目\n" + TEXT_STUB


def test_cuda_only_solution_cell_is_not_replaced_wholesale():
    (cell,) = _clear(_solution(new_code_cell('S = r"""int a = /*BEGIN SOLUTION*/1/*END SOLUTION*/;"""')))
    assert "raise NotImplementedError" not in cell.source
    assert cell.source.startswith('S = r"""int a = ______;')


@pytest.mark.parametrize("src", [
    'S = r"""int a = /*BEGIN SOLUTION*/ 1;"""',                         # no END on the line
    'S = r"""\n// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n"""',  # nested
    'S = r"""\n// BEGIN SOLUTION\nint a;\n"""',                          # no END
    'S = r"""\nint a;\n// END SOLUTION\n"""',                            # END without BEGIN
])
def test_malformed_markers_are_errors(src):
    with pytest.raises(RuntimeError):
        _clear(_solution(new_code_cell(src)))


def test_cuda_markers_in_non_solution_cell_are_rejected():
    cell = new_code_cell('S = r"""int a = /*BEGIN SOLUTION*/1/*END SOLUTION*/;"""')
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": "x", "locked": True, "schema_version": 3,
                                 "solution": False, "task": False}
    with pytest.raises(RuntimeError):
        _clear(cell)


def test_pipeline_swaps_clear_solutions_in_place():
    from nbgrader.converters import GenerateAssignment
    from nbgrader.preprocessors import ClearSolutions, ComputeChecksums, LockCells

    stock = GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default()
    ours = generate_preprocessors()
    assert ClearSolutions not in ours and ours.index(ClearCudaSolutions) == stock.index(ClearSolutions)
    assert ours.index(LockCells) < ours.index(ClearCudaSolutions) < ours.index(ComputeChecksums)
    assert make_config().GenerateAssignment.preprocessors == ours


def test_generate_assignment_keeps_nbgrader_metadata_valid(tmp_path):
    """Run the real nbgrader pipeline and check cells, checksums and the gradebook."""
    from nbgrader.api import Gradebook
    from nbgrader.utils import compute_checksum

    from autograder.generate import build_course

    solution = F.write_source_notebook(tmp_path / "99_fixture.ipynb")
    released = build_course(tmp_path / "course", solution)
    nb = nbformat.read(released, as_version=4)
    by_id = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells}
    src = by_id["kernel_src"].source
    assert "float factor = ______;  // TODO" in src
    assert "// TODO: write the scaled value\n        ______;" in src
    assert "NotImplementedError" not in src and "SOLUTION" not in src
    assert by_id["q1"].source == TEXT_STUB
    assert "hidden-check-marker" not in by_id["test_add"].source
    for cell in nb.cells:
        meta = cell.metadata["nbgrader"]
        if meta.get("grade") or meta.get("solution") or meta.get("locked"):
            assert meta["checksum"] == compute_checksum(cell), meta["grade_id"]
    assert by_id["kernel_src"].metadata["nbgrader"]["solution"] is True
    assert by_id["test_add"].metadata["nbgrader"]["points"] == 2
    assert by_id["setup"].metadata["nbgrader"]["locked"] is True

    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as gb:
        nbrec = gb.find_notebook("99_fixture", "99_fixture")
        assert {c.name for c in nbrec.grade_cells} == {"test_add", "q1"}
        assert {c.name for c in nbrec.solution_cells} == {"kernel_src", "add_impl", "q1"}
        assert "setup" in {c.name for c in nbrec.source_cells}
        # The gradebook keeps the instructor's version (hidden tests included) for autograde.
        test_src = next(c for c in nbrec.source_cells if c.name == "test_add").source
        assert "hidden-check-marker" in test_src


def test_course_config_file_loads_our_pipeline(tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.nbgrader_ext import write_course_config

    path = write_course_config(tmp_path, cell_timeout_s=33)
    cfg = PyFileConfigLoader(path.name, path=str(tmp_path)).load_config()
    assert ClearCudaSolutions in cfg.GenerateAssignment.preprocessors
    assert cfg.Execute.timeout == 33
    assert cfg.CourseDirectory.root == str(tmp_path.resolve())


def test_instructor_course_config_is_left_alone(tmp_path):
    from autograder.nbgrader_ext import write_course_config

    own = tmp_path / "nbgrader_config.py"
    own.write_text("c = get_config()\nc.CourseDirectory.course_id = 'mine'\n", encoding="utf-8")
    write_course_config(tmp_path)
    assert "mine" in own.read_text(encoding="utf-8")
