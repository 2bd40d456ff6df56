"""The released template a submission is compared with: nbgrader's own generate pipeline run on the
solution notebook, in-process.

Never the learner's ``lessons/`` copy (a learner edits that file in place, so an edit outside a blank would
compare equal with itself) and never an approximation of the release: the preprocessors that change content
(LockCells, ClearCudaSolutions, ClearHiddenTests, ClearMarkScheme, ...) are nbgrader's generate_assignment
list from ``autograder.nbgrader_ext.config``, minus the two that need a course directory (SaveCells writes the
gradebook, IncludeHeaderFooter reads files). ``tests/autograder/test_judge.py`` proves the result equals
``lessons/`` cell by cell for every lesson.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Dict, Optional, Tuple

import nbformat

_cache: Dict[Tuple[str, float, int], nbformat.NotebookNode] = {}


def release(solution_nb) -> nbformat.NotebookNode:
    """The released notebook for a solutions/ notebook (a deep copy is transformed)."""
    from nbgrader.preprocessors import IncludeHeaderFooter, SaveCells

    from ..nbgrader_ext.config import generate_preprocessors, make_config

    config = make_config()
    nb = copy.deepcopy(solution_nb)
    resources = {"nbgrader": {"notebook": "template", "assignment": "template"}}
    for cls in generate_preprocessors():
        if cls in (SaveCells, IncludeHeaderFooter):
            continue
        nb, resources = cls(config=config).preprocess(nb, resources)
    return nb


def released_from_file(path) -> Optional[nbformat.NotebookNode]:
    """``release`` of the solution file at ``path`` (memoised per path, mtime and size); None if absent."""
    from .. import notebook as nbio

    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return None
    key = (str(p.resolve()), st.st_mtime, st.st_size)
    if key not in _cache:
        _cache[key] = release(nbio.read(p))
    return copy.deepcopy(_cache[key])
