"""``python -m autograder.judge.runner JOB_DIR``: compile the learner's CUDA and launch planned cases.

Runs INSIDE the sandbox (``autograder.judge.executor`` starts it). It knows nothing of the rubric, the
reference outputs or the tolerances: it receives sources and launch plans (``job.json`` + ``case-<i>.npz``)
and writes, case by case as each finishes, ``out/result-<i>.json`` and ``out/out-<i>.npz``. The grader
compares the outputs outside. So whatever the learner's device code does here, it can only hand back arrays,
and arrays earn points only when they match references it never sees.
"""
from __future__ import annotations

import io
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

JOB_SCHEMA = 1


def pack(arr) -> tuple:
    """``(array numpy can store without pickling, dtype tag)``: bfloat16 travels as its uint16 bits."""
    a = np.asarray(arr)
    if a.dtype.isbuiltin == 1 or a.dtype.kind in "biufc?":
        return a, ""
    return a.view(np.uint16), "bfloat16"


def unpack(a: np.ndarray, tag: str) -> np.ndarray:
    if tag == "bfloat16":
        try:
            import ml_dtypes
            return a.view(ml_dtypes.bfloat16)
        except ImportError:
            return a
    return a


def _diag(exc):
    from autograder.cases import _diagnostic
    try:
        d = _diagnostic(exc)
        json.dumps(d)
        return d
    except Exception:
        return None


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def build_only(job_dir: Path) -> int:
    """Compile every source in every mode the checks need and stop: no launch, nothing of the learner's
    code runs here, so what it leaves in the build cache is the honest build of the source
    (``autograder.judge.executor`` shares it with later submissions of the same source)."""
    import kernels
    from kernels import errors as kerr
    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    out = {}
    for sid, spec in job["sources"].items():
        try:
            mod = kernels.RawModule(code=spec["code"], options=tuple(spec["options"]),
                                    name_expressions=spec["name_expressions"] or None)
            impl = mod._impl
            impl.compile()
            if "racecheck" in job.get("checks", ()):
                impl.race_lib()
            if "memcheck" in job.get("checks", ()):
                impl.runner()
            out[sid] = "built"
        except kerr.KernelError as exc:
            out[sid] = exc.kind
    (job_dir / "built.json").write_text(json.dumps(out), encoding="utf-8")
    return 0


def main(job_dir: str) -> int:
    import kernels
    from kernels import errors as kerr

    from autograder import cases, messages

    job_dir = Path(job_dir)
    out_dir = job_dir / "out"
    out_dir.mkdir(exist_ok=True)
    job = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))
    if job.get("schema") != JOB_SCHEMA:
        print(f"runner: job schema {job.get('schema')} is not {JOB_SCHEMA}", file=sys.stderr)
        return 2
    checks = tuple(job.get("checks") or ())
    modules, broken = {}, {}
    for sid, spec in job["sources"].items():
        try:
            modules[sid] = kernels.RawModule(code=spec["code"], options=tuple(spec["options"]),
                                             name_expressions=spec["name_expressions"] or None)
        except kerr.KernelError as exc:
            broken[sid] = {"kind": exc.kind, "message": messages.explain(exc), "diagnostic": _diag(exc)}
    _write_json(out_dir / "compiled.json", {"backend": kernels.backend(), "broken": broken})
    slow = set(job.get("slow_failures") or ())
    given_up = set()                  # items whose earlier case failed slowly (a hang): the item is lost anyway
    for case in job["cases"]:
        i = case["index"]
        bad = next((broken[s] for s in case["sources"] if s in broken), None)
        if bad is not None:
            _write_json(out_dir / f"result-{i}.json", {"ok": False, **bad})
            continue
        if case.get("group") in given_up:
            _write_json(out_dir / f"result-{i}.json", {"ok": False, "kind": "skipped",
                                                       "message": "没有运行：同一评分项前面的用例已超时"})
            continue
        _write_json(out_dir / f"started-{i}.json", {})
        try:
            with np.load(job_dir / f"case-{i}.npz", allow_pickle=False) as z:
                host = {k: unpack(z[k], case["tags"].get(k, "")) for k in z.files}
            dev = {a: kernels.asarray(host["a:" + a]) for a in case["arrays"]}
            for li, ln in enumerate(case["launches"]):
                fn = modules[ln["source"]].get_function(ln["function"])
                args = []
                for ai, (k, v) in enumerate(ln["args"]):
                    args.append(host[f"s:{li}.{ai}"][()] if k == "scalar" else cases.launch_arg(dev, k, v))
                with kernels.check(*checks):
                    fn(tuple(ln["grid"]), tuple(ln["block"]), tuple(args), shared_mem=int(ln["shared_mem"]))
            if hasattr(kernels, "synchronize"):
                kernels.synchronize()
            outs, tags = {}, {}
            for o in case["outputs"]:
                outs[o], tags[o] = pack(kernels.asnumpy(dev[o]))
            buf = io.BytesIO()
            np.savez(buf, **outs)
            (out_dir / f"out-{i}.npz").write_bytes(buf.getvalue())
            _write_json(out_dir / f"result-{i}.json", {"ok": True, "tags": tags})
        except kerr.KernelError as exc:
            _write_json(out_dir / f"result-{i}.json", {"ok": False, "kind": exc.kind, "message": messages.explain(exc),
                                                       "diagnostic": _diag(exc)})
            if exc.kind in slow:
                given_up.add(case.get("group"))
        except Exception as exc:   # e.g. an argument the kernel's parameter list does not take
            traceback.print_exc(limit=6, file=sys.stderr)      # the grader's log: where an unexpected error began
            _write_json(out_dir / f"result-{i}.json",
                        {"ok": False, "kind": type(exc).__name__, "message": messages.explain(exc)})
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--build-only":
        sys.exit(build_only(Path(sys.argv[2])))
    sys.exit(main(sys.argv[1]))
