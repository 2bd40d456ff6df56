# Probe (wrong results on purpose): bf16 LayerNorm 8192 x 50257 with the parameter units read as if every row
# were on a 16-byte boundary (2 aligned 16-byte loads per vector, the head/tail path intact) vs units and pairs.
import sys; sys.path.insert(0, '.'); sys.path.insert(0, 'benchmarks')
import numpy as np, cupy as cp
from speed_of_light import make_inputs, from_torch, timer_and_ceiling
from solutions.kernels.dispatch import ReferenceKernels
l2, timer, copy_bw = timer_and_ceiling(30)
print(f"copy {copy_bw:.0f} GB/s")
M, N = 8192, 50257
x_t, p_t = make_inputs("layernorm", M, N, "bf16", 7)
x = from_torch(x_t, "bf16"); g, b = [from_torch(p, "bf16") for p in p_t]
y = cp.empty_like(x)
nbytes = 2 * M * N * 2 + 2 * N * 2
rk_def = ReferenceKernels()
rk_diag = ReferenceKernels(options=("-std=c++17", "-DSOL_DIAG_ALIGN_ANY"))
args = (x, g, b, y, np.int32(M), np.int32(N), np.float32(1e-5))
cells = [("pairs", rk_def, rk_def.plan("layernorm", M, N, np.uint16)),
         ("units", rk_def, rk_def.plan("layernorm", M, N, np.uint16, kind="pipe", cluster=8, tpr=160, psrc=6, spare=24)),
         ("units-as-aligned probe", rk_diag, rk_def.plan("layernorm", M, N, np.uint16, kind="pipe", cluster=8, tpr=160, psrc=6, spare=24)),
         ("units-as-aligned probe spare32", rk_diag, rk_def.plan("layernorm", M, N, np.uint16, kind="pipe", cluster=8, tpr=160, psrc=6, spare=32))]
for rep in range(2):
    for name, rk, p in cells:
        us, _ = timer.median_us(lambda: rk._launch(p, args))
        print(f"{name:32s} {p.name:60s} {100*nbytes/us/1e3/copy_bw:.1f}%", flush=True)
