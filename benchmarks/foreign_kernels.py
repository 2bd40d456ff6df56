"""Foreign-kernel corpus: public CUDA kernels, verbatim, through ``kernels`` on the active backend (issue 21).

    .venv/bin/python benchmarks/foreign_kernels.py                      # CPU emulator, both batches, a table
    .venv/bin/python benchmarks/foreign_kernels.py --batch heldout -k softmax
    KERNELS_BACKEND=cupy python benchmarks/foreign_kernels.py --files DIR --json out.json   # the GPU's truth
    .venv/bin/python benchmarks/foreign_kernels.py --export DIR         # the pinned files, to carry to a GPU
    .venv/bin/python benchmarks/foreign_kernels.py --compare cpu.json gpu.json

The corpus (repository, commit, spans, every change NVRTC needs, launches, numpy references) is
``benchmarks/foreign_corpus/``; the files are read from the fetched mirror (``/work/.mirror``, or ``--files``
for an exported tree). Nothing third-party is stored in this repository.

Each case ends as one of:
  ok          the outputs match the numpy reference
  bug-found   the case documents a bug in the upstream kernel (Case.bug) and it was reported: on the emulator
              the error kind under the check that finds it (memcheck for out-of-bounds), with its line; on the
              GPU an illegal-address fault (counted with ok: the right outcome)
  MISSED-BUG  such a case ran clean (counted with WRONG)
  WRONG       it ran without an error and gave a different result (a silent wrong result: the worst outcome)
  error:<K>   a kernels error of kind K (compile, unsupported, deadlock, ...) with the line it names
A result is a *clear error* when it is not WRONG and names a source line.
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import kernels  # noqa: E402
from foreign_corpus import Files, assemble, from_bf16, load_batches, MIRROR_ROOT  # noqa: E402


def _compare(case, name, got, want):
    got = np.asarray(got)
    if name in case.bf16:
        got = from_bf16(got)
    want = np.asarray(want, np.float64) if np.asarray(want).dtype.kind in "fc" else np.asarray(want)
    if got.size != want.size:
        return f"buffer {name}: {got.size} elements, reference has {want.size}"
    got, want = got.reshape(-1), want.reshape(-1)
    if want.dtype.kind in "fc":
        g = got.astype(np.float64)
        bad = ~np.isclose(g, want, rtol=case.rtol, atol=case.atol, equal_nan=True)
        # -inf == -inf counts as equal (np.isclose handles infinities of the same sign)
    else:
        bad = got != want
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (f"buffer {name}: {int(bad.sum())}/{bad.size} elements differ, first at {i}: "
                f"got {got[i]!r}, want {want[i]!r}")
    return None


# the check that reports a documented upstream bug of each kind (Case.bug)
BUG_CHECKS = {"out_of_bounds": ("memcheck",), "race": ("racecheck",), "deadlock": ("synccheck",)}


def run_case(corpus, case, files, modules):
    src = corpus.sources[case.source]
    t0 = time.perf_counter()
    out = {"id": case.id, "batch": corpus.batch, "source": src.id, "repo": src.repo.name,
           "kernels": case.kernels, "backend": kernels.backend()}
    try:
        if src.id not in modules:
            code, _ = assemble(files, src)
            # C++-linkage kernels are reached through name expressions, as with cupy
            names = list(dict.fromkeys([*src.name_expressions, *(k for c in corpus.cases if c.source == src.id
                                                                  for k in c.kernels)]))
            coop = any(l.cooperative for c in corpus.cases if c.source == src.id for l in c.launches)
            modules[src.id] = kernels.RawModule(code=code, options=src.options, name_expressions=names,
                                                enable_cooperative_groups=coop)
        mod = modules[src.id]
        seed = zlib.crc32(case.id.encode())   # stable across processes (hash() is not)
        rng = np.random.default_rng(seed)
        bufs = case.make(rng)
        inputs = [b.copy() if isinstance(b, np.ndarray) else b for b in bufs]
        dev = [kernels.asarray(b) if isinstance(b, np.ndarray) else b for b in bufs]
        with kernels.check(*BUG_CHECKS[case.bug[0]]) if case.bug else contextlib.nullcontext():
            for l in case.launches:
                fn = mod.get_function(l.kernel)
                args = tuple(dev[i[0]].reshape(-1)[i[1]:] if isinstance(i, tuple) else dev[i] for i in l.args)
                if l.cooperative:
                    fn(l.grid, l.block, args, shared_mem=l.shared_mem, enable_cooperative_groups=True)
                else:
                    fn(l.grid, l.block, args, shared_mem=l.shared_mem)
            kernels.synchronize()
        if case.bug:
            # it ran clean: the emulator missed a bug the GPU faults on (as bad as a silent wrong result)
            out["status"] = "MISSED-BUG"
            out["detail"] = f"no {case.bug[0]} error reported: {case.bug[1]}"
            out["seconds"] = round(time.perf_counter() - t0, 3)
            return out
        got = [kernels.asnumpy(d) if isinstance(b, np.ndarray) else b for b, d in zip(bufs, dev)]
        want = case.ref(inputs) if case.ref else {}
        problems = []
        if case.check:
            p = case.check(got, inputs)
            if p:
                problems.append(p)
        for key, w in want.items():
            idx, sel = (key if isinstance(key, tuple) else (key, None))
            g = got[idx] if sel is None else np.asarray(got[idx]).reshape(-1)[sel[0]:sel[1]]
            p = _compare(case, idx, g, w)
            if p:
                problems.append(p)
        out["status"] = "WRONG" if problems else "ok"
        if problems:
            out["detail"] = "; ".join(problems)
    except kernels.KernelError as exc:
        out["status"] = "bug-found" if case.bug and exc.kind == case.bug[0] and exc.line else f"error:{exc.kind}"
        out["error_class"] = type(exc).__name__
        out["line"] = exc.line
        out["kernel"] = exc.kernel
        out["detail"] = exc.message[:400]
        out["source_line"] = (exc.source_line or "").strip()[:160]
    except Exception as exc:  # a bug in the harness or the runtime itself: say so loudly
        if case.bug and kernels.backend() == "cupy" and "illegal" in str(exc).lower():
            out["status"] = "bug-found"      # the GPU faulted on the documented bug: its truth
            out["detail"] = f"{type(exc).__name__}: {exc}"[:400]
            out["seconds"] = round(time.perf_counter() - t0, 3)
            return out
        out["status"] = "error:harness"
        out["detail"] = f"{type(exc).__name__}: {exc}"[:400]
        out["traceback"] = traceback.format_exc()[-2000:]
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def summarize(results):
    rows = []
    for batch in ("tune", "heldout"):
        rs = [r for r in results if r["batch"] == batch]
        if not rs:
            continue
        ok = sum(r["status"] in ("ok", "bug-found") for r in rs)
        wrong = sum(r["status"] in ("WRONG", "MISSED-BUG") for r in rs)
        errs = [r for r in rs if r["status"].startswith("error")]
        clear = sum(1 for r in errs if r.get("line"))
        dead = sum(r["status"] == "error:deadlock" for r in rs)
        kern = sum(len(r["kernels"]) for r in rs)
        kern_ok = sum(len(r["kernels"]) for r in rs if r["status"] in ("ok", "bug-found"))
        rows.append((batch, len(rs), kern, ok, kern_ok, wrong, len(errs), clear, dead))
    return rows


def print_table(results, out=sys.stdout):
    w = max([len(r["id"]) for r in results] + [10])
    print(f"{'case':{w}}  {'status':18} {'s':>6}  detail", file=out)
    for r in results:
        det = r.get("detail", "")
        if r.get("line"):
            det = f"line {r['line']}: {det}"
        print(f"{r['id']:{w}}  {r['status']:18} {r['seconds']:6.2f}  {det[:150]}", file=out)
    print(file=out)
    print(f"{'batch':8} {'cases':>5} {'kernels':>7} {'ok':>4} {'kern ok':>7} {'WRONG':>5} {'errors':>6} "
          f"{'w/ line':>7} {'deadlk':>6}", file=out)
    for row in summarize(results):
        print(f"{row[0]:8} {row[1]:5d} {row[2]:7d} {row[3]:4d} {row[4]:7d} {row[5]:5d} {row[6]:6d} {row[7]:7d} "
              f"{row[8]:6d}", file=out)


def compare(cpu_path, gpu_path):
    cpu = {r["id"]: r for r in json.loads(Path(cpu_path).read_text())}
    gpu = {r["id"]: r for r in json.loads(Path(gpu_path).read_text())}
    print(f"{'case':50} {'cpu':18} {'gpu':18}")
    agree = 0
    for cid in sorted(set(cpu) | set(gpu)):
        c, g = cpu.get(cid, {}).get("status", "-"), gpu.get(cid, {}).get("status", "-")
        agree += c == g
        flag = "" if c == g else "   <-- differs"
        print(f"{cid:50} {c:18} {g:18}{flag}")
    print(f"\n{agree}/{len(set(cpu) | set(gpu))} cases agree")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", choices=("tune", "heldout", "all"), default="all")
    ap.add_argument("-k", "--select", default="*", help="glob over case ids (default: all)")
    ap.add_argument("--files", help="read an exported tree (see --export) instead of the mirror")
    ap.add_argument("--export", help="write the pinned files the corpus reads into this folder and exit")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--compare", nargs=2, metavar=("CPU_JSON", "GPU_JSON"))
    ap.add_argument("--dump", help="write each source's assembled TU into this folder")
    ap.add_argument("--source", help="only the cases of this source id")
    ap.add_argument("--isolate", nargs="?", const="all", choices=("all", "bugs"),
                    help="one process per source (on a GPU a fault of one kernel cannot poison the others' context); "
                         "'bugs': only the sources of cases that document an upstream bug (Case.bug), the rest in "
                         "this process")
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare)
        return
    batches = load_batches()
    chosen = [batches[b] for b in (("tune", "heldout") if a.batch == "all" else (a.batch,))]
    files = Files(Path(a.files), exported=True) if a.files else Files(MIRROR_ROOT)
    if a.export:
        dest = Path(a.export)
        for corpus in chosen:
            for src in corpus.sources.values():
                for sp in src.spans:
                    files.export(src.repo, sp.path, dest)
        print(f"exported to {dest}")
        return
    if a.dump:
        Path(a.dump).mkdir(parents=True, exist_ok=True)
        for corpus in chosen:
            for src in corpus.sources.values():
                code, where = assemble(files, src)
                (Path(a.dump) / (src.id.replace("/", "_") + ".cu")).write_text(code)
    results = []
    isolated = set()
    if a.isolate:
        for corpus in chosen:
            for sid in corpus.sources:
                if not any(c.source == sid and fnmatch.fnmatch(c.id, a.select) for c in corpus.cases):
                    continue
                if a.isolate == "bugs" and not any(c.source == sid and c.bug for c in corpus.cases):
                    continue
                isolated.add(sid)
                with tempfile.TemporaryDirectory() as tmp:
                    part = Path(tmp) / "part.json"
                    cmd = [sys.executable, __file__, "--batch", corpus.batch, "-k", a.select, "--source", sid,
                           "--json", str(part)] + (["--files", a.files] if a.files else [])
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
                    if part.exists():
                        results += json.loads(part.read_text())
                    else:   # the whole process died: every case of the source says so
                        for c in corpus.cases:
                            if c.source == sid and fnmatch.fnmatch(c.id, a.select):
                                results.append({"id": c.id, "batch": corpus.batch, "source": sid,
                                                "repo": corpus.sources[sid].repo.name, "kernels": c.kernels,
                                                "backend": kernels.backend(), "status": "error:process",
                                                "detail": proc.stderr[-400:], "seconds": 0.0})
                    print(f"{sid:40} {proc.returncode}", file=sys.stderr, flush=True)
    for corpus in chosen if a.isolate != "all" else ():
        modules = {}
        for case in corpus.cases:
            if not fnmatch.fnmatch(case.id, a.select) or (a.source and case.source != a.source):
                continue
            if case.source in isolated:
                continue
            r = run_case(corpus, case, files, modules)
            results.append(r)
            print(f"{r['id']:60} {r['status']:16} {r['seconds']:6.2f}s", file=sys.stderr, flush=True)
    order = {c.id: i for i, c in enumerate(c for corpus in chosen for c in corpus.cases)}
    results.sort(key=lambda r: order.get(r["id"], len(order)))
    print_table(results)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
