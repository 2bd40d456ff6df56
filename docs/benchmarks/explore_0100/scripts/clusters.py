# bf16 softmax 1920 x 65536: the default plan launched on fewer clusters than fit (persist_clusters), A B A B.
import sys; sys.path.insert(0, '.'); sys.path.insert(0, 'benchmarks')
import numpy as np, cupy as cp
from speed_of_light import make_inputs, from_torch, timer_and_ceiling
from solutions.kernels.dispatch import ReferenceKernels
l2, timer, copy_bw = timer_and_ceiling(30)
print(f"copy {copy_bw:.0f} GB/s")
for op, M, N, counts in (("softmax", 1920, 65536, (None, 76, 72, 68, 64, 60)), ("softmax", 8192, 50257, (None, 88, 84))):
    x_t, _ = make_inputs(op, M, N, "bf16", 5)
    x = from_torch(x_t, "bf16"); y = cp.empty_like(x)
    nbytes = 2 * M * N * 2
    rks = {c: ReferenceKernels(persist_clusters=c) for c in counts}
    p = rks[None].plan(op, M, N, np.uint16)
    for rep in range(2):
        cells = []
        for c, rk in rks.items():
            us, sp = timer.median_us(lambda: rk.run(op, x, [], out=y))
            cells.append(f"{c or 'all (' + str(rk.launch_grid(p) // p.cluster) + ')'}: {100 * nbytes / us / 1e3 / copy_bw:.1f}%")
        print(op, M, N, p.name, " | ".join(cells), flush=True)
