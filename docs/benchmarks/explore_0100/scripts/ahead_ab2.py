# A/B on the committed placement: every long-row pipe default launched with its rows prefetched to L2 a row ahead
# (ahead=1) and without (ahead=0), A B A B, L2 flushed, median of 30; % of copy; the default's choice marked *.
import sys; sys.path.insert(0, '.'); sys.path.insert(0, 'benchmarks')
import numpy as np, cupy as cp
from speed_of_light import make_inputs, from_torch, timer_and_ceiling, reference, as_f64, rel_err
from solutions.kernels.dispatch import ReferenceKernels
l2, timer, copy_bw = timer_and_ceiling(30)
print(f"copy {copy_bw:.0f} GB/s")
rk = ReferenceKernels()
print("| op | dtype | M | N | default kernel | ahead=1 | ahead=0 | ahead=1 | ahead=0 | err (ahead=1) |")
print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
for dt in ("bf16", "fp32"):
    item = 2 if dt == "bf16" else 4
    for N in (32768, 65536, 50257):
        M = 8192 if N == 50257 else -(-4 * l2 // (N * item))
        for op in ("layernorm", "rmsnorm", "softmax"):
            x_t, p_t = make_inputs(op, M, N, dt, 11)
            x = from_torch(x_t, dt); params = [from_torch(p, dt) for p in p_t]
            y = cp.empty_like(x)
            p = rk.plan(op, M, N, np.uint16 if dt == "bf16" else np.float32)
            if p.kind != "pipe":
                continue
            nbytes = 2 * M * N * item + len(params) * N * item
            y.fill(0)
            rk.run(op, x, params, out=y, config={"ahead": 1})
            err = rel_err(y, reference(op, as_f64(x, dt), [as_f64(q, dt) for q in params]), dt)
            cells = []
            for rep in range(2):
                for a in (1, 0):
                    us, _ = timer.median_us(lambda: rk.run(op, x, params, out=y, config={"ahead": a}))
                    cells.append(f"{100 * nbytes / us / 1e3 / copy_bw:.1f}%" + ("*" if a == p.ahead else ""))
            print(f"| {op} | {dt} | {M} | {N} | `{p.name}` | " + " | ".join(cells) + f" | {err:.1e} |", flush=True)
