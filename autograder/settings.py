"""One settings object and one layout object, resolved once at the boundary (CLI, nbgrader config, a
worker's job) and passed explicitly from there on.

Precedence everywhere: command-line flags > environment > ``grading_rubric.yaml`` ``settings:`` > the
defaults in the field definitions below (the only place defaults live).

``CourseLayout``: where a course's files are — the course root holding ``solutions/``, ``lessons/`` and
``grading_rubric.yaml`` (the user's layout). An installed package finds it through ``--course-root``, the
``AUTOGRADER_COURSE_ROOT`` / ``AUTOGRADER_RUBRIC`` variables, the current directory, or the checkout the
package was installed from (editable installs).

``GradingSettings``: how grading runs (limits, checks, sandbox). Both travel to workers as plain dicts
(``to_dict`` / ``from_dict``).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

PACKAGE_CHECKOUT = Path(__file__).resolve().parent.parent
RUBRIC_FILE = "grading_rubric.yaml"


class LayoutError(FileNotFoundError):
    """No course root could be found; the message says how to point at one."""


@dataclass(frozen=True)
class CourseLayout:
    root: Path                      # holds solutions/, lessons/ (and usually the rubric)
    rubric: Path                    # grading_rubric.yaml

    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    @property
    def lessons(self) -> Path:
        return self.root / "lessons"

    def solution(self, lesson_cfg: Mapping[str, Any]) -> Path:
        return self.solutions / lesson_cfg["notebook"]

    def released(self, lesson_cfg: Mapping[str, Any]) -> Path:
        return self.lessons / lesson_cfg["notebook"]

    @classmethod
    def resolve(cls, course_root: Optional[os.PathLike] = None, rubric: Optional[os.PathLike] = None,
                env: Optional[Mapping[str, str]] = None) -> "CourseLayout":
        env = os.environ if env is None else env
        rubric = rubric or env.get("AUTOGRADER_RUBRIC", "").strip() or None
        course_root = course_root or env.get("AUTOGRADER_COURSE_ROOT", "").strip() or None
        if course_root is None and rubric is not None:
            course_root = Path(rubric).resolve().parent
        if course_root is None:
            for cand in (Path.cwd(), PACKAGE_CHECKOUT):
                if (cand / RUBRIC_FILE).exists():
                    course_root = cand
                    break
        if course_root is None:
            raise LayoutError(f"no course found: pass --course-root DIR (the folder with {RUBRIC_FILE}, "
                              "solutions/ and lessons/) or set AUTOGRADER_COURSE_ROOT")
        root = Path(course_root).resolve()
        return cls(root=root, rubric=Path(rubric).resolve() if rubric else root / RUBRIC_FILE)

    def to_dict(self) -> Dict[str, str]:
        return {"root": str(self.root), "rubric": str(self.rubric)}

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> "CourseLayout":
        return cls(root=Path(d["root"]), rubric=Path(d["rubric"]))


@dataclass(frozen=True)
class GradingSettings:
    time_limit_s: float = 240.0           # one submission's notebook run (feedback), whole notebook
    cell_timeout_s: int = 120             # one cell of that run
    checks: Tuple[str, ...] = ("memcheck", "racecheck")   # runtime checks on graded launches
    launch_timeout_s: float = 10.0        # one kernel launch on the CPU emulator (KERNELS_TIMEOUT)
    cases_time_limit_s: float = 180.0     # all hidden cases of one submission together
    sandbox: str = "auto"                 # auto | require | off  (see autograder.sandbox)
    memory_mb: int = 2048                 # resident memory of one sandbox
    max_procs: int = 64
    max_file_mb: int = 64
    max_output_kb: int = 256              # stdout/stderr kept from a sandboxed process
    max_notebook_mb: float = 20.0         # an executed notebook larger than this is not kept
    execute: bool = True                  # run the notebook for feedback (the verdict never needs it)
    backend: Optional[str] = None         # cpu | cupy (None: what this machine has)

    # keys of grading_rubric.yaml `settings:` that map onto these fields
    YAML_KEYS = ("time_limit_s", "cell_timeout_s", "checks")

    @classmethod
    def resolve(cls, rubric_settings: Optional[Mapping[str, Any]] = None, flags: Optional[Mapping[str, Any]] = None,
                env: Optional[Mapping[str, str]] = None) -> "GradingSettings":
        env = os.environ if env is None else env
        kw: Dict[str, Any] = {}
        for k in cls.YAML_KEYS:
            if rubric_settings and k in rubric_settings:
                kw[k] = rubric_settings[k]
        env_map = {"AUTOGRADER_SANDBOX": "sandbox", "AUTOGRADER_MEMORY_MB": "memory_mb",
                   "KERNELS_BACKEND": "backend", "AUTOGRADER_LAUNCH_TIMEOUT": "launch_timeout_s"}
        for var, k in env_map.items():
            if env.get(var, "").strip():
                kw[k] = env[var].strip()
        for k, v in (flags or {}).items():
            if v is not None:
                kw[k] = v
        return cls.from_dict(kw)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["checks"] = list(self.checks)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "GradingSettings":
        known = {f.name: f for f in fields(cls)}
        kw = {}
        for k, v in d.items():
            if k not in known:
                continue
            default = known[k].default
            if k == "checks":
                v = tuple(v.split(",") if isinstance(v, str) else v)
            elif k == "execute":
                v = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
            elif isinstance(default, bool):
                v = bool(v)
            elif isinstance(default, int) and not isinstance(default, bool):
                v = int(v)
            elif isinstance(default, float):
                v = float(v)
            kw[k] = v
        s = cls(**kw)
        from .sandbox import MODES
        if s.sandbox not in MODES:
            raise ValueError(f"sandbox {s.sandbox!r}: expected one of {', '.join(MODES)}")
        return s

    def with_(self, **kw) -> "GradingSettings":
        return replace(self, **kw)

    def limits(self, wall_s: float, *, address_space: bool = False):
        from .sandbox import Limits
        return Limits(wall_s=float(wall_s), cpu_s=int(wall_s * 2 + 30), memory_mb=self.memory_mb,
                      address_space_mb=(self.memory_mb * 2 if address_space else None), procs=self.max_procs,
                      file_mb=self.max_file_mb, output_kb=self.max_output_kb)


def machine_backend(settings: GradingSettings) -> str:
    """The grader's own record of where kernels run (never what a notebook printed)."""
    if settings.backend:
        return "cupy" if settings.backend in ("cupy", "gpu", "cuda") else "cpu"
    from kernels import _config
    return "cupy" if _config._gpu_available() else "cpu"


__all__ = ["CourseLayout", "GradingSettings", "LayoutError", "machine_backend"]
