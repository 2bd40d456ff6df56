"""The rubric file: every written item's claim block validates, config errors name the key, and an asserted
misconception of the real rubric vetoes with its evidence."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from autograder import answers, config

FIXTURES = Path(__file__).parent / "fixtures"



def test_fixture_rubric_loads_and_errors_name_the_key(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    cfg = config.lesson("05_layernorm")
    assert cfg["settings"]["pass_score"] == 8 and "q2" in cfg["items"]
    text = (FIXTURES / "grading_rubric.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "r.yaml"
    broken.write_text(text.replace('grid: "(M,)"', 'gridd: "(M,)"', 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"lessons\.05_layernorm\.kernels\.layernorm\.gridd"):
        config.load(broken)
    broken.write_text(text.replace("kind: rubric", "kind: essay", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"items\.explain_code\.kind"):
        config.load(broken)
    broken.write_text(text.replace("reference: layernorm", "reference: layernorm_v9", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match="layernorm_v9"):
        config.load(broken)
    broken.write_text(text.replace("kernel: layernorm,", "kernel: layernorm_x,", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"items\.code_normal\.cases\[0\]\.kernel: unknown kernel"):
        config.load(broken)
    broken.write_text(text.replace("dist: {constant: {value: 3.0}}", "dist: {gauss: {value: 3.0}}", 1),
                      encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"cases\[1\]\.arrays\.x\.dist"):
        config.load(broken)
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    with pytest.raises(config.RubricError, match="no such lesson"):
        config.lesson("42_nope")


def test_repo_rubric_is_valid():
    # the real grading_rubric.yaml (lesson authors' entries) must always validate
    data = config.load(config.REPO_ROOT / "grading_rubric.yaml")
    assert "settings" in data


def test_asserted_misconception_of_the_real_rubric_vetoes_with_evidence():
    spec = config.lesson("05_layernorm")["items"]["q3"]["rubric"]
    r = answers.score_answer("大均值、小方差时两矩法会灾难性消减，所以用 Welford，因为 Welford 更快。", spec, 2,
                             item="q3", backend="cpu")
    assert r.points == 0 and r.max_points == 2
    (v,) = [v for v in r.vetoes if v.id == "misconception"]
    assert "Welford 换来的是数值稳定" in v.message and "welford 更快" in v.evidence.lower()
    assert r.needs_review and "veto" in r.review_reasons and r.claims
    assert answers.is_blank("YOUR ANSWER HERE") and not answers.is_blank("方差为负")
    blank = answers.score_answer("", spec, 2, item="q3", backend="cpu")
    assert blank.points == 0 and blank.message == "未作答"


def test_validate_raises_the_config_error_naming_the_key(tmp_path, monkeypatch):
    with pytest.raises(answers.SpecError, match=r"claims\[0\]\.says"):
        answers.validate({"claims": [{"id": "a", "says": [["no_such_part"]]}]})
    with pytest.raises(answers.SpecError, match="concepts: unknown key"):   # the old format is refused
        answers.validate({"concepts": {"a": {"any": ["x"]}}, "claims": [{"id": "a", "says": [["nan"]]}]})
    # through the rubric loader: a config error naming the item
    text = (FIXTURES / "grading_rubric.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "grading_rubric.yaml"
    broken.write_text(text.replace("claims:", "chains:", 1), encoding="utf-8")
    with pytest.raises(config.RubricError, match=r"\.rubric: .*chains"):
        config.load(broken)


def _paraphrases(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for x in node:
            yield from _paraphrases(x)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k in ("parts", "says", "contradicts", "unless"):
                yield from _paraphrases(v)
            elif k in ("claims", "misconceptions"):
                for c in v:
                    yield from _paraphrases({kk: vv for kk, vv in c.items() if kk in ("says", "contradicts", "unless")})


def test_no_regex_syntax_in_literal_paraphrases():
    # a literal paraphrase is matched as written (light notation only): "[sz]", ".{0,4}", "(?!", "\\d" there
    # never match and silently cost recall; such a paraphrase must start with "re:"
    from autograder.answers.spec import LEXICON
    data = config.load(config.REPO_ROOT / "grading_rubric.yaml")
    blocks = [it["rubric"] for les in data["lessons"].values() for it in les["items"].values() if it["kind"] == "rubric"]
    blocks.append({"parts": yaml.safe_load(LEXICON.read_text(encoding="utf-8"))})
    bad = [p for b in blocks for p in _paraphrases(b) if not p.startswith("re:") and
           re.search(r"\[[a-z]{2,}\]|\.\{\d|\(\?|\\[dswb]|\|\)|\(\|", p)]
    assert not bad, bad


