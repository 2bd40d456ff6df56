"""Instructor batch grading (``autograder grade``): the coordinator (``run``), the wire format (``jobs``),
what a worker does (``worker``), where workers run (``pool``: local processes or Dask), the course directory
(``course``), results as they finish (``store``), reports (``report``) and website exports (``export``)."""
from .discover import Submission, discover, is_course_dir, student_id
from .jobs import SCHEMA, GradeJob, GradeOutcome, Status, grade_job
from .run import BatchResult, grade_batch, preflight


def main(argv=None) -> int:
    from .cli import grade_main
    return grade_main(argv)


def export_main(argv=None) -> int:
    from .cli import export_main as _export
    return _export(argv)


def demo_main(argv=None) -> int:
    """``autograder demo``: see autograder.demo."""
    from ..demo import main as _demo_main
    return _demo_main(argv)


__all__ = ["BatchResult", "GradeJob", "GradeOutcome", "SCHEMA", "Status", "Submission", "discover", "grade_batch",
           "grade_job", "is_course_dir", "main", "preflight", "student_id", "export_main", "demo_main"]
