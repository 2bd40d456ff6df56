#!/usr/bin/env bash
# GPU proof of lessons 09-12, run from the repository root on a GPU machine:
#   OUT=/some/dir bash scripts/gpu_proof_lessons_09_12.sh     (wheels for missing packages may be carried in .whl/)
# Each solution and released notebook graded on cupy and on the CPU emulator with one seed (per-item table), the
# lesson tables' wrong and alternative fills on cupy (scripts/gpu_lesson_fills.py), and the GPU-only cells of
# lessons 09, 10, 12 (cuBLAS comparison, attention and cross-entropy timings) executed on cupy. Results: docs/gpu_runs.md.
set -u
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
fi
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 KERNELS_CACHE_DIR=/tmp/kcache
O=${OUT:-out/gpu_proof_09_12}; mkdir -p "$O/r"
SEED=20261201
{ date -u; nvidia-smi -L; python3 --version; which g++;
  python3 -c "import kernels, cupy; print('backend', kernels.backend(), kernels.device_name(), 'cupy', cupy.__version__)"; } > "$O/r/env.txt" 2>&1
for nb in solutions/09_gemm solutions/10_flash_attention solutions/11_rope solutions/12_cross_entropy \
          lessons/09_gemm lessons/10_flash_attention lessons/11_rope lessons/12_cross_entropy; do
  tag=$(echo "$nb" | tr '/' '_')
  ( KERNELS_BACKEND=cupy timeout 400 python3 -m autograder.cli check "$nb.ipynb" --json --seed $SEED > "$O/r/gpu_$tag.json" 2> "$O/r/gpu_$tag.err" ) &
  ( KERNELS_BACKEND=cpu timeout 400 python3 -m autograder.cli check "$nb.ipynb" --json --seed $SEED > "$O/r/cpu_$tag.json" 2> "$O/r/cpu_$tag.err" ) &
done
# lesson 9's cuBLAS comparison and lesson 10/12 GPU timing cells: execute the solution notebooks on cupy, keep outputs
( KERNELS_BACKEND=cupy AUTOGRADER_RUNNING=1 timeout 400 python3 - <<'PY' > "$O/r/gpu_cells.txt" 2>&1
import nbformat, os
from nbclient import NotebookClient
from autograder import notebook as nbio
for name in ("09_gemm", "10_flash_attention", "12_cross_entropy"):
    nb = nbformat.read(f"solutions/{name}.ipynb", as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.source = nbio._fill(c.source)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": "/tmp"}}).execute()
    for c in nb.cells:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if gid in ("bench_gpu", "intensity", "quick_check"):
            print(f"==== {name} {gid}")
            for o in c.get("outputs", []):
                if o.get("output_type") == "stream": print(o["text"])
                elif o.get("output_type") == "error": print("ERROR", o["ename"], o["evalue"])
PY
) &
KERNELS_BACKEND=cupy timeout 420 python3 scripts/gpu_lesson_fills.py 09 10 11 12 > "$O/r/gpu_fills.txt" 2>&1
wait
python3 - "$O/r" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
rows = []
for g in sorted(glob.glob(f"{out}/gpu_*.json")):
    tag = os.path.basename(g)[4:-5]
    def load(p):
        try:
            return json.load(open(p))
        except Exception as e:
            return {"error": str(e)}
    a, b = load(g), load(f"{out}/cpu_{tag}.json")
    items = lambda r: {i["id"]: i["points"] for i in r.get("items", [])}
    same = items(a) == items(b) and a.get("passed") == b.get("passed")
    rows.append(f"| {tag} | {a.get('score')}/{a.get('max_score')} {'pass' if a.get('passed') else 'fail'} ({a.get('backend')}) "
                f"| {b.get('score')}/{b.get('max_score')} {'pass' if b.get('passed') else 'fail'} ({b.get('backend')}) | {'same' if same else 'DIFFERENT'} | {items(a)} |")
print("| notebook | GPU (cupy) | CPU emulator | per-item scores | items (GPU) |\n|---|---|---|---|---|")
print("\n".join(rows))
PY
cat "$O/r/gpu_fills.txt"
cat "$O/r/gpu_cells.txt" | head -80
tar czf "$O/lessons_b_gpu.tgz" -C "$O/r" . && rm -rf "$O/r"
