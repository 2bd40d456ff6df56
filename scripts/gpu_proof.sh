#!/usr/bin/env bash
# Proof run on a GPU machine (the course's device run): GPU-marked tests, every lesson executed end to end on the
# cupy backend and graded, and the same grading on the CPU emulator with the same seed for comparison.
# Usage: OUT=/some/dir bash scripts/gpu_proof.sh   (wheels for missing packages may be carried in .whl/)
set -u
OUT=${OUT:-out/gpu_proof}
mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 KERNELS_CACHE_DIR=/tmp/kcache
SEED=${SEED:-20261129}
{
  date -u; nvidia-smi -L; python3 --version; which g++ || echo "no g++"
  python3 -c "import kernels, cupy; print('backend', kernels.backend(), kernels.device_name(), 'cupy', cupy.__version__)"
} 2>&1 | tee "$OUT/env.txt"

# Lesson gradings in parallel (GPU and CPU emulator, same seed), while pytest runs the GPU-marked tests.
for nb in solutions/0*.ipynb lessons/0*.ipynb examples/submissions/*.ipynb; do
  tag=$(echo "$nb" | tr '/' '_' | sed 's/.ipynb//')
  ( KERNELS_BACKEND=cupy timeout 420 python3 -m autograder.cli check "$nb" --json --seed "$SEED" > "$OUT/gpu_$tag.json" 2> "$OUT/gpu_$tag.err";
    KERNELS_BACKEND=cpu  timeout 420 python3 -m autograder.cli check "$nb" --json --seed "$SEED" > "$OUT/cpu_$tag.json" 2> "$OUT/cpu_$tag.err" ) &
done
timeout 500 python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/kernels tests/autograder tests/lessons > "$OUT/pytest_gpu.txt" 2>&1
tail -5 "$OUT/pytest_gpu.txt"
wait
python3 - "$OUT" <<'PY'
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
                f"| {b.get('score')}/{b.get('max_score')} {'pass' if b.get('passed') else 'fail'} ({b.get('backend')}) | {'same' if same else 'DIFFERENT'} |")
print("| notebook | GPU (cupy) | CPU emulator | per-item scores |\n|---|---|---|---|")
print("\n".join(rows))
PY
# Few files come back from some runners: keep everything in one archive.
tar czf /tmp/gpu_proof.tgz -C "$OUT" . && rm -f "$OUT"/*.json "$OUT"/*.err && mv /tmp/gpu_proof.tgz "$OUT/"
