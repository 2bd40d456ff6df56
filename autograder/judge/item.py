"""``check_item``: one item scored exactly as the whole-notebook judge scores it (see ``autograder.judge``)."""
from __future__ import annotations

from typing import Dict, Optional, Union

from .. import config
from ..settings import CourseLayout, GradingSettings, machine_backend
from ..verdict import ItemScore
from . import scorers


def check_item(lesson_id: str, item_id: str, sources: Union[None, str, Dict[str, str]] = None, *,
               text: Optional[str] = None, seed: Optional[int] = None, settings: Optional[GradingSettings] = None,
               layout: Optional[CourseLayout] = None, backend: Optional[str] = None,
               prompt: Optional[str] = None) -> ItemScore:
    from .. import cases
    from .. import notebook as nbio
    layout = layout or CourseLayout.resolve()
    cfg = config.lesson(lesson_id, layout.rubric)
    if item_id not in cfg["items"]:
        raise KeyError(f"评分项「{item_id}」不存在；本课的评分项：{', '.join(cfg['items'])}")
    item = cfg["items"][item_id]
    settings = settings or GradingSettings.resolve(cfg["settings"])
    backend = backend or machine_backend(settings)
    seed = cases.new_seed() if seed is None else int(seed)
    gid = scorers.grade_id(item_id, item)
    pts = float(item["points"])
    if item["kind"] == "rubric":
        from . import answers, template
        if text is None and isinstance(sources, str):     # L.check("q2") passes the answer positionally
            text = sources
        if prompt is None:
            tpl = template.released_from_file(layout.solution(cfg))
            prompt = nbio.template_prompt(tpl, gid) if tpl is not None else ""
        return answers.score_written(answers.visible_text(nbio.fill_source(text or "")), item["rubric"], pts,
                                     item=item_id, prompt=answers.visible_text(prompt), backend=backend, grade_id=gid)
    if item["kind"] != "cases":
        raise ValueError(f"评分项「{item_id}」是 {item['kind']} 项：只能随整本笔记本一起评分（L.self_check()）")
    from ..sandbox import core as sbx
    from .executor import SandboxExecutor
    needed = cases.item_sources(cfg, item_id)
    if isinstance(sources, str):
        if len(needed) != 1:
            raise ValueError(f"评分项「{item_id}」用到 {len(needed)} 段源码（{', '.join(needed)}）：请传 {{源码 id: 文本}}")
        sources = {needed[0]: sources}
    sources = dict(sources or {})
    missing = [s for s in needed if not isinstance(sources.get(s), str)]
    if missing:
        return ItemScore(item_id, "cases", 0.0, pts, grade_id=gid,
                         message=f"缺少源码 {', '.join(missing)}：请先运行定义它的单元格")
    work = sbx.prepare_workdir(prefix="check-")
    try:
        res = cases.run_items(cfg, [item_id], sources, seed=seed, checks=settings.checks,
                              executor=SandboxExecutor(settings, work / "cases", backend=backend))
    finally:
        sbx.reclaim(work)

    class _Ctx:
        def case_results(self):
            return res

        def source_problem(self, _):
            return ""
    return scorers.get("cases").score(_Ctx(), item_id, item)
