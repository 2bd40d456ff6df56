"""nbgrader glue: ClearCudaSolutions (generate), SandboxedExecute + JudgeVerdict (autograde),
VerdictCsvExport (export), and the course's nbgrader config (``configure``)."""
from .clear_cuda_solutions import ClearCudaSolutions
from .config import (autograde_preprocessors, configure, generate_preprocessors, make_config,
                     prepare_environment, write_course_config)

__all__ = ["ClearCudaSolutions", "autograde_preprocessors", "configure", "generate_preprocessors", "make_config",
           "prepare_environment", "write_course_config"]
