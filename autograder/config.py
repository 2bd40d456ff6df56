"""Load and validate ``grading_rubric.yaml`` (schema: docs/grading.md).

Validation is structural and names the offending key path, e.g.
``lessons.05_layernorm.kernels.layernorm.grid: missing``.  Expressions are
not evaluated here (they need case params), only checked to parse.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, Dict, Optional

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SETTINGS = {
    "pass_score": 8,
    "hint_penalty": [0, 0, 0, 0],
    "time_limit_s": 240,
    "cell_timeout_s": 120,
    "checks": ["memcheck", "racecheck"],
}
ITEM_KINDS = ("cases", "test", "rubric")   # the kinds autograder.judge.scorers registers
RELEASED_VIEW = "released"   # `view: released`: the copy shown inside a sandbox (no cases, no rubric text)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "uint16", "bool")
DISTS = ("normal", "uniform", "constant", "values", "linspace", "randint", "bernoulli")


class RubricError(ValueError):
    """grading_rubric.yaml is malformed; the message names the key path."""


def rubric_path() -> Path:
    """The rubric in use when no path is passed: ``autograder.settings.CourseLayout.resolve()``."""
    from .settings import CourseLayout, LayoutError
    try:
        return CourseLayout.resolve().rubric
    except LayoutError:
        return REPO_ROOT / "grading_rubric.yaml"


_cache: Dict[str, tuple] = {}


def load(path: Optional[os.PathLike] = None) -> Dict[str, Any]:
    """Parsed and validated rubric (cached per path and mtime)."""
    p = Path(path) if path else rubric_path()
    if not p.exists():
        raise RubricError(f"{p}: grading rubric not found (set AUTOGRADER_RUBRIC or create it)")
    key = str(p.resolve())
    mtime = p.stat().st_mtime
    hit = _cache.get(key)
    if hit and hit[0] == mtime:
        return hit[1]
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise RubricError(f"{p}: not valid YAML: {exc}") from None
    data = validate(data)
    _cache[key] = (mtime, data)
    return data


def lesson(lesson_id: str, path: Optional[os.PathLike] = None) -> Dict[str, Any]:
    """One lesson entry, with ``id`` and merged ``settings`` added."""
    data = load(path)
    lessons = data["lessons"]
    if lesson_id not in lessons:
        known = ", ".join(sorted(lessons)) or "(none)"
        raise RubricError(f"lessons.{lesson_id}: no such lesson in {rubric_path()} (known: {known})")
    entry = dict(lessons[lesson_id])
    entry["id"] = lesson_id
    settings = dict(data["settings"])
    if "pass_score" in entry:
        settings["pass_score"] = entry["pass_score"]
    entry["settings"] = settings
    return entry


# ----------------------------------------------------------------------------- validation

def _fail(where: str, what: str):
    raise RubricError(f"{where}: {what}")


def _need_map(v, where):
    if not isinstance(v, dict):
        _fail(where, f"expected a mapping, got {type(v).__name__}")
    return v


def _need_list(v, where):
    if not isinstance(v, list):
        _fail(where, f"expected a list, got {type(v).__name__}")
    return v


def _unknown(d, allowed, where):
    extra = sorted(set(d) - set(allowed))
    if extra:
        _fail(f"{where}.{extra[0]}", f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _expr(v, where):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            _expr(x, f"{where}[{i}]")
        return
    if not isinstance(v, str):
        _fail(where, f"expected a number or an expression string, got {type(v).__name__}")
    try:
        ast.parse(v, mode="eval")
    except SyntaxError as exc:
        _fail(where, f"expression {v!r} does not parse: {exc.msg}")


def validate(data: Any) -> Dict[str, Any]:
    _need_map(data, "(top level)")
    _unknown(data, ("version", "settings", "lessons", "view"), "(top level)")
    view = data.get("view")
    if view not in (None, RELEASED_VIEW):
        _fail("view", f"expected {RELEASED_VIEW!r} or nothing")
    settings = dict(DEFAULT_SETTINGS)
    settings.update(_need_map(data.get("settings") or {}, "settings"))
    _unknown(settings, DEFAULT_SETTINGS, "settings")
    pen = _need_list(settings["hint_penalty"], "settings.hint_penalty")
    if len(pen) != 4 or not all(isinstance(x, (int, float)) for x in pen):
        _fail("settings.hint_penalty", "expected 4 numbers (levels 1..4)")
    for k in ("pass_score", "time_limit_s", "cell_timeout_s"):
        if not isinstance(settings[k], (int, float)) or settings[k] < 0:
            _fail(f"settings.{k}", "expected a non-negative number")
    for c in _need_list(settings["checks"], "settings.checks"):
        if c not in ("memcheck", "racecheck", "synccheck"):
            _fail("settings.checks", f"unknown check {c!r} (memcheck, racecheck, synccheck)")
    lessons = _need_map(data.get("lessons") or {}, "lessons")
    for lid, entry in lessons.items():
        _validate_lesson(str(lid), entry, view)
    out = {"version": data.get("version", 1), "settings": settings,
           "lessons": {str(k): v for k, v in lessons.items()}}
    if view:
        out["view"] = view
    return out


LESSON_KEYS = ("title", "notebook", "pass_score", "sources", "kernels", "arrays", "items", "vetoes",
               "hints", "description")
KERNEL_KEYS = ("source", "function", "grid", "block", "shared_mem", "args", "outputs", "reference",
               "reference_args")
CASE_KEYS = ("family", "kernel", "params", "arrays", "tol", "repeat", "reference", "reference_args",
             "outputs", "compare", "note")
ARRAY_KEYS = ("shape", "dtype", "dist", "fill", "set")


def _validate_lesson(lid, e, view=None):
    w = f"lessons.{lid}"
    _need_map(e, w)
    _unknown(e, LESSON_KEYS, w)
    for k in ("title", "notebook", "items"):
        if k not in e:
            _fail(f"{w}.{k}", "missing")
    sources = _need_map(e.get("sources") or {}, f"{w}.sources")
    for sid, s in sources.items():
        ws = f"{w}.sources.{sid}"
        _need_map(s, ws)
        _unknown(s, ("var", "name_expressions", "options", "kernel_names"), ws)
        if not isinstance(s.get("var"), str):
            _fail(f"{ws}.var", "missing (the python variable holding the CUDA source)")
        _need_list(s.get("name_expressions") or [], f"{ws}.name_expressions")
    kernels = _need_map(e.get("kernels") or {}, f"{w}.kernels")
    from . import references
    for kid, k in kernels.items():
        wk = f"{w}.kernels.{kid}"
        _need_map(k, wk)
        _unknown(k, KERNEL_KEYS, wk)
        for req in ("source", "function", "grid", "block", "args"):
            if req not in k:
                _fail(f"{wk}.{req}", "missing")
        if k["source"] not in sources:
            _fail(f"{wk}.source", f"{k['source']!r} is not one of sources ({', '.join(sources)})")
        for req in ("grid", "block", "shared_mem"):
            if req in k:
                _expr(k[req], f"{wk}.{req}")
        for i, a in enumerate(_need_list(k["args"], f"{wk}.args")):
            _expr(a, f"{wk}.args[{i}]")
        for o in _need_list(k.get("outputs") or [], f"{wk}.outputs"):
            if o not in (e.get("arrays") or {}):
                _fail(f"{wk}.outputs", f"output {o!r} is not declared under arrays")
        if k.get("reference") and not references.exists(k["reference"]):
            _fail(f"{wk}.reference", f"no reference function {k['reference']!r} "
                  f"(known: {', '.join(references.names())})")
    arrays = _need_map(e.get("arrays") or {}, f"{w}.arrays")
    for aid, a in arrays.items():
        _validate_array(a, f"{w}.arrays.{aid}", full=True)
    items = _need_map(e["items"], f"{w}.items")
    for iid, it in items.items():
        _validate_item(it, f"{w}.items.{iid}", e, view)
    v = _need_map(e.get("vetoes") or {}, f"{w}.vetoes")
    _unknown(v, ("template_edits", "asserts", "gpu_claims"), f"{w}.vetoes")
    for sid in _need_list(v.get("template_edits") or [], f"{w}.vetoes.template_edits"):
        if sid not in sources:
            _fail(f"{w}.vetoes.template_edits", f"{sid!r} is not one of sources")
    hints = _need_map(e.get("hints") or {}, f"{w}.hints")
    for hid, levels in hints.items():
        _need_list(levels, f"{w}.hints.{hid}")
        if not 1 <= len(levels) <= 4 or not all(isinstance(x, str) for x in levels):
            _fail(f"{w}.hints.{hid}", "expected 1..4 strings (概念区域 → 具体方向 → 关键局部 → 完整答案)")


def _validate_array(a, w, full):
    _need_map(a, w)
    _unknown(a, ARRAY_KEYS, w)
    if full:
        for req in ("shape", "dtype"):
            if req not in a:
                _fail(f"{w}.{req}", "missing")
    if "shape" in a:
        _expr(a["shape"], f"{w}.shape")
    if "dtype" in a and a["dtype"] not in DTYPES:
        _fail(f"{w}.dtype", f"unknown dtype {a['dtype']!r} (known: {', '.join(DTYPES)})")
    if "dist" in a:
        d = _need_map(a["dist"], f"{w}.dist")
        if len(d) != 1 or next(iter(d)) not in DISTS:
            _fail(f"{w}.dist", f"expected exactly one of {', '.join(DISTS)}")
    for i, s in enumerate(_need_list(a.get("set") or [], f"{w}.set")):
        _need_map(s, f"{w}.set[{i}]")
        if "index" not in s or "value" not in s:
            _fail(f"{w}.set[{i}]", "expected {index: '0, :', value: ...}")


def _kernel_refs(spec, w, kernels):
    if isinstance(spec, str):
        if spec not in kernels:
            _fail(w, f"unknown kernel {spec!r} (known: {', '.join(kernels)})")
    elif isinstance(spec, list):
        if not spec:
            _fail(w, "empty kernel list")
        if all(isinstance(x, str) for x in spec):
            for x in spec:
                _kernel_refs(x, w, kernels)
        else:
            for i, opt in enumerate(spec):
                _need_map(opt, f"{w}[{i}]")
                _unknown(opt, ("when", "kernel"), f"{w}[{i}]")
                if "when" in opt:
                    _expr(opt["when"], f"{w}[{i}].when")
                if "kernel" not in opt:
                    _fail(f"{w}[{i}].kernel", "missing")
                _kernel_refs(opt["kernel"], f"{w}[{i}].kernel", kernels)
    else:
        _fail(w, "expected a kernel name, a list of names (pipeline) or a list of {when, kernel}")


def _validate_item(it, w, lesson, view=None):
    from .judge import scorers
    _need_map(it, w)
    _unknown(it, ("points", "kind", "grade_id", "cases", "rubric", "hint", "title"), w)
    if not isinstance(it.get("points"), (int, float)):
        _fail(f"{w}.points", "missing or not a number")
    kind = it.get("kind")
    if kind not in scorers.kinds():
        _fail(f"{w}.kind", f"expected one of {', '.join(scorers.kinds())}")
    if view != RELEASED_VIEW:
        scorers.get(kind).validate(it, w, lesson)


def validate_cases(it, w, kernels, arrays):
    """The ``cases:`` of a ``kind: cases`` item (called by its scorer)."""
    from . import references
    cases = _need_list(it.get("cases"), f"{w}.cases")
    if not cases:
        _fail(f"{w}.cases", "no case families")
    for i, c in enumerate(cases):
        wc = f"{w}.cases[{i}]"
        _need_map(c, wc)
        _unknown(c, CASE_KEYS, wc)
        if not c.get("family"):
            _fail(f"{wc}.family", "missing (a Chinese family name shown to students)")
        if "kernel" not in c:
            _fail(f"{wc}.kernel", "missing")
        _kernel_refs(c["kernel"], f"{wc}.kernel", kernels)
        for pk, pv in (_need_map(c.get("params") or {}, f"{wc}.params")).items():
            _expr(pv, f"{wc}.params.{pk}")
        for aid, a in (_need_map(c.get("arrays") or {}, f"{wc}.arrays")).items():
            _validate_array(a, f"{wc}.arrays.{aid}", full=aid not in arrays)
        if c.get("reference") and not references.exists(c["reference"]):
            _fail(f"{wc}.reference", f"no reference function {c['reference']!r} "
                  f"(known: {', '.join(references.names())})")
        for o in _need_list(c.get("outputs") or [], f"{wc}.outputs"):
            if o not in arrays and o not in (c.get("arrays") or {}):
                _fail(f"{wc}.outputs", f"output {o!r} is not declared under arrays")
        tol = _need_map(c.get("tol") or {}, f"{wc}.tol")
        _unknown(tol, ("atol", "rtol"), f"{wc}.tol")
        for ok, ov in (_need_map(c.get("compare") or {}, f"{wc}.compare")).items():
            _need_map(ov, f"{wc}.compare.{ok}")
            _unknown(ov, ("atol", "rtol", "nan"), f"{wc}.compare.{ok}")
            if ov.get("nan", "match") not in ("match", "ignore"):
                _fail(f"{wc}.compare.{ok}.nan", "expected match or ignore")


def released_view(data: Dict[str, Any], lesson_id: str) -> Dict[str, Any]:
    """The rubric a sandboxed notebook run may read: one lesson's launch recipes, arrays and item list;
    no case families, no written-answer rubric, no hints."""
    e = data["lessons"][lesson_id]
    keep = {k: e[k] for k in ("title", "notebook", "pass_score", "sources", "kernels", "arrays", "description") if k in e}
    keep["items"] = {iid: {k: v for k, v in it.items() if k in ("points", "kind", "grade_id", "title")}
                     for iid, it in e["items"].items()}
    for it in keep["items"].values():
        if it["kind"] == "cases":
            it["cases"] = []
    return {"version": data.get("version", 1), "view": RELEASED_VIEW, "settings": data["settings"],
            "lessons": {lesson_id: keep}}
