"""nbgrader glue: the ClearCudaSolutions preprocessor and the course's nbgrader config."""
from .clear_cuda_solutions import ClearCudaSolutions
from .config import generate_preprocessors, make_config, prepare_environment, write_course_config

__all__ = ["ClearCudaSolutions", "generate_preprocessors", "make_config", "prepare_environment",
           "write_course_config"]
