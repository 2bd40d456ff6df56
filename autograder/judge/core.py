"""``judge``: one submitted notebook -> one ``Verdict``. Trusted; runs nothing of the submission itself.

1. the lesson's released template comes from nbgrader's pipeline on the solution (``template``), never from
   a file the learner can edit;
2. editor damage is repaired (nbgrader metadata restored from the template), with a note;
3. the CUDA sources are read statically (``sources``); each item is scored by its kind's ``Scorer``
   (cases: launched in a sandbox, compared here; rubric: the visible answer text; test: the sandboxed run);
4. hint usage costs what ``settings.hint_penalty`` says; vetoes (edits outside the blanks, deleted or
   loosened asserts, and the items' own: misconceptions, GPU claims against the grader's backend);
5. ``verdict.pass_rule`` decides, in ``Verdict.passed``.

The in-notebook test cells are feedback for the learner; they never decide a score.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional

from .. import config, hints, vetoes
from .. import notebook as nbio
from ..settings import CourseLayout, GradingSettings, machine_backend
from ..verdict import ItemScore, Veto, Verdict
from . import scorers, sources, template


class JudgeError(RuntimeError):
    """The judge itself cannot work (no template, sandbox required but missing); Chinese + English text."""


@lru_cache(maxsize=1)
def grader_version() -> str:
    """Package version plus a hash of the grading code, so a regrade after a grader change is not skipped."""
    try:
        from importlib.metadata import version
        v = version("cuda-llm-ops-course")
    except Exception:
        v = "0"
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent
    for p in sorted(here.rglob("*.py")):
        h.update(p.relative_to(here).as_posix().encode())
        h.update(p.read_bytes())
    return f"{v}+{h.hexdigest()[:10]}"


def rubric_hash(lesson_cfg: dict) -> str:
    data = json.dumps(lesson_cfg, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:12]


class Context:
    """What scorers read: the (repaired) submission, its template, the extracted sources, the machine."""

    def __init__(self, lesson: dict, nb, template_nb, *, seed: int, backend: str, settings: GradingSettings,
                 layout: CourseLayout, work: Optional[Path], executed=None):
        self.lesson, self.nb, self.template = lesson, nb, template_nb
        self.seed, self.backend, self.settings, self.layout = seed, backend, settings, layout
        self.work = work
        self._test_run = executed
        self.extracted = sources.extract_all(nb, lesson)
        self.answers: Dict[str, str] = {}
        self.notes: List[str] = []
        self._cases = None
        self.sandboxed: Optional[bool] = None

    def source_problem(self, item_id: str) -> str:
        for sid in self.item_sources(item_id):
            ex = self.extracted.get(sid)
            if ex is None or ex.code is None:
                return ex.problem if ex else f"课程配置里没有源码「{sid}」"
        return ""

    def item_sources(self, item_id: str):
        from ..cases import item_sources
        return item_sources(self.lesson, item_id)

    def _workdir(self) -> Path:
        if self.work is None:
            from ..sandbox import core as sbx
            self.work = sbx.prepare_workdir(prefix="judge-")
        return self.work

    def case_results(self):
        """Every ``cases`` item whose sources could be read, launched in one sandboxed runner."""
        if self._cases is None:
            from .. import cases
            from .executor import SandboxExecutor
            ids = [i for i, it in self.lesson["items"].items() if it["kind"] == "cases" and not self.source_problem(i)]
            codes = {sid: ex.code for sid, ex in self.extracted.items() if ex.code is not None}
            ex = SandboxExecutor(self.settings, self._workdir() / "cases", backend=self.backend)
            self._cases = cases.run_items(self.lesson, ids, codes, seed=self.seed, checks=self.settings.checks,
                                          executor=ex) if ids else {}
            self._note_sandbox(ex.sandboxed)
        return self._cases

    def test_run(self):
        """The notebook with its test cells restored, run once in the sandbox (``test`` items only)."""
        if self._test_run is None:
            from .. import check, execute
            run_nb = check.prepare_for_run(self.nb, self.lesson, self.layout)
            self._test_run = execute.run(run_nb, lesson=self.lesson, settings=self.settings, layout=self.layout,
                                         work=self._workdir() / "tests", backend=self.backend)
            self._note_sandbox(self._test_run.sandboxed)
        return self._test_run

    def _note_sandbox(self, sandboxed):
        if sandboxed is None:
            return
        self.sandboxed = sandboxed if self.sandboxed is None else (self.sandboxed and sandboxed)


def _zero(cfg, message: str) -> List[ItemScore]:
    return [ItemScore(iid, it["kind"], 0.0, float(it["points"]), message=message,
                      grade_id=scorers.grade_id(iid, it)) for iid, it in cfg["items"].items()]


def unreadable_verdict(cfg: dict, message: str, *, seed=None, settings=None) -> Verdict:
    """The verdict on a file that is not a readable notebook: every item 0, the reason as the error."""
    return Verdict(lesson=cfg["id"], items=tuple(_zero(cfg, "未评分：文件不是可读的笔记本")),
                   pass_score=float(cfg["settings"]["pass_score"]), errors=(message,), seed=seed,
                   backend=machine_backend(settings or GradingSettings()), grader_version=grader_version(),
                   rubric_hash=rubric_hash(cfg))


def _guarded_sources(ctx: Context):
    """``(source id, learner's extraction, template's extraction)`` of every source the template-edit veto
    guards and both notebooks hold."""
    t_cells = nbio.cells_by_grade_id(ctx.template)
    for sid in (ctx.lesson.get("vetoes") or {}).get("template_edits") or []:
        ex, tc = ctx.extracted.get(sid), t_cells.get(sid)
        if ex is not None and ex.code is not None and tc is not None:
            yield sid, ex, sources.extract(tc.source, ctx.lesson["sources"][sid]["var"])


def source_shape_vetoes(ctx: Context) -> List[Veto]:
    """Python added to (or changed in) a source cell besides the CUDA literal counts as an edit outside the
    blanks, e.g. ``L.grade = lambda *a, **k: None`` after the string."""
    out = []
    for sid, ex, want in _guarded_sources(ctx):
        var = ctx.lesson["sources"][sid]["var"]
        # either cell form holds the source (%%cuda VAR, or VAR = r"""..."""); nothing else may be added
        ok = {want.python_shape, sources.magic_shape(var), sources.assignment_shape(var)}
        if want.python_shape and ex.python_shape not in ok:
            out.append(Veto("template_edit", f"源码单元格「{sid}」里除了 CUDA 字符串之外的 Python 代码被修改或添加了："
                                             "这个单元格只能修改字符串里的 ______。", sid))
    return out


_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(\w*)(.*)$", re.M)
_PRAGMA_OP = re.compile(r"\b(?:_Pragma|__pragma)\s*\(")
_LOOP_PRAGMA = re.compile(r"^(?:unroll(?:\s*\(?\s*\w+\s*\)?)?|nounroll)\s*$")


def _directives(code: str) -> List[str]:
    """The preprocessor directives of a CUDA text as the compiler sees them (lines spliced, comments gone),
    whitespace-normalised; ``_Pragma(...)`` operators count as directives too."""
    from ..vetoes import strip_comments
    text = strip_comments(code.replace("\r\n", "\n").replace("\\\n", ""))
    out = [" ".join(f"#{m.group(1)} {m.group(2)}".split()) for m in _DIRECTIVE.finditer(text)]
    return out + ["_Pragma(" for _ in _PRAGMA_OP.finditer(text)]


def blank_directive_vetoes(ctx: Context) -> List[Veto]:
    """A blank holds code, never preprocessor lines: a macro defined in a blank rewrites the template after
    it (``#define fmaxf(a, b) (a)`` removes a protected clamp) while the tokens still match the template.
    Directives beyond the template's own are an edit outside the blanks; loop pragmas (``#pragma unroll``)
    are code and allowed."""
    from collections import Counter
    out = []
    for sid, ex, want in _guarded_sources(ctx):
        extra = Counter(_directives(ex.code)) - Counter(_directives(want.code or ""))
        bad = [d for d in extra.elements()
               if not (d.startswith("#pragma ") and _LOOP_PRAGMA.match(d[len("#pragma "):]))]
        if bad:
            out.append(Veto("template_edit", f"源码单元格「{sid}」的填空里写了预处理指令（{bad[0][:80]}）："
                                             "宏和 #include 会改变填空之外的代码，填空里只能写表达式或语句"
                                             "（#pragma unroll 除外）。", "；".join(bad[:5])))
    return out


def judge(submission_nb, lesson_id: str, *, seed: Optional[int] = None, backend: Optional[str] = None,
          settings: Optional[GradingSettings] = None, layout: Optional[CourseLayout] = None,
          executed=None, hints_used: Optional[Dict[str, int]] = None, notes=(), work=None) -> Verdict:
    """Grade one submitted notebook (a NotebookNode as submitted: not executed by us, not trusted).

    ``backend``: the grader's record of where kernels run (default: this machine). ``executed``: the
    ``execute.Execution`` of this notebook prepared by ``check.prepare_for_run`` and already run for
    feedback (``test`` items reuse it instead of running it again). ``hints_used``:
    usage recorded outside the notebook (the sidecar file). ``work``: a private directory for the sandboxes
    (default: a fresh temporary one).
    """
    from .. import cases
    layout = layout or CourseLayout.resolve()
    cfg = config.lesson(lesson_id, layout.rubric)
    settings = settings or GradingSettings.resolve(cfg["settings"])
    backend = backend or machine_backend(settings)
    seed = cases.new_seed() if seed is None else int(seed)
    notes = list(notes)
    base = dict(lesson=lesson_id, pass_score=float(cfg["settings"]["pass_score"]), seed=seed, backend=backend,
                grader_version=grader_version(), rubric_hash=rubric_hash(cfg))
    nb = copy.deepcopy(submission_nb)
    from ..check import wrong_lesson_message
    wrong = wrong_lesson_message(nb, lesson_id, layout)
    if wrong:
        return Verdict(items=tuple(_zero(cfg, "未评分：提交的是另一课的笔记本")), errors=(wrong,), notes=tuple(notes), **base)
    try:
        tpl = template.released_from_file(layout.solution(cfg))
    except Exception as exc:      # a malformed solution notebook: the instructor's problem, said plainly
        msg = f"本课的源笔记本 {layout.solution(cfg).name} 无法生成模板（nbgrader：{type(exc).__name__}: {str(exc)[:200]}）"
        return Verdict(items=tuple(_zero(cfg, "未评分")), errors=(msg,), notes=tuple(notes), **base)
    if tpl is None:
        msg = (f"找不到本课的模板来源 {layout.solution(cfg)}（solutions/ 下的源笔记本）：无法确认哪些地方允许修改，"
               "不能评分。请在课程仓库里运行，或用 --course-root 指向课程目录。")
        return Verdict(items=tuple(_zero(cfg, "未评分")), errors=(msg,), notes=tuple(notes), **base)
    if nbio.is_solution_notebook(nb):
        nb = nbio.filled(nb)          # an instructor's proof of full marks
    else:
        restored = nbio.restore_grade_ids(nb, tpl)
        if restored:
            notes.append(f"笔记本缺少 nbgrader 单元格元数据（可能用 VS Code / Google Colab 打开保存过，或把单元格复制到了新笔记本），"
                         f"已按模板找回 {len(restored)} 个评分单元格：{'、'.join(restored)}。")
    ctx = Context(cfg, nb, tpl, seed=seed, backend=backend, settings=settings, layout=layout, work=work,
                  executed=executed)
    errors: List[str] = []
    items = []
    try:
        for iid, it in cfg["items"].items():
            items.append(scorers.get(it["kind"]).score(ctx, iid, it))
    finally:
        if work is None and ctx.work is not None:
            from ..sandbox import core as sbx
            sbx.reclaim(ctx.work)
    usage = hints.merge_usage(hints.usage_from_notebook(submission_nb), hints_used or {})
    penalties = hints.penalties(cfg, usage, cfg["settings"]["hint_penalty"])
    for k, e in enumerate(items):
        d = penalties.get(e.item, 0.0)
        if d > 0 and e.points > 0:
            taken = min(d, e.points)
            items[k] = e.with_points(e.points - taken, f"（使用了提示，扣 {taken:g} 分）")
    found = [Veto(v.id, v.message, v.evidence) for v in vetoes.template_edit_vetoes(nb, tpl, cfg)]
    found += source_shape_vetoes(ctx)
    found += blank_directive_vetoes(ctx)
    if (cfg.get("vetoes") or {}).get("asserts", True):
        found += [Veto(v.id, v.message, v.evidence) for v in vetoes.assert_vetoes(nb, tpl)]
    gpu_claims = (cfg.get("vetoes") or {}).get("gpu_claims", True)
    found += [v for e in items for v in e.vetoes if gpu_claims or v.id != "gpu_claim"]
    if ctx.sandboxed is False:
        notes.append("本机没有可用的沙箱（bubblewrap）：代码在资源限制下直接运行，未隔离。")
    return Verdict(items=tuple(items), vetoes=tuple(found), errors=tuple(errors), notes=tuple(notes),
                   hints_used=usage, **base)
