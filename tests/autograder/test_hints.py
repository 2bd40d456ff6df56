"""Hint ladder, usage records, penalties, and the lesson API around them."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder import config, hints, lesson
from autograder import notebook as nbio

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def fixture_rubric(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    monkeypatch.delenv("AUTOGRADER_RUNNING", raising=False)
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


def cfg():
    return config.lesson("05_layernorm")


def test_ladder_goes_up_one_level_per_call_and_stops_at_four():
    used = 0
    seen = []
    for _ in range(6):
        used, text = hints.next_level(cfg(), "code", used)
        seen.append(used)
    assert seen == [1, 2, 3, 4, 4, 4]
    assert hints.next_level(cfg(), "code", 0, level=4)[1].startswith("sq_sum / static_cast")
    assert "第 1 级 · 概念区域" in hints.format_hint("code", 1, "x", 4)
    assert "再运行一次" not in hints.format_hint("code", 4, "x", 4)


def test_unknown_item_lists_the_known_ones():
    with pytest.raises(KeyError, match="code, q2"):
        hints.next_level(cfg(), "q9", 0)


def test_sidecar_records_max_level(tmp_path):
    nb = tmp_path / "05_layernorm.ipynb"
    hints.record(nb, "05_layernorm", "code", 2)
    hints.record(nb, "05_layernorm", "code", 1)
    hints.record(nb, "05_layernorm", "q2", 1)
    assert hints.read_sidecar(nb) == {"code": 2, "q2": 1}
    assert hints.sidecar_path(nb) == tmp_path / ".hints" / "05_layernorm.json"
    assert hints.read_sidecar(tmp_path / "other.ipynb") == {}


def test_penalties_map_code_to_every_code_item():
    pen = hints.penalties(cfg(), {"code": 3, "q2": 4}, [0, 0, 0.5, 1])
    assert pen == {"code_normal": 0.5, "code_boundary": 0.5, "q2": 1.0}
    assert hints.penalties(cfg(), {"code": 2}, [0, 0, 0.5, 1]) == {"code_normal": 0.0, "code_boundary": 0.0}


def test_usage_from_notebook_outputs_and_merge():
    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell('L.hint("q2")')
    c.outputs = [nbformat.v4.new_output("display_data", data={nbio.HINT_MIME: {"item": "q2", "level": 2},
                                                               "text/plain": "..."})]
    nb.cells = [c]
    assert hints.usage_from_notebook(nb) == {"q2": 2}
    assert hints.merge_usage({"q2": 2}, {"q2": 1, "code": 1}) == {"q2": 2, "code": 1}


def test_lesson_hint_records_and_is_a_noop_in_grading_runs(tmp_path, capsys, monkeypatch):
    L = lesson.load("05_layernorm")
    out = capsys.readouterr().out
    assert "后端：cpu" in out and "CPU 模拟器" in out
    nb = tmp_path / "05_layernorm.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), str(nb))
    L.hint("code", notebook=str(nb))
    assert L.last_hint_level == 1
    L.hint("code", notebook=str(nb))
    assert L.last_hint_level == 2
    assert "第 2 级 · 具体方向" in capsys.readouterr().out
    assert hints.read_sidecar(nb) == {"code": 2}
    monkeypatch.setenv("AUTOGRADER_RUNNING", "1")
    assert L.hint("code", notebook=str(nb)) is None
    assert L.self_check(str(nb)) is None
    assert "评分运行中" in capsys.readouterr().out
    assert hints.read_sidecar(nb) == {"code": 2}


def test_notebook_path_discovery(tmp_path, monkeypatch):
    nb = tmp_path / "x.ipynb"
    nb.write_text("{}")
    assert lesson.notebook_path(str(nb), cfg()) == nb.resolve()
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
    assert lesson.notebook_path(None, cfg()) == nb.resolve()
    monkeypatch.delenv("JPY_SESSION_NAME")
    monkeypatch.chdir(tmp_path)
    assert lesson.notebook_path(None, cfg()) is None
    (tmp_path / "05_layernorm.ipynb").write_text("{}")
    assert lesson.notebook_path(None, cfg()) == (tmp_path / "05_layernorm.ipynb").resolve()


def test_lesson_compile_error_returns_none_with_chinese_explanation(capsys):
    from test_cases import _real_backend_or_skip
    _real_backend_or_skip()
    L = lesson.load("05_layernorm")
    LAYERNORM_CU = '__global__ void k(float* p) { p[0] = undefined_name; }'   # noqa: N806 (lesson style)
    assert L.compile(LAYERNORM_CU) is None
    out = capsys.readouterr().out
    assert "编译失败" in out and "undefined_name" in out


def test_lesson_grade_raises_chinese_summary_and_passes_for_correct_source(capsys):
    from test_cases import LAYERNORM_CU as TEMPLATE, _real_backend_or_skip
    _real_backend_or_skip()
    L = lesson.load("05_layernorm")
    LAYERNORM_CU = TEMPLATE.replace("VAR_EXPR", "sq_sum / static_cast<float>(N)")   # noqa: N806 (wrong)
    with pytest.raises(AssertionError, match="用例族「N 为 block 整数倍」失败"):
        L.grade("code_normal", seed=1)
    LAYERNORM_CU = TEMPLATE.replace("VAR_EXPR", "sq_sum / static_cast<float>(N) - mean * mean")  # noqa: N806
    assert L.grade("code_normal", seed=1) is None
    res = L.last_grade
    assert res.passed and "通过 N 为 block 整数倍" in capsys.readouterr().out
    assert L.run("layernorm", M=2, N=100, eps=1e-5)["passed"]
