"""Red-team regression tests: submissions as real students write them.

Variants of lessons/05_layernorm.ipynb are built in code and judged (the CUDA source is compiled and run on
the hidden cases; nothing of the notebook is executed). The sandbox is off here (AUTOGRADER_SANDBOX=off) so
every variant with the same fill reuses one emulator build; tests/autograder/test_sandbox.py and
tests/hostile/ cover the sandboxed path.
"""
from __future__ import annotations

import copy
import json
import time

import nbformat
import pytest

from autograder import batch, check, cli
from autograder import notebook as nbio

ROOT = check.lesson_root()
LESSON = "05_layernorm"
BLANK_LINE = "float var = ______;"


def _base():
    return nbformat.read(str(ROOT / "lessons" / f"{LESSON}.ipynb"), as_version=4)


def _answers():
    sol = nbio.filled(nbformat.read(str(ROOT / "solutions" / f"{LESSON}.ipynb"), as_version=4))
    return {g: c.source for g, c in nbio.cells_by_grade_id(sol).items() if g in ("explain_code", "q1", "q2", "q3")}


ANSWERS = _answers()


def make(fill="sq_sum / static_cast<float>(N) - mean * mean", answers=None):
    nb = _base()
    answers = ANSWERS if answers is None else answers
    for c in nb.cells:
        gid = nbio.grade_id(c)
        if gid == "layernorm_src" and fill is not None:
            assert BLANK_LINE in c.source
            c.source = c.source.replace(BLANK_LINE, f"float var = {fill};")
        if gid in answers:
            c.source = answers[gid]
    return nb


def cell(nb, gid):
    return nbio.cells_by_grade_id(nb)[gid]


@pytest.fixture(autouse=True)
def _unsandboxed(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "off")


def grade(tmp_path, nb, name=f"{LESSON}.ipynb", execute=False, lesson=None):
    p = tmp_path / name
    nbformat.write(nb, str(p))
    return check.grade_notebook(p, lesson, seed=1)


def item(res, iid):
    return res.item(iid)


# ----------------------------------------------------------------------------- files that are not notebooks

@pytest.mark.parametrize("content, words", [
    (b"", "文件是空的"),
    (b'{"cells": [ oops', "不是有效的 Jupyter 笔记本"),
    (b"[1, 2]", "不是有效的 Jupyter 笔记本"),
    (b"\xff\xfe\x00garbage", "不是"),
])
def test_unreadable_file_is_explained_in_chinese_without_traceback(tmp_path, capsys, content, words):
    p = tmp_path / "学生 作业.ipynb"
    p.write_bytes(content)
    with pytest.raises(nbio.NotebookReadError, match=words):
        nbio.read(p)
    assert cli.main(["check", str(p), "--lesson", LESSON, "--no-execute"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


# ----------------------------------------------------------------------------- correct fills, written differently

@pytest.mark.parametrize("fill", [
    "(sq_sum/N) - (mean*mean)",
    "sq_sum * (1.0f/N) - mean*mean",
    "fmaf(-mean, mean, sq_sum/N)",
    "sq_sum / (float)N - mean * mean   /* 两矩公式 */",
])
def test_equivalent_fills_are_not_vetoed(tmp_path, fill):
    res = grade(tmp_path, make(fill))
    assert res.vetoes == ()
    assert res.score == 10.0


@pytest.mark.parametrize("mangle", ["crlf", "tabs", "comment"])
def test_whitespace_and_comments_in_the_source_cell_are_fine(tmp_path, mangle):
    nb = make()
    c = cell(nb, "layernorm_src")
    if mangle == "crlf":
        c.source = c.source.replace("\n", "\r\n")
    elif mangle == "tabs":
        c.source = c.source.replace("    ", "\t")
    else:
        c.source = c.source.replace("mean * mean;", "mean * mean; // 我填的：E[x^2]-mean^2")
    assert grade(tmp_path, nb).vetoes == ()


# ----------------------------------------------------------------------------- editors: VS Code / Colab / nbformat 4.4

def _strip_nbgrader(nb, new_ids=True):
    for i, c in enumerate(nb.cells):
        c.metadata.pop("nbgrader", None)
        if new_ids:
            c["id"] = f"colab{i:04d}"
    return nb


def test_stripped_nbgrader_metadata_is_restored_from_the_template(tmp_path):
    nb = _strip_nbgrader(make())
    res = grade(tmp_path, nb)
    assert res.vetoes == () and res.score == 10.0
    assert any("VS Code" in n and "q2" in n for n in res.notes)
    assert nbio.restore_grade_ids(nb, _base())
    restored = nbio.cells_by_grade_id(nb)
    assert set(nbio.cells_by_grade_id(_base())) <= set(restored)
    assert "float var = sq_sum" in restored["layernorm_src"].source


def test_stripped_metadata_and_answer_cell_turned_into_raw_or_code(tmp_path):
    nb = _strip_nbgrader(make())
    q1 = next(c for c in nb.cells if c.source == ANSWERS["q1"])
    q1.cell_type = "raw"
    res = grade(tmp_path, nb)
    assert item(res, "q1").points == 2.0


def test_nbformat_44_without_cell_ids(tmp_path):
    d = json.loads(nbformat.writes(make()))
    d["nbformat_minor"] = 4
    for c in d["cells"]:
        c.pop("id", None)
    p = tmp_path / f"{LESSON}.ipynb"
    p.write_text(json.dumps(d, ensure_ascii=False), encoding="utf-8")
    res = check.grade_notebook(p, seed=1, execute=False)
    assert res.score == 10.0 and res.vetoes == ()


def test_added_moved_and_deleted_helper_cells_do_not_matter(tmp_path):
    nb = make()
    nb.cells.insert(5, nbformat.v4.new_code_cell('print("my scratch")'))
    nb.cells.insert(9, nbformat.v4.new_markdown_cell("我的笔记"))
    nb.cells = [c for c in nb.cells if nbio.grade_id(c) != "self_check" and "L.hint" not in c.source]
    q3 = cell(nb, "q3")
    nb.cells.remove(q3)
    nb.cells.insert(2, q3)
    res = grade(tmp_path, nb)
    assert res.score == 10.0 and res.vetoes == ()


# ----------------------------------------------------------------------------- locked cells

def test_edited_locked_cells_are_restored_for_the_run_with_a_note():
    nb = make()
    cell(nb, "test_code_normal").source = "pass  # 我把测试删了"
    cell(nb, "compile").source += '\nprint("改了编译单元")'
    cfg = check.config.lesson(LESSON)
    notes = []
    run_nb = check.prepare_for_run(nb, cfg, check.solution_notebook(cfg), notes)
    assert "我把测试删了" not in cell(run_nb, "test_code_normal").source
    assert "改了编译单元" not in cell(run_nb, "compile").source
    assert notes and "test_code_normal" in notes[0] and "compile" in notes[0]
    assert "我把测试删了" in cell(nb, "test_code_normal").source     # the submission itself is untouched


# ----------------------------------------------------------------------------- written answers

def test_copying_the_question_scores_zero_and_says_so(tmp_path):
    prompt = nbio.template_prompt(_base(), "q2")
    question = prompt.split("\n", 2)[-1].strip()        # without the "### Q2（2 分）" heading
    res = grade(tmp_path, make(answers={"q2": question}))
    assert item(res, "q2").points == 0 and "复制了题目" in item(res, "q2").message


def test_answer_that_quotes_the_question_then_answers_keeps_its_points(tmp_path):
    prompt = nbio.template_prompt(_base(), "q2").split("\n", 2)[-1].strip()
    res = grade(tmp_path, make(answers={"q2": prompt + "\n\n" + ANSWERS["q2"]}))
    assert item(res, "q2").points == 2.0


STUFFED = ("负 negative NaN 传播 污染 fmaxf 截断 clamp Welford 均值 方差 mean variance rsqrt eps 因为 所以 导致 "
           "catastrophic cancellation 灾难性消减 归约 reduction 共享内存 shared memory warp block 寄存器 合并读取 "
           "三元组 除法 大均值 小方差")


def test_keyword_stuffing_never_gets_full_marks(tmp_path):
    res = grade(tmp_path, make(answers={g: STUFFED for g in ANSWERS}))
    for iid in ANSWERS:
        it = item(res, iid)
        assert it.points <= it.max_points / 2, it
    assert "关键词堆砌" in item(res, "q2").message


def test_markdown_latex_emoji_and_code_blocks_keep_full_marks(tmp_path):
    fancy = {g: "😀 **答：**\n\n- " + a.replace("。", "。🚀\n- ") +
             "\n\n```cuda\nfloat v = fmaxf(var, 0.f);\n```\n$$\\sigma^2 = E[x^2]-E[x]^2$$" for g, a in ANSWERS.items()}
    res = grade(tmp_path, make(answers=fancy))
    assert res.score == 10.0


def test_english_answer_is_scored(tmp_path):
    # the scoring note asks for both cases: the default eps is fine, a tiny eps gives NaN
    en = ("With the default eps = 1e-5, var + eps = 1e-5 - 1e-7 is still positive, so nothing breaks. "
          "If the two-moment formula gives a variance of -1e-7 and eps is smaller than 1e-7, var + eps is negative, "
          "so rsqrtf returns NaN. The NaN propagates to the whole row because every output uses inv_std. "
          "fmaxf clamps var to 0, so var + eps >= eps > 0.")
    assert item(grade(tmp_path, make(answers={"q2": en})), "q2").points >= 1


def test_answer_written_in_a_new_cell_below_the_answer_cell_is_found(tmp_path):
    nb = make(answers={})
    i = nb.cells.index(cell(nb, "q2"))
    nb.cells.insert(i + 1, nbformat.v4.new_markdown_cell(ANSWERS["q2"]))
    it = item(grade(tmp_path, nb), "q2")
    assert it.points == 2.0 and "答题单元格" in it.message


def test_answer_appended_to_the_question_cell_is_found(tmp_path):
    nb = make(answers={})
    i = nb.cells.index(cell(nb, "q3"))
    nb.cells[i - 1].source += "\n\n" + ANSWERS["q3"]
    it = item(grade(tmp_path, nb), "q3")
    assert it.points == 2.0 and "答题单元格" in it.message


def test_very_long_answer_is_scored_quickly(tmp_path):
    t0 = time.monotonic()
    res = grade(tmp_path, make(answers={"q1": ANSWERS["q1"] * 1500}))
    assert item(res, "q1").points == 2.0 and time.monotonic() - t0 < 30


def test_blank_code_but_answers_written(tmp_path):
    res = grade(tmp_path, make(fill=None))
    assert res.score == 7.0 and not res.passed and res.vetoes == ()


# ----------------------------------------------------------------------------- wrong lesson

def _lesson4():
    return nbio.filled(nbformat.read(str(ROOT / "solutions" / "04_rmsnorm.ipynb"), as_version=4))


def test_wrong_lesson_notebook_is_detected(tmp_path):
    res = grade(tmp_path, _lesson4(), name="mine.ipynb", lesson=LESSON)
    assert res.score == 0 and not res.passed
    assert "04_rmsnorm" in res.errors[0] and "提交错了" in res.errors[0]


def test_wrong_lesson_named_like_the_right_one_is_graded_as_what_it_is(tmp_path):
    res = grade(tmp_path, _lesson4(), name=f"{LESSON}.ipynb")
    assert res.lesson == "04_rmsnorm" and any("04_rmsnorm" in n for n in res.notes)


# ----------------------------------------------------------------------------- error messages from executed cells

def _err(ename, evalue):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def test_name_error_in_test_cell_points_at_the_broken_source_cell():
    nb = make()
    cell(nb, "layernorm_src").outputs = [nbformat.from_dict(_err("SyntaxError", "incomplete input"))]
    test = cell(nb, "test_code_normal")
    test.outputs = [nbformat.from_dict(_err("NameError", "name 'layernorm' is not defined"))]
    msg = check._explain_cell_error(nb, test, nbio.cell_error(test))
    assert "layernorm_src" in msg and "三引号" in msg


@pytest.mark.parametrize("ename, words", [("KernelTimeout", "超时"), ("DeadlockError", "死锁"),
                                          ("OutOfBoundsError", "越界"), ("ValueError", "运行出错")])
def test_kernel_errors_are_explained_in_chinese(ename, words):
    assert words in check._error_message({"ename": ename, "evalue": "detail"})


# ----------------------------------------------------------------------------- batch discovery

def test_batch_ids_keep_chinese_names_and_never_collide(tmp_path):
    for name in ("张三", "张 三", "张_三", "li si", "王五"):
        nbformat.write(make(), str(tmp_path / f"{name}.ipynb"))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    subs = batch.discover(tmp_path, LESSON, LESSON)
    ids = [s.student for s in subs]
    assert len(ids) == 5 == len(set(ids))
    assert "张三" in ids and "王五" in ids and "li_si" in ids


def test_batch_preflight_rejects_unreadable_and_wrong_lesson_and_repairs_metadata(tmp_path):
    template = check.template_notebook(check.config.lesson(LESSON))
    (tmp_path / "empty.ipynb").write_text("")
    nbformat.write(_lesson4(), str(tmp_path / "wrong.ipynb"))
    nbformat.write(_strip_nbgrader(make()), str(tmp_path / "colab.ipynb"))
    got = {p.stem: batch.preflight(batch.Submission(p.stem, p), LESSON, template) for p in tmp_path.iterdir()}
    assert got["empty"][0] is None and "空" in got["empty"][1]
    assert got["wrong"][0] is None and "04_rmsnorm" in got["wrong"][1]
    text, problem, notes = got["colab"]
    assert problem == "" and notes and "q3" in nbio.cells_by_grade_id(nbformat.reads(text, as_version=4))


# ----------------------------------------------------------------------------- a few real executions

def test_colab_notebook_scores_full(tmp_path):
    res = grade(tmp_path, _strip_nbgrader(make()))
    assert res.passed and res.score == 10.0, res.to_json()


def test_kernel_killing_cell_changes_nothing_in_the_verdict(tmp_path):
    """The dead-kernel case of issue 19: the verdict reads the sources, so a cell that kills the Python
    kernel neither costs nor earns anything (the batch and the self-check agree by construction)."""
    nb = make()
    nb.cells.insert(4, nbformat.v4.new_code_cell("import os; os._exit(1)"))
    res = grade(tmp_path, nb)
    assert res.passed and res.score == 10.0 and not res.errors


def test_cuda_syntax_error_shows_the_compiler_line(tmp_path):
    res = grade(tmp_path, make("sq_sum / N - mean * mean +"))
    msg = item(res, "code_normal").message
    assert item(res, "code_normal").points == 0 and "编译失败" in msg and "104" in msg
    assert "请补全 ______" not in msg


def test_answers_appended_to_two_question_cells_stay_with_their_questions(tmp_path):
    nb = make(answers={})
    for gid in ("q2", "q3"):
        i = nb.cells.index(cell(nb, gid))
        nb.cells[i - 1].source += "\n\n" + ANSWERS[gid]
    res = grade(tmp_path, nb)
    assert item(res, "q2").points == 2.0 and item(res, "q3").points == 2.0
    assert item(res, "q1").points == 0


def test_deleted_answer_cell_replaced_by_a_new_cell_below_the_question(tmp_path):
    nb = make()
    q1 = cell(nb, "q1")
    i = nb.cells.index(q1)
    nb.cells[i] = nbformat.v4.new_markdown_cell(ANSWERS["q1"])
    res = grade(tmp_path, nb)
    assert item(res, "q1").points == 2.0 and any("q1" in n for n in res.notes)


def test_deleted_test_cell_changes_nothing(tmp_path):
    """Test cells are feedback: the hidden cases run on the source whether or not the cell is there."""
    nb = make()
    nb.cells.remove(cell(nb, "test_code_boundary"))
    res = grade(tmp_path, nb)
    assert item(res, "code_boundary").points == 1 and res.passed


@pytest.mark.parametrize("text", ["结果取决于 eps", "结果取决于eps", "与 eps 有关", "eps 不超过 1e-7",
                                  "eps is smaller than 1e-7"])
def test_rubric_light_notation_optional_space_and_alternatives(text):
    # q2's claim parts are written "取决于" / "eps ?(<=|<|小于|不超过|不大于|比) ?(1e-7|...)" in light notation
    from autograder.answers import claims, spec as answer_spec
    compiled = answer_spec.compile_spec(check.config.lesson(LESSON)["items"]["q2"]["rubric"])
    parts = {p.name: p for c in compiled.claims for pat in c.says for p in pat}
    from autograder.answers.normalise import normalise
    norm = normalise(text)
    assert any(claims.part_matches(parts[name], norm) for name in ("depends", "eps_small"))


def test_english_paraphrase_of_q2_gets_full_marks(tmp_path):
    # the scoring note asks for both cases: the default eps is fine, a tiny eps gives NaN
    en = ("With the default eps = 1e-5, var + eps = 1e-5 - 1e-7 is still positive, so nothing breaks. "
          "If the two-moment formula gives a variance of -1e-7 and eps is smaller than 1e-7, var + eps is negative, "
          "so rsqrtf returns NaN. The NaN propagates to the whole row because every output uses inv_std. "
          "fmaxf clamps var to 0, so var + eps >= eps > 0.")
    assert item(grade(tmp_path, make(answers={"q2": en})), "q2").points == 2.0


def test_stripped_metadata_with_one_answer_left_blank_keeps_answers_in_place(tmp_path):
    answers = dict(ANSWERS)
    answers["q1"] = "YOUR ANSWER HERE（请在此作答）"
    res = grade(tmp_path, _strip_nbgrader(make(answers=answers)))
    assert item(res, "explain_code").points == 1.0 and item(res, "q1").points == 0
    assert item(res, "q2").points == 2.0 and item(res, "q3").points == 2.0
