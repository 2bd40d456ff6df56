"""Regressions found by running a held-out hostile corpus through ``autograder grade``: each test builds its
own small hostile submission and asserts what the instructor relies on (the attack gains nothing, nothing
is silently dropped, the reason is in Chinese)."""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import nbformat
import pytest

from autograder import batch, check, sandbox

ROOT = check.lesson_root()
LESSON = "05_layernorm"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _released():
    return nbformat.read(str(ROOT / "lessons" / f"{LESSON}.ipynb"), as_version=4)


# ----------------------------------------------------------------------------- linked submissions

@pytest.mark.parametrize("layout", ["file", "student_folder", "folder_of_links", "course_dir"])
def test_a_linked_submission_is_listed_invalid_with_a_reason_and_never_opened(tmp_path, layout):
    """A submission that is a symlink (to the instructor's solution, a secret, another student's file) is
    never read, and never silently dropped either: it gets a row saying why it earned nothing."""
    secret = tmp_path / "instructor" / "solution.ipynb"
    secret.parent.mkdir()
    nbformat.write(_released(), str(secret))
    src = tmp_path / "subs"
    honest = _released()
    if layout == "course_dir":
        for who, link in (("honest", False), ("linker", True)):
            d = src / "submitted" / who / LESSON
            d.mkdir(parents=True)
            if link:
                os.symlink(secret, d / f"{LESSON}.ipynb")
            else:
                nbformat.write(honest, str(d / f"{LESSON}.ipynb"))
    else:
        src.mkdir()
        nbformat.write(honest, str(src / "honest.ipynb"))
        if layout == "file":
            os.symlink(secret, src / "linker.ipynb")
        elif layout == "student_folder":
            os.symlink(secret.parent, src / "linker")
        else:
            (src / "linker").mkdir()
            os.symlink(secret, src / "linker" / f"{LESSON}.ipynb")
    subs = {s.student: s for s in batch.discover(src, LESSON, LESSON)}
    assert set(subs) == {"honest", "linker"}
    assert subs["honest"].problem == ""
    template = check.template_notebook(check.config.lesson(LESSON))
    text, problem, _ = batch.preflight(subs["linker"], LESSON, template)
    assert text is None and "符号链接" in problem and CJK.search(problem)
    text, problem, _ = batch.preflight(subs["honest"], LESSON, template)
    assert text is not None and problem == ""


# ----------------------------------------------------------------------------- a grader installed under /tmp

@pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox here: {sandbox.unavailable_reason()}")
def test_python_roots_under_tmp_are_visible_on_top_of_the_private_tmp(tmp_path, monkeypatch):
    """A grader checkout (its .venv, autograder/, kernels/) under /tmp: the sandbox's private /tmp must not
    hide it, or every submission's code fails to start and scores 0; and the sandbox still cannot write it."""
    from autograder.sandbox import core
    root = tmp_path / "grader" / ".venv"
    root.mkdir(parents=True)
    (root / "marker.txt").write_text("grader")
    orig = core.python_roots
    monkeypatch.setattr(core, "python_roots", lambda: orig() + [str(root)])
    work = core.prepare_workdir(tmp_path / "sbx")
    code = (f"import os; print(open({str(root / 'marker.txt')!r}).read());"
            f"print(os.access({str(root)!r}, os.W_OK), os.access('/tmp', os.W_OK), oct(os.stat('/tmp').st_mode))")
    out = sandbox.run([core.sys.executable, "-c", code], work, limits=core.Limits(wall_s=60), mode="require")
    assert out.rc == 0 and out.sandboxed, out.stderr
    lines = out.stdout.split()
    assert lines[0] == "grader" and lines[1] == "False" and lines[2] == "True" and lines[3].endswith("1777")


# ----------------------------------------------------------------------------- an editor-saved old release

def test_answers_found_in_an_editor_saved_notebook_whose_question_text_changed_since():
    """VS Code drops nbgrader metadata and renews cell ids; if the learner's copy is from an earlier release
    whose question wording has since changed, the answers are still found (by the locked check cell after
    them), not reported as deleted and scored 0."""
    import uuid

    from autograder import notebook as nbio
    template = check.template_notebook(check.config.lesson(LESSON))
    nb = _released()
    answers = {}
    for i, c in enumerate(nb.cells):
        c["id"] = uuid.uuid4().hex[:8]
        gid = nbio.grade_id(c)
        if gid in ("explain_code", "q1", "q2", "q3"):
            answers[gid] = c.source = f"我的回答 {gid}：因为……所以……"
            prev = nb.cells[i - 1]
            prev.source = prev.source.split("\n\n>")[0] + "\n\n（旧版题目措辞）"
        c.metadata.pop("nbgrader", None)
    assert set(answers) == {"explain_code", "q1", "q2", "q3"}
    nbio.restore_grade_ids(nb, template)
    got = nbio.cells_by_grade_id(nb)
    for gid, text in answers.items():
        assert gid in got and got[gid].source == text, gid


# ----------------------------------------------------------------------------- shared emulator builds

@pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox here: {sandbox.unavailable_reason()}")
def test_a_shared_build_never_picks_up_objects_planted_in_the_submissions_own_directory(tmp_path, monkeypatch):
    """The build other submissions link is made in a directory no sandbox of this submission could write:
    objects its earlier run left in its own build cache (named like the emulator's builds) never enter the
    shared store."""
    import uuid

    from autograder.judge import executor
    from autograder.settings import GradingSettings
    monkeypatch.setenv("KERNELS_CACHE_DIR", str(tmp_path / "kcache"))
    ex = executor.SandboxExecutor(GradingSettings(sandbox="require"), tmp_path / "work")
    planted = tmp_path / "work" / "buildcache" / "cpu"
    planted.mkdir(parents=True)
    for name in ("mod-planted.so", "race-planted.so", "memcheck-planted"):
        (planted / name).write_text("HOSTILE planted object")
    code = f'// {uuid.uuid4().hex}\nextern "C" __global__ void k(float* x) {{ x[threadIdx.x] = 1.0f; }}\n'
    files = ex._shared_builds({"src": {"code": code, "options": ["-std=c++17"], "name_expressions": None}}, (), 120)
    names = [os.path.basename(v) for v in files.values()]
    assert names and any(n.startswith("mod-") for n in names)
    assert not any("planted" in n for n in names)
    assert not any("planted" in p.name for p in executor.bundle_dir().rglob("*"))


# ----------------------------------------------------------------------------- answers hidden in math

def _solution_answer(gid):
    from autograder import notebook as nbio
    sol = nbio.filled(nbformat.read(str(ROOT / "solutions" / f"{LESSON}.ipynb"), as_version=4))
    return nbio.cells_by_grade_id(sol)[gid].source


@functools.lru_cache(maxsize=1)
def _open_answer():
    from autograder.judge import check_item
    answer = _solution_answer("q3").replace("$", "").replace("}", ")").replace("{", "(")
    return answer, check_item(LESSON, "q3", text=answer, seed=1)


@pytest.mark.parametrize("wrap", [
    r"不知道。 $\phantom{\text{%s}}$",
    r"不知道。 $$\vphantom{\text{%s}}$$",
    r"不知道。 $\color{white}{\text{%s}}$",
    r"不知道。 \(\textcolor{#FFFFFF}{\text{%s}}\)",
    r"不知道。 $\style{display:none}{\text{%s}}$",
    r"不知道。 $\bbox[color:transparent]{\text{%s}}$",
])
def test_an_answer_hidden_inside_math_earns_nothing(wrap):
    """MathJax shows nothing of \\phantom{...}, white or transparent text, or a body styled invisible: an
    answer hidden there is not what a reader sees and scores 0 (the same answer in the open scores)."""
    from autograder.judge import check_item
    answer, shown = _open_answer()
    assert shown.points == shown.max_points > 0
    hidden = check_item(LESSON, "q3", text=wrap % answer, seed=1)
    assert hidden.points == 0, hidden.message


def test_visible_math_keeps_its_text():
    from autograder.judge.answers import visible_text
    text = visible_text(r"方差 $\color{red}{\sigma^2 = E[x^2] - \mu^2}$ 可能为负，$\textcolor{blue}{var + eps}$ 也会。")
    assert r"\sigma^2 = E[x^2] - \mu^2" in text and "var + eps" in text


# ----------------------------------------------------------------------------- hidden tests and the kernel

def test_the_feedback_run_never_puts_a_cases_items_hidden_tests_into_the_learners_kernel(tmp_path, monkeypatch):
    """nbgrader restores hidden tests into the test cells; the judge runs a ``cases`` item's hidden cases
    in its own sandbox, so the notebook run for feedback gets the note instead of the block: code in the
    learner's kernel reading ``In[]`` finds no hidden test to print back (``autograder grade``'s restore,
    which drops the markers, and nbgrader's, which keeps them)."""
    from autograder import config, execute
    from autograder import notebook as nbio
    from autograder.sandbox import core as sbx
    cfg = config.lesson(LESSON)
    solution = check.solution_notebook(cfg, check.CourseLayout.resolve())
    hidden = {nbio.grade_id(c): nbio.hidden_tests(c.source) for c in solution.cells if nbio.hidden_tests(c.source)}
    assert hidden
    run_nb = check.prepare_for_run(_released(), cfg, solution)          # what autograder grade runs
    assert any(h.strip() in c.source for c in run_nb.cells for h in hidden.values())
    nbg = _released()                                                    # what nbgrader autograde runs
    for c in nbg.cells:
        if nbio.grade_id(c) in hidden:
            c.source = nbio.cells_by_grade_id(solution)[nbio.grade_id(c)].source
    seen = []

    def fake_run(argv, work, **kw):
        seen.append(nbformat.read(str(Path(work) / "in.ipynb"), as_version=4))
        return sbx.Outcome(rc=0, sandboxed=True)
    monkeypatch.setattr(sandbox, "run", fake_run)
    execute.run(execute.without_judged_hidden_tests(run_nb, cfg, solution), lesson=cfg, work=tmp_path / "a")
    execute.run(nbg, lesson=cfg, work=tmp_path / "b")
    for ran in seen:
        code = "\n".join(c.source for c in ran.cells if c.cell_type == "code")
        assert "HIDDEN TESTS" not in code and not any(h.strip() in code for h in hidden.values())
        assert "隐藏用例由评分器在沙箱外单独运行" in code
        assert "np.allclose" in code                                     # the visible tests still run
    assert any(h.strip() in c.source for c in run_nb.cells for h in hidden.values())   # caller's copy kept


# ----------------------------------------------------------------------------- preprocessor lines in a blank

def test_a_macro_in_a_blank_is_an_edit_outside_it(monkeypatch):
    """``#define fmaxf(a, b) (a)`` written into lesson 5's blank matches the template token by token but
    removes the clamp the template protects: a template_edit veto, never a pass."""
    from autograder import notebook as nbio
    from autograder.judge import judge
    from autograder.settings import GradingSettings
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "off")
    nb = _released()
    src = nbio.cells_by_grade_id(nb)["layernorm_src"]
    assert "float var = ______;" in src.source
    src.source = src.source.replace("float var = ______;", "float var = \n#define fmaxf(a, b) (a)\n"
                                    "        sq_sum / static_cast<float>(N) - mean * mean;")
    for gid, text in {g: _solution_answer(g) for g in ("explain_code", "q1", "q2", "q3")}.items():
        nbio.cells_by_grade_id(nb)[gid].source = text
    v = judge(nb, LESSON, seed=1, settings=GradingSettings(sandbox="off", execute=False, checks=()))
    assert "template_edit" in [x.id for x in v.vetoes] and not v.passed
    assert any("预处理指令" in x.message and "fmaxf" in x.message for x in v.vetoes)


def test_directives_are_read_as_the_compiler_reads_them():
    from autograder.judge.core import _directives
    got = _directives('#include <a.h>\n  # define A 1\nx;/*\n*/#define NOT_A_DIRECTIVE\n%:define B\n'
                      '#def\\\nine C 2\n_Pragma("x")\n#pragma unroll 4\n')
    assert got == ["#include <a.h>", "#define A 1", "#define B", "#define C 2", "#pragma unroll 4", "_Pragma("]
