# compute-sanitizer memcheck target: the pipe kernels with rows prefetched ahead, small M, rows at every offset
import sys; sys.path.insert(0, '.')
import numpy as np, cupy as cp
from solutions.kernels.dispatch import ReferenceKernels
rk = ReferenceKernels(persist_clusters=2)
rng = np.random.default_rng(0)
for dt in (np.uint16, np.float32):
    for M, N in ((37, 50257), (9, 65536), (11, 32768)):
        for op in ("layernorm", "rmsnorm", "softmax"):
            x = cp.asarray(rng.integers(0x3e00, 0x4000, size=(M, N)).astype(np.uint16) if dt == np.uint16 else rng.standard_normal((M, N)).astype(np.float32))
            params = [cp.ones(N, dtype=dt) if dt == np.float32 else cp.full(N, 0x3f80, dtype=np.uint16) for _ in range({"layernorm": 2, "rmsnorm": 1, "softmax": 0}[op])]
            y = cp.empty_like(x)
            for a in (1, 0):
                rk.run(op, x, params, out=y, kind="pipe", config={"cluster": 8, "tpr": 256, "ahead": a})
            cp.cuda.Device().synchronize()
            print(op, np.dtype(dt).name, M, N, "ok", flush=True)
