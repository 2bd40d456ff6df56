"""One ``Scorer`` per item kind, registered by kind (``@register``), each returning an ``ItemScore``.

A kind says how its entries in grading_rubric.yaml are checked (``validate``), which nbgrader cell holds
it (``default_grade_id``) and how it is scored from a judging context (``score``). ``config`` validates
items and the judge scores them through this registry only; adding a kind is one class here.

* ``cases``  — the CUDA source extracted statically, compiled and launched on hidden case families in a
  sandbox; full points when every family passes (``autograder.cases`` + ``autograder.judge.executor``);
* ``rubric`` — a written answer, scored from its visible text (``autograder.judge.answers``);
* ``test``   — an nbgrader test cell of plain asserts (Python exercises): points when the test cell, with
  its hidden tests restored, ran without error in the sandboxed notebook run. Unlike ``cases`` this trusts
  the learner's Python process (it is the thing under test); CUDA lessons use ``cases``.
"""
from __future__ import annotations

from typing import Any, Dict

from ..verdict import ItemScore

REGISTRY: Dict[str, "Scorer"] = {}


def register(cls):
    REGISTRY[cls.kind] = cls()
    return cls


def get(kind: str) -> "Scorer":
    return REGISTRY[kind]


def kinds():
    return tuple(REGISTRY)


def grade_id(item_id: str, item: Dict[str, Any]) -> str:
    """The nbgrader grade_id of an item: its own ``grade_id`` or its kind's default."""
    return item.get("grade_id") or get(item["kind"]).default_grade_id(item_id)


class Scorer:
    kind = ""
    code = False          # a code item (the hint key "code" penalises these)

    def default_grade_id(self, item_id: str) -> str:
        return f"test_{item_id}"

    def validate(self, item: Dict[str, Any], where: str, lesson: Dict[str, Any]) -> None:
        """Raise ``config.RubricError`` naming the key path."""

    def score(self, ctx, item_id: str, item: Dict[str, Any]) -> ItemScore:
        raise NotImplementedError


@register
class CasesScorer(Scorer):
    kind = "cases"
    code = True

    def validate(self, item, where, lesson):
        from .. import config
        config.validate_cases(item, where, lesson.get("kernels") or {}, lesson.get("arrays") or {})

    def score(self, ctx, item_id, item):
        pts = float(item["points"])
        gid = grade_id(item_id, item)
        res = ctx.case_results().get(item_id)
        if res is None:
            return ItemScore(item_id, self.kind, 0.0, pts, message=ctx.source_problem(item_id) or "未评分",
                             grade_id=gid)
        fams = tuple(f.to_dict() for f in res.families)
        if res.passed:
            return ItemScore(item_id, self.kind, pts, pts, message=f"通过（{len(fams)} 个用例族）", families=fams,
                             grade_id=gid)
        bad = [f for f in res.families if not f.passed]
        causes = {f.reason.split("失败：", 1)[-1] for f in bad}
        if len(bad) > 1 and len(causes) == 1 and bad[0].error_kind in ("compile", "crash", "timeout", "memory"):
            text = f"{len(bad)} 个用例族都没有通过，原因相同：{causes.pop()}"     # one compile error, said once
        else:
            text = "；\n".join(f.reason + evidence_text(f.to_dict()) for f in bad)
        return ItemScore(item_id, self.kind, 0.0, pts, message=text + f"（随机种子 seed={res.seed}）",
                         families=fams, grade_id=gid)


def _value(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def evidence_text(fam: Dict[str, Any]) -> str:
    """What a failing family's draw was and where it first went wrong (Chinese, one clause)."""
    parts = []
    params = fam.get("params") or {}
    if params:
        parts.append("输入 " + ", ".join(f"{k}={_value(v)}" for k, v in params.items()))
    if fam.get("index") is not None and "expected" in fam:
        idx = ", ".join(str(i) for i in fam["index"])
        tol = fam.get("tol") or {}
        allowed = f"，此处允许误差 {_value(tol['at_index'])}" if "at_index" in tol else ""
        parts.append(f"第一个不符的元素 {fam.get('output') or ''}[{idx}]：期望 {_value(fam['expected'])}，"
                     f"实际 {_value(fam['got'])}{allowed}")
    return f"（{'；'.join(parts)}）" if parts else ""


@register
class TestScorer(Scorer):
    kind = "test"
    code = True

    def score(self, ctx, item_id, item):
        from .. import notebook as nbio
        pts = float(item["points"])
        gid = grade_id(item_id, item)
        run = ctx.test_run()
        cell = nbio.cells_by_grade_id(run.nb).get(gid) if run is not None else None
        if cell is None:
            why = "测试单元格被删除了（或改成了别的单元格）。测试单元格不能删除，请从原始课程笔记本把它复制回来再提交" \
                if gid not in nbio.cells_by_grade_id(ctx.nb) else "测试单元格没有运行"
            return ItemScore(item_id, self.kind, 0.0, pts, message=why, grade_id=gid)
        if cell.get("execution_count") is None and not cell.get("outputs"):
            msg = "测试单元格没有运行" + (f"：{run.error}" if run.error else "（前面的单元格让内核退出或超时）")
            return ItemScore(item_id, self.kind, 0.0, pts, message=msg, grade_id=gid)
        err = nbio.cell_error(cell)
        if err is not None:
            from ..check import explain_cell_error
            return ItemScore(item_id, self.kind, 0.0, pts, message=explain_cell_error(run.nb, cell, err), grade_id=gid)
        return ItemScore(item_id, self.kind, pts, pts, message="通过", grade_id=gid)


@register
class RubricScorer(Scorer):
    kind = "rubric"

    def default_grade_id(self, item_id):
        return item_id

    def validate(self, item, where, lesson):
        from .. import config
        spec = item.get("rubric")
        if not isinstance(spec, dict):
            raise config.RubricError(f"{where}.rubric: expected a mapping")
        from ..answers import SpecError, validate
        try:
            validate(spec)
        except SpecError as exc:
            raise config.RubricError(f"{where}.rubric: {exc}") from None

    def score(self, ctx, item_id, item):
        from .. import notebook as nbio
        from . import answers
        pts = float(item["points"])
        gid = grade_id(item_id, item)
        cell = nbio.cells_by_grade_id(ctx.nb).get(gid)
        if cell is None:
            return ItemScore(item_id, self.kind, 0.0, pts, grade_id=gid,
                             message=f"找不到答题单元格「{gid}」：它被删除了；请从原始课程笔记本把答题单元格复制回来，把答案写在里面")
        text, note = answers.visible_text(nbio.answer_text(cell)), ""
        if answers.is_blank(text):
            stray = nbio.stray_answer(ctx.nb, ctx.template, gid)
            if stray:
                text = answers.visible_text(stray)
                note = (f"（答案没有写在「{gid}」答题单元格里，而是写在了旁边新建的单元格或题目单元格中；"
                        f"已按本题计分，下次请写在答题单元格内）")
        ctx.answers[gid] = text
        prompt = answers.visible_text(nbio.template_prompt(ctx.template, gid))
        res = answers.score_written(text, item["rubric"], pts, item=item_id, prompt=prompt, backend=ctx.backend,
                                    grade_id=gid)
        return res.with_points(res.points, note) if note else res
