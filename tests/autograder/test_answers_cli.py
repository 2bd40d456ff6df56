"""`autograder score-answers` and `autograder rubric-eval`: the JSON Lines contract and the figures."""
from __future__ import annotations

import json

from autograder import cli
from autograder.answers.cli import evaluate, load_rows

GOOD = "FP32 里 exp(x) 在 x 超过约 88.7 时上溢为 inf，1e4 让分子分母都是 inf，inf/inf = NaN。" \
       "分子分母同乘 exp(-c)，所以减去最大值结果不变；减后每个参数 <= 0，每项在 (0, 1]，不会上溢。"
STUFFED = "因为减去最大值是为了加速，所以 exp 更快，导致 inf/inf = NaN 不会出现，结果会改变但可以接受。"


def write(tmp_path, rows):
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                 encoding="utf-8")
    return str(p)


def test_score_answers_one_line_out_per_line_in_in_order(tmp_path, capsys):
    path = write(tmp_path, [{"id": "a", "lesson": "06_softmax", "item": "q1", "text": GOOD, "extra": 1},
                            {"lesson": "06_softmax", "item": "q1", "text": STUFFED},
                            {"lesson": "06_softmax", "item": "explain_code", "text": ""}])
    assert cli.main(["score-answers", path, "--backend", "cpu"]) == 0
    out = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [o.get("id") for o in out] == ["a", None, None]
    for o in out:
        assert {"lesson", "item", "points", "max_points", "vetoes", "needs_review", "claims"} <= set(o)
    assert out[0]["points"] == 2 and out[0]["vetoes"] == []
    assert out[1]["points"] == 0 and {v["id"] for v in out[1]["vetoes"]} == {"misconception"}
    assert all({"id", "message", "evidence"} <= set(v) for v in out[1]["vetoes"])
    assert out[2]["points"] == 0 and out[2]["max_points"] == 1


def test_score_answers_names_the_bad_line(tmp_path, capsys):
    path = write(tmp_path, [{"lesson": "06_softmax", "item": "q1", "text": GOOD}, "not json",
                            {"lesson": "06_softmax", "item": "q7", "text": "x"}, {"lesson": "06_softmax", "item": "q1"}])
    assert cli.main(["score-answers", path]) == 1
    cap = capsys.readouterr()
    out = [json.loads(ln) for ln in cap.out.splitlines()]
    assert len(out) == 4 and out[0]["points"] == 2
    assert out[1] == {"line": 2, "error": "not JSON (Expecting value at column 1)"}
    assert out[2]["line"] == 3 and "no written item 'q7'" in out[2]["error"]
    assert out[3]["line"] == 4 and "'text'" in out[3]["error"]
    assert f"{path}:2:" in cap.err and f"{path}:3:" in cap.err
    assert cli.main(["score-answers", str(tmp_path / "missing.jsonl")]) == 2


def test_rubric_eval_figures(tmp_path, capsys):
    rows = []
    for s in ("s1", "s2"):      # two whole submissions of lesson 6 (code 3/3)
        for iid, text, human in (("explain_code", "expf(x - row_max)", 0), ("q1", GOOD, 2),
                                 ("q2", "我不知道。", 0), ("q3", "我不知道。", 0)):
            rows.append({"lesson": "06_softmax", "item": iid, "text": text, "human_score": human,
                         "category": "natural_zh", "student": s, "code_points": 3})
    rows[4]["human_score"] = 1                  # s2: a lenient human gives 1 + 2 more, so s2 passes (8/10)
    rows[6]["human_score"] = 2
    rows.append({"lesson": "06_softmax", "item": "q1", "text": STUFFED, "human_score": 0, "human_veto": False,
                 "category": "keyword_stuffing"})
    path = write(tmp_path, rows)
    fig = evaluate(load_rows(path, "cpu"), worst=3)
    assert fig["answers"] == 9 and fig["exact"] == 7 / 9 and fig["within_one"] == 8 / 9
    assert fig["mean_abs_error"] == 3 / 9
    assert fig["stuffed"] == 1 and fig["stuffed_above_1"] == 0
    assert fig["false_vetoes"] == 1 and fig["missed_vetoes"] == 0      # the stuffed answer: auto veto, human none
    assert fig["submissions"] == 2
    assert fig["pass_fail_flips"] == [{"lesson": "06_softmax", "student": "s2", "human_passed": True,
                                       "auto_passed": False, "human": 8.0, "auto": 5.0}]
    assert fig["by_category"]["keyword_stuffing"]["false_veto"] == 1
    assert fig["by_item"]["06_softmax/q2"]["false_denial"] == 1
    assert fig["confusion"]["max 2"]["human 2 / auto 0"] == 1
    assert fig["worst"][0]["item"] == "q2" and fig["worst"][0]["text"] == "我不知道。"     # largest error first
    assert cli.main(["rubric-eval", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == 7 / 9
    assert cli.main(["rubric-eval", path]) == 0
    printed = capsys.readouterr().out
    assert "exact 77.8%" in printed and "flip 06_softmax s2" in printed and "我不知道。" in printed
    bad = write(tmp_path, [{"lesson": "06_softmax", "item": "q1", "text": GOOD}])
    assert cli.main(["rubric-eval", bad]) == 2
    assert "human_score" in capsys.readouterr().err


def test_rubric_eval_refuses_code_points_that_count_the_explanation(tmp_path, capsys):
    # code_points are the code tests' points (2 + 1); the explanation point is the explain_code line itself,
    # so a 4 would move the student's total by a point and hide or invent pass/fail flips
    path = write(tmp_path, [{"lesson": "06_softmax", "item": "q1", "text": GOOD, "human_score": 2,
                             "student": "s1", "code_points": 4}])
    assert cli.main(["rubric-eval", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1:" in err and "0..3" in err and "explain_code" in err
