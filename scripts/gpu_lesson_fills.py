"""GPU truth for the lesson tables: on the current backend (run it with KERNELS_BACKEND=cupy on a GPU), every code
family of the given lessons with the reference fill (seed 1234), and every fill of their tables in tests/lessons
(typical wrong kernels and other students' correct ones), each compared with the family outcomes the table states
for the CPU emulator. One line per fill and item: AS EXPECTED or DIFFERS, and the families that fail here.

    KERNELS_BACKEND=cupy python3 scripts/gpu_lesson_fills.py 09 10 11 12

Every fill runs the way grading runs it: in a child process of the judge's executor (a wrong kernel that faults,
e.g. a misaligned float4 load, leaves the CUDA context unusable; in-process, every later fill would fail with it).
The device machine has no nbgrader; tests/lessons/proof.py imports it through autograder.generate (used only to
build released notebooks, which this script never does), so a stub module stands in for it when nbgrader is absent.
"""
import sys
import time
import types

try:
    import nbgrader  # noqa: F401
except ImportError:
    sys.modules["autograder.generate"] = types.ModuleType("autograder.generate")
sys.path.insert(0, "tests/lessons")
import kernels  # noqa: E402
import proof    # noqa: E402
from autograder import cases                               # noqa: E402
from autograder.sandbox import core as sandbox             # noqa: E402
from autograder.judge.executor import SandboxExecutor      # noqa: E402
from autograder.settings import GradingSettings            # noqa: E402

_run_item = cases.run_item


def _run_item_in_a_child(lesson, item_id, codes, *, seed=None, checks=None, executor=None):
    work = sandbox.prepare_workdir(prefix="fills-")
    try:
        ex = SandboxExecutor(GradingSettings.resolve(lesson.get("settings", {})), work / "cases", backend=kernels.backend())
        return _run_item(lesson, item_id, codes, seed=seed, checks=checks, executor=ex)
    finally:
        sandbox.reclaim(work)


cases.run_item = _run_item_in_a_child

wanted = sys.argv[1:] or ["09", "10", "11", "12"]
print(f"backend {kernels.backend()}")
for spec in proof.lessons():
    if spec.id[:2] not in wanted:
        continue
    t0 = time.time()
    for item in proof.code_items(spec.id):
        fams = proof.families(spec, item)
        bad = [f for f, ok in fams.items() if not ok]
        print(f"{spec.id} reference {item}: {len(fams) - len(bad)}/{len(fams)} families pass" + (f"  FAILED {bad}" if bad else ""))
    for fill in spec.fills:
        for item, want in fill.expect.items():
            fams = proof.families(spec, item, fill.replace)
            if want == proof.ALL:
                ok = all(fams.values()); exp = "all pass"
            elif want == proof.NONE:
                ok = not any(fams.values()); exp = "none pass"
            else:
                ok = all(fams.get(f) is v for f, v in want.items()); exp = {f: v for f, v in want.items()}
            failed = [f for f, v in fams.items() if not v]
            print(f"{spec.id} fill {fill.id} {item}: {'AS EXPECTED' if ok else 'DIFFERS'}; failing on {kernels.backend()}: {failed}"
                  + ("" if ok else f"; expected {exp}"))
    print(f"{spec.id}: {time.time() - t0:.0f} s")
