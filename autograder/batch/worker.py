"""What a worker does with one ``GradeJob`` (trusted code; the submission's code runs only in sandboxes).

1. the judge on the submitted notebook (the verdict: hidden cases in the runner sandbox, answers, vetoes);
2. when ``settings.execute``: the notebook run for feedback in its own sandbox, test cells restored as
   nbgrader autograde restores them (a ``test`` item reuses this run).
"""
from __future__ import annotations

import shutil

from .jobs import GradeJob, GradeOutcome, Status


def run_job(job: GradeJob) -> GradeOutcome:
    import nbformat

    from .. import check, config, execute
    from .. import notebook as nbio
    from ..judge import judge
    from ..sandbox import core as sbx
    from ..settings import CourseLayout, GradingSettings, LayoutError

    layout = CourseLayout.from_dict(job.layout)
    if not layout.rubric.exists():        # a worker on another machine: its own checkout of the course
        try:
            layout = CourseLayout.resolve()
        except LayoutError as exc:
            return GradeOutcome.failed(job, Status.ERROR, f"worker has no course: {exc}")
    settings = GradingSettings.from_dict(job.settings)
    cfg = config.lesson(job.lesson, layout.rubric)
    work = sbx.prepare_workdir(prefix=f"grade-{job.student[:20]}-")
    try:
        path = work / (job.filename or f"{job.lesson}.ipynb")
        path.write_text(job.notebook, encoding="utf-8")
        try:
            nb = nbio.read(path)
        except (nbio.NotebookReadError, OSError) as exc:
            return GradeOutcome.failed(job, Status.INVALID, str(exc))
        executed = None
        error = None
        if settings.execute:
            check.repair(nb, check.template_notebook(cfg, layout))   # so the test cells are found again
            solution = check.solution_notebook(cfg, layout)
            run_nb = execute.without_judged_hidden_tests(check.prepare_for_run(nb, cfg, solution), cfg, solution)
            run = execute.run(run_nb, lesson=cfg, settings=settings, layout=layout, work=work / "feedback")
            executed, error = run, run.error
        verdict = judge(nb, job.lesson, seed=job.seed, settings=settings, layout=layout, hints_used=job.hints,
                        executed=executed, work=work / "judge")
        text = None
        if executed is not None:
            text = nbformat.writes(executed.nb)
            if len(text.encode()) > settings.max_notebook_mb * 2**20:
                text, error = None, (error or "") + "运行后的笔记本过大，没有保留。"
        status = Status.INVALID if verdict.errors and all("提交错了" in e for e in verdict.errors) else Status.GRADED
        return GradeOutcome(job.lesson, job.student, status, reason="；".join(verdict.errors),
                            verdict=verdict.to_dict(), executed=text, execution_error=error,
                            fingerprint=job.fingerprint, seed=job.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
