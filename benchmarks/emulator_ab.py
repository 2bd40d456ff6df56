"""The CPU emulator before/after a change, side by side in one run (issue 21's speed bar: the lessons, the hidden
case families and emulator_vs_numba.py not more than 10% slower).

    git -C . archive --format=tar <old commit> kernels | (mkdir -p /tmp/old && tar -x -C /tmp/old)
    .venv/bin/python benchmarks/emulator_ab.py --old /tmp/old [--rounds 3]

Every workload runs in a fresh process per tree, the trees alternating (A B A B ...), each with its own build cache
(first round: cold, the modules' g++ builds included; later rounds: warm). The runtime's own object files
are built before a workload's clock starts (once per install, not per submission) and timed on their own. Only the `kernels` package comes from the tree under
test; the autograder, the lessons and the solutions are this checkout's. CPU time (the process and its children:
g++, the memcheck runner) is what is compared, because the machine may be shared; the table gives medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = r'''
import os, sys, time, resource, json
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
def runtime_objects():
    # the runtime is compiled once per install and runtime version (three flavours), not per submission:
    # built before a workload's clock starts, and timed on its own ("runtime objects")
    from kernels.cpu import build
    for mode in ("native", "racecheck", "memcheck"):
        build.runtime_objects(mode)
'''

WORKLOADS = {
    # the emulator runtime's three object files (once per install / runtime version; cold round only)
    "runtime objects (once)": r'''
t0, c0 = time.perf_counter(), cpu()
runtime_objects()
print(json.dumps({"cpu": cpu() - c0, "wall": time.perf_counter() - t0}))
''',
    # emulator_vs_numba.py's emulator part: one warm launch of the lesson-5 seed LayerNorm, M=1024, N=4096
    "layernorm 1024 x 4096 launch": r'''
runtime_objects()
sys.path.insert(0, os.path.join(os.environ["AB_ROOT"], "benchmarks"))
import emulator_vs_numba as b
wall, c = b.emulator_time(1024, 4096, 3)
print(json.dumps({"cpu": c, "wall": wall}))
''',
    # the hidden case families of every lesson's code items, as graded: memcheck + racecheck
    "case families, graded": r'''
sys.path.insert(0, os.path.join(os.environ["AB_ROOT"], "tests", "lessons"))
import proof
from autograder import cases, config
runtime_objects()
t0, c0 = time.perf_counter(), cpu()
for spec in proof.lessons():
    src = proof.solution_cuda(spec.id)
    for item in proof.code_items(spec.id):
        res = cases.run_item(config.lesson(spec.id), item, {spec.source_id: src}, seed=1234)
        assert all(f.passed for f in res.families), (spec.id, item, [f.reason for f in res.families if not f.passed])
print(json.dumps({"cpu": cpu() - c0, "wall": time.perf_counter() - t0}))
''',
    # the same families without checks (a notebook's self-check, the many-seed lesson tests), 10 seeds
    "case families, plain x10 seeds": r'''
sys.path.insert(0, os.path.join(os.environ["AB_ROOT"], "tests", "lessons"))
import proof
from autograder import cases, config
runtime_objects()
t0, c0 = time.perf_counter(), cpu()
for spec in proof.lessons():
    src = proof.solution_cuda(spec.id)
    for item in proof.code_items(spec.id):
        for seed in range(10):
            res = cases.run_item(config.lesson(spec.id), item, {spec.source_id: src}, seed=seed, checks=())
            assert all(f.passed for f in res.families), (spec.id, item, seed)
print(json.dumps({"cpu": cpu() - c0, "wall": time.perf_counter() - t0}))
''',
}


def run(tree: Path, name: str, cache: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT)])   # kernels from `tree`, the rest from here
    env["KERNELS_CACHE_DIR"] = str(cache)
    env["KERNELS_BACKEND"] = "cpu"
    env["AB_ROOT"] = str(ROOT)
    code = PRELUDE + f"import kernels\nassert kernels.__file__.startswith({str(tree)!r}), kernels.__file__\n" + WORKLOADS[name]
    # not cwd=ROOT: `python -c` puts the working directory first on sys.path, which would shadow `tree`
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(cache.parent))
    if proc.returncode != 0:
        raise RuntimeError(f"{name} on {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="a tree holding the old `kernels` package")
    ap.add_argument("--new", default=str(ROOT), help="the tree with the new one (default: this checkout)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help="one workload name")
    a = ap.parse_args()
    trees = {"old": Path(a.old).resolve(), "new": Path(a.new).resolve()}
    names = [a.only] if a.only else list(WORKLOADS)
    results = {n: {"old": [], "new": []} for n in names}
    with tempfile.TemporaryDirectory(prefix="emu-ab-") as tmp:
        caches = {k: Path(tmp) / k for k in trees}
        for r in range(a.rounds):
            for n in names:
                if r > 0 and n.startswith("runtime objects"):
                    continue   # built once: nothing to time warm
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                for k in order:
                    res = run(trees[k], n, caches[k])
                    results[n][k].append(res)
                    print(f"round {r} {n:32} {k}: cpu {res['cpu']:.2f} s  wall {res['wall']:.2f} s", file=sys.stderr,
                          flush=True)
    print(f"{'workload':34} {'old cpu s':>10} {'new cpu s':>10} {'new/old':>8}   (cold = round 0)")
    for n in names:
        for label, sl in (("cold", slice(0, 1)), ("warm", slice(1, None))):
            o = [x["cpu"] for x in results[n]["old"][sl]]
            w = [x["cpu"] for x in results[n]["new"][sl]]
            if not o:
                continue
            mo, mw = statistics.median(o), statistics.median(w)
            print(f"{n + ' (' + label + ')':34} {mo:10.3f} {mw:10.3f} {mw / mo:8.3f}")


if __name__ == "__main__":
    main()
