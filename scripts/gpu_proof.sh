#!/usr/bin/env bash
# Proof run on a GPU machine (the course's device run), from the repository root:
#   OUT=/some/dir bash scripts/gpu_proof.sh                  every lesson
#   OUT=/some/dir LESSONS="09 10" PYTEST=0 bash scripts/gpu_proof.sh   some lessons, without the GPU-marked tests
# (wheels for packages the machine lacks may be carried in .whl/). For each chosen lesson: its solution and released
# notebook (and, for lesson 05, the bundled examples) graded on cupy and on the CPU emulator with one seed, compared
# item by item; the lesson tables' wrong and alternative fills on cupy (scripts/gpu_lesson_fills.py); the solution
# notebooks executed on cupy with the output of their GPU cells (timings, cuBLAS comparison). Then the GPU-marked
# tests. Results: docs/gpu_runs.md.
set -u
OUT=${OUT:-out/gpu_proof}
mkdir -p "$OUT/r"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 KERNELS_CACHE_DIR=/tmp/kcache
SEED=${SEED:-20261201}
LESSONS=${LESSONS:-$(ls solutions/[0-9][0-9]_*.ipynb | xargs -n1 basename | cut -c1-2 | tr '\n' ' ')}
{
  date -u; nvidia-smi -L; python3 --version; which g++ || echo "no g++"; echo "lessons: $LESSONS seed: $SEED"
  python3 -c "import kernels, cupy; print('backend', kernels.backend(), kernels.device_name(), 'cupy', cupy.__version__)"
} 2>&1 | tee "$OUT/r/env.txt"

notebooks=()
for n in $LESSONS; do
  notebooks+=(solutions/${n}_*.ipynb lessons/${n}_*.ipynb)
  [ "$n" = 05 ] && notebooks+=(examples/submissions/*.ipynb)
done
# gradings in parallel (GPU and CPU emulator, same seed) while the rest runs
for nb in "${notebooks[@]}"; do
  tag=$(echo "${nb%.ipynb}" | tr '/' '_')
  ( KERNELS_BACKEND=cupy timeout 420 python3 -m autograder.cli check "$nb" --json --seed "$SEED" > "$OUT/r/gpu_$tag.json" 2> "$OUT/r/gpu_$tag.err";
    KERNELS_BACKEND=cpu  timeout 420 python3 -m autograder.cli check "$nb" --json --seed "$SEED" > "$OUT/r/cpu_$tag.json" 2> "$OUT/r/cpu_$tag.err" ) &
done
# the solution notebooks executed on cupy: the output of their GPU cells
( KERNELS_BACKEND=cupy AUTOGRADER_RUNNING=1 timeout 420 python3 - $LESSONS <<'PY' > "$OUT/r/gpu_cells.txt" 2>&1
import glob, sys
import nbformat
from nbclient import NotebookClient
from autograder import notebook as nbio
for n in sys.argv[1:]:
    path = glob.glob(f"solutions/{n}_*.ipynb")[0]
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.source = nbio._fill(c.source)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": "/tmp"}}).execute()
    for c in nb.cells:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if any(k in gid for k in ("gpu", "bench", "timing", "intensity", "quick_check")):
            print(f"==== {path} {gid}")
            for o in c.get("outputs", []):
                if o.get("output_type") == "stream":
                    print(o["text"])
                elif o.get("output_type") == "error":
                    print("ERROR", o["ename"], o["evalue"])
PY
) &
( KERNELS_BACKEND=cupy timeout 420 python3 scripts/gpu_lesson_fills.py $LESSONS > "$OUT/r/gpu_fills.txt" 2>&1 ) &
if [ "${PYTEST:-1}" != 0 ]; then
  timeout 420 python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/kernels tests/autograder tests/lessons > "$OUT/r/pytest_gpu.txt" 2>&1
  tail -5 "$OUT/r/pytest_gpu.txt"
fi
wait
python3 - "$OUT/r" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": str(e)}
items = lambda r: {i["id"]: i["points"] for i in r.get("items", [])}
verdict = lambda r: f"{r.get('score')}/{r.get('max_score')} {'pass' if r.get('passed') else 'fail'} ({r.get('backend')})"
print("| notebook | GPU (cupy) | CPU emulator | per-item scores |\n|---|---|---|---|")
for g in sorted(glob.glob(f"{out}/gpu_*.json")):
    tag = os.path.basename(g)[4:-5]
    a, b = load(g), load(f"{out}/cpu_{tag}.json")
    same = items(a) == items(b) and a.get("passed") == b.get("passed") and "error" not in a
    print(f"| {tag} | {verdict(a)} | {verdict(b)} | {'same' if same else 'DIFFERENT'} |")
PY
grep -c "AS EXPECTED" "$OUT/r/gpu_fills.txt"; grep -v "AS EXPECTED" "$OUT/r/gpu_fills.txt" | head -40
head -120 "$OUT/r/gpu_cells.txt"
# Few files come back from some runners: keep everything in one archive.
tar czf /tmp/gpu_proof.tgz -C "$OUT/r" . && rm -rf "$OUT/r" && mv /tmp/gpu_proof.tgz "$OUT/"
