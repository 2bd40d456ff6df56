"""solutions/ -> lessons/ generation: deterministic, checkable, no solution text leaks."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import nbgrader_fixtures as F  # noqa: E402

from autograder import generate  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen") / "root"
    (root / "solutions").mkdir(parents=True)
    F.write_source_notebook(root / "solutions" / "99_fixture.ipynb")
    report = generate.generate_all(root)
    assert [p.name for p in report.written] == ["99_fixture.ipynb"]
    return root


def test_generation_is_deterministic_and_checkable(fixture_root):
    lesson = fixture_root / "lessons" / "99_fixture.ipynb"
    first = lesson.read_text(encoding="utf-8")
    again = generate.generate_all(fixture_root)
    assert again.written == [] and again.unchanged == [lesson]
    assert lesson.read_text(encoding="utf-8") == first
    assert generate.generate_all(fixture_root, check=True).ok
    assert generate.main(["--check", "--root", str(fixture_root)]) == 0


def test_check_detects_stale_lesson(fixture_root, tmp_path):
    lesson = fixture_root / "lessons" / "99_fixture.ipynb"
    original = lesson.read_text(encoding="utf-8")
    try:
        nb = nbformat.reads(original, as_version=4)
        nb.cells[0].source += "\n手工修改"
        nbformat.write(nb, str(lesson))
        report = generate.generate_all(fixture_root, check=True)
        assert report.stale == [lesson] and not report.ok
        assert generate.main(["--check", "--root", str(fixture_root)]) == 1
        assert "手工修改" in lesson.read_text(encoding="utf-8")  # --check writes nothing
    finally:
        lesson.write_text(original, encoding="utf-8")


def test_lesson_filter_by_number(fixture_root):
    assert [p.name for p in generate.solution_notebooks(fixture_root, ["99"])] == ["99_fixture.ipynb"]
    with pytest.raises(generate.GenerationError):
        generate.solution_notebooks(fixture_root, ["42"])


def test_no_solution_text_in_generated_lesson(fixture_root):
    solution = nbformat.read(fixture_root / "solutions" / "99_fixture.ipynb", as_version=4)
    lesson = nbformat.read(fixture_root / "lessons" / "99_fixture.ipynb", as_version=4)
    frags = generate.solution_fragments(solution)
    # The fragments cover every kind of hidden text in the fixture ...
    for expected in ("2.0f * 1.5f", "y[i] = x[i] * factor + 0.0f;", "reference-add-body",
                     "hidden-check-marker", F.ANSWER):
        assert any(expected in f for f in frags), expected
    # ... none reaches the student notebook ...
    assert generate.find_leaks(solution, lesson) == []
    # ... and the detector does fire on a leak.
    lesson.cells[2].source += "\n// 2.0f * 1.5f"
    assert generate.find_leaks(solution, lesson) == ["2.0f * 1.5f"]


def test_normalised_output_has_no_outputs_or_volatile_metadata(fixture_root):
    nb = nbformat.read(fixture_root / "lessons" / "99_fixture.ipynb", as_version=4)
    for cell in nb.cells:
        assert "execution" not in cell.metadata
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    assert "celltoolbar" not in nb.metadata


@pytest.mark.skipif(not list((REPO / "solutions").glob("[0-9]*.ipynb")), reason="no solution notebooks yet")
def test_repository_lessons_are_up_to_date():
    """lessons/ must be exactly what generation produces (run `autograder generate`)."""
    report = generate.generate_all(REPO, check=True)  # also raises on any solution-text leak
    assert report.ok, f"stale: {report.stale} -- run `autograder generate`"
    for solution in generate.solution_notebooks(REPO):
        lesson = nbformat.read(REPO / "lessons" / solution.name, as_version=4)
        assert generate.find_leaks(nbformat.read(solution, as_version=4), lesson) == []
