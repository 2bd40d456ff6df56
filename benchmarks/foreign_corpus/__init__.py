"""The foreign-kernel corpus: public CUDA kernels run verbatim through ``kernels`` (issue 21).

No third-party code is stored here. Each ``Source`` names a repository, a pinned commit and the spans of its
files that make one NVRTC translation unit (the device code, verbatim, in file order); ``prelude`` and
``changes`` state every change NVRTC itself needs (host code dropped, a macro a host header defined, ...).
Nothing is changed for the emulator's sake. Each ``Case`` launches one or more of the TU's kernels exactly
as the repository's launcher does and compares the outputs with a numpy reference.

Batches: ``tune`` (the repositories the emulator's fixes were developed on) and ``heldout`` (added after
the fixes, never tuned on). ``benchmarks/foreign_kernels.py`` runs them.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

MIRROR_ROOT = Path("/work/.mirror")


@dataclass(frozen=True)
class Repo:
    name: str       # owner/name on GitHub
    commit: str     # the pinned commit every span is read at

    @property
    def mirror(self) -> str:
        return self.name.replace("/", "+")


@dataclass(frozen=True)
class Span:
    """Lines of one file: from the first line matching ``start`` (inclusive) to the first later line
    matching ``end`` (exclusive; None = end of file). ``start``/``end`` are regexes or 1-based line numbers."""
    path: str
    start: Union[str, int] = 1
    end: Union[str, int, None] = None
    after: Optional[str] = None        # look for ``start`` only after the first line matching this


# Host headers NVRTC does not have (cupy would reject them the same way); the CUDA ones stay.
HOST_INCLUDES = (r'^\s*#\s*include\s*[<"](stdio|stdlib|string|assert|math|float|time|omp)\.h[>"]',
                 r'^\s*#\s*include\s*[<"](cstdio|cstdlib|cstring|cassert|cmath|algorithm|iostream|vector)[>"]',
                 r'^\s*#\s*include\s*[<"](helper_\w+|cublas_v2|cublasLt|cuda_profiler_api)\.h[>"]',
                 r'^\s*#\s*include\s*"[\w./]+_common\.h"', r'^\s*#\s*include\s*"common\.h"')


@dataclass
class Source:
    id: str
    repo: Repo
    spans: List[Span]
    prelude: str = ""                  # text NVRTC needs before the spans (stated in ``changes``)
    changes: List[str] = field(default_factory=list)
    options: Tuple[str, ...] = ()
    name_expressions: Tuple[str, ...] = ()
    drop: Tuple[str, ...] = HOST_INCLUDES   # lines (regexes) blanked inside the spans: host-only includes

    @property
    def dropped(self) -> List[str]:
        return [f"lines matching {d!r} blanked" for d in self.drop]


@dataclass
class Launch:
    kernel: str                        # kernel name or name expression
    grid: tuple
    block: tuple
    args: Sequence[Union[int, Tuple[int, int]]]   # buffer indices; (index, offset) = a pointer into the buffer
    shared_mem: int = 0
    cooperative: bool = False          # a cooperative launch on the GPU (cg::this_grid().sync())


@dataclass
class Case:
    id: str
    source: str                        # Source.id
    launches: List[Launch]
    make: Callable[[np.random.Generator], list]            # buffers (numpy arrays and scalars)
    ref: Optional[Callable[[list], dict]] = None           # {index or (index, (lo, hi)): expected}, from the inputs
    rtol: float = 1e-4
    atol: float = 1e-5
    bf16: Tuple[int, ...] = ()         # buffer indices holding bf16 bits (uint16): compared as float
    note: str = ""
    check: Optional[Callable[[list, list], Optional[str]]] = None   # (outputs, inputs) -> problem or None
    # A bug in the upstream kernel itself (found by this corpus), as (error kind, description): the case passes
    # when it is reported. The emulator runs it under the check that reports that kind (out_of_bounds:
    # memcheck, as compute-sanitizer's memcheck on the GPU); the GPU must fault (an illegal address).
    bug: Optional[Tuple[str, str]] = None

    @property
    def kernels(self) -> List[str]:
        return list(dict.fromkeys(l.kernel for l in self.launches))


class Corpus:
    def __init__(self, batch: str):
        self.batch = batch
        self.sources: Dict[str, Source] = {}
        self.cases: List[Case] = []

    def source(self, *a, **k) -> Source:
        s = Source(*a, **k)
        self.sources[s.id] = s
        return s

    def case(self, *a, **k) -> Case:
        c = Case(*a, **k)
        assert c.source in self.sources, c.source
        self.cases.append(c)
        return c


# ------------------------------------------------------------------------------ reading the mirror

class Files:
    """Reads ``path`` at ``commit`` from the fetched mirror (``git show``) or from an exported tree."""

    def __init__(self, root: Path = MIRROR_ROOT, exported: bool = False):
        self.root = Path(root)
        self.exported = exported
        self._cache: Dict[Tuple[str, str, str], str] = {}

    def read(self, repo: Repo, path: str) -> str:
        key = (repo.name, repo.commit, path)
        if key not in self._cache:
            if self.exported:
                text = (self.root / repo.mirror / repo.commit / path).read_text(errors="replace")
            else:
                git_dir = self.root / repo.mirror / "repo"
                text = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{repo.commit}:{path}"],
                                      check=True, capture_output=True, text=True, errors="replace").stdout
            self._cache[key] = text
        return self._cache[key]

    def export(self, repo: Repo, path: str, dest: Path) -> None:
        out = dest / repo.mirror / repo.commit / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.read(repo, path))


def _find(lines: List[str], pat: Union[str, int, None], after: int, default: int) -> int:
    if pat is None:
        return default
    if isinstance(pat, int):
        return pat - 1
    rx = re.compile(pat)
    for i in range(after, len(lines)):
        if rx.search(lines[i]):
            return i
    raise LookupError(f"no line matches {pat!r} after line {after + 1}")


def span_text(files: Files, repo: Repo, span: Span, drop: Sequence[str] = ()) -> Tuple[str, int, int]:
    lines = files.read(repo, span.path).splitlines()
    base = _find(lines, span.after, 0, 0) + 1 if span.after else 0
    lo = _find(lines, span.start, base, 0)
    hi = _find(lines, span.end, lo + 1, len(lines))
    rx = [re.compile(d) for d in drop]
    kept = ["" if any(r.search(l) for r in rx) else l for l in lines[lo:hi]]   # blank: line numbers stay
    return "\n".join(kept) + "\n", lo + 1, hi


def assemble(files: Files, src: Source) -> Tuple[str, List[Tuple[str, int, int, int]]]:
    """The TU and, per span, (path, first file line, last file line, first TU line)."""
    parts, where, line = [], [], 1
    if src.prelude:
        parts.append(src.prelude.rstrip("\n") + "\n")
        line += parts[-1].count("\n")
    for sp in src.spans:
        text, lo, hi = span_text(files, src.repo, sp, src.drop)
        where.append((sp.path, lo, hi, line))
        parts.append(text)
        line += text.count("\n")
    return "".join(parts), where


# ------------------------------------------------------------------------------ numpy helpers

def bf16(x) -> np.ndarray:
    """float -> bf16 bits (round to nearest even), as uint16."""
    b = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(u) -> np.ndarray:
    return (np.asarray(u).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x) -> np.ndarray:
    return from_bf16(bf16(x))


def f32(rng: np.random.Generator, *shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def load_batches() -> Dict[str, Corpus]:
    from . import tune, heldout
    return {"tune": tune.corpus(), "heldout": heldout.corpus()}
