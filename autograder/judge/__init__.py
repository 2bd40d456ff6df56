"""The judge: the one engine behind ``autograder check``, ``L.self_check()``, ``L.check(...)``,
``autograder grade`` and ``nbgrader autograde`` (through ``autograder.nbgrader_ext``).

    from autograder.judge import judge, check_item
    verdict = judge(nb, "05_layernorm", seed=7)                 # -> autograder.verdict.Verdict
    score = check_item("05_layernorm", "code_normal", sources={"layernorm_src": cuda_text}, seed=7)
    score = check_item("05_layernorm", "q2", text="方差为负时……")   # -> ItemScore

Run (untrusted, sandboxed) is kept apart from judge (trusted): see ``core`` for the steps, ``scorers`` for the
item kinds, ``executor``/``runner`` for the sandboxed launches, ``template`` for the released template.
"""
from __future__ import annotations

from typing import Dict, Optional, Union


def judge(submission_nb, lesson_id: str, **kw):
    from .core import judge as _judge
    return _judge(submission_nb, lesson_id, **kw)


def check_item(lesson_id: str, item_id: str, sources: Union[None, str, Dict[str, str]] = None, *,
               text: Optional[str] = None, seed: Optional[int] = None, settings=None, layout=None,
               backend: Optional[str] = None, prompt: Optional[str] = None):
    """One item, as the whole-notebook judge would score it (``L.check(...)`` under an exercise).

    ``sources``: the CUDA text of a ``cases`` item (a string when the item reads one source, else
    ``{source_id: text}``); ``text``: a ``rubric`` item's answer (markdown; a string passed as ``sources``
    for a written item is taken as its text). Returns an ``ItemScore``.
    """
    from .item import check_item as _check_item
    return _check_item(lesson_id, item_id, sources, text=text, seed=seed, settings=settings, layout=layout,
                       backend=backend, prompt=prompt)


__all__ = ["judge", "check_item"]
