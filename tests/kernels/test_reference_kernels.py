"""Reference (speed-of-light) LayerNorm / RMSNorm / softmax kernels: planner, NVRTC build, numerics.

* planner tests: pure Python, every launch shape covers the row and stays within its register budget;
* NVRTC tests: every instance the planner picks for the benchmark shapes compiles for sm_90 without
  register spills (runs without a GPU; needs the nvidia-cuda-nvrtc wheel);
* CPU-emulator tests: the cached (warp/block per row) and stream kernels through ``kernels.RawModule``
  on tiny shapes, including rows that do not start on a 16-byte boundary, with memcheck + racecheck;
* GPU tests (``@pytest.mark.gpu``): every path including clusters, through cupy, against float64.
"""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from solutions.kernels import dispatch
from solutions.kernels.dispatch import (KINDS, OPS, ReferenceKernels, bf16_bits_to_f32, f32_to_bf16_bits,
                                        plan, source)

BENCH_N = (256, 768, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 50257)
DTYPES = ("float32", "bf16")


# ------------------------------------------------------------------ float64 references
def reference(op: str, x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    x = x.astype(np.float64)
    if op == "layernorm":
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * params[0] + params[1]
    if op == "rmsnorm":
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * params[0]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_case(op: str, M: int, N: int, dtype: str, rng):
    """Host inputs in the kernel's storage dtype + their exact float64 values."""
    x = rng.standard_normal((M, N)) * (3.0 if op == "softmax" else 2.0) + (0.0 if op == "softmax" else 1.5)
    params = []
    if op in ("layernorm", "rmsnorm"):
        params.append(1.0 + 0.5 * rng.standard_normal(N))
    if op == "layernorm":
        params.append(0.5 * rng.standard_normal(N))
    if dtype == "bf16":
        stored = [f32_to_bf16_bits(a.astype(np.float32)) for a in (x, *params)]
        exact = [bf16_bits_to_f32(a).astype(np.float64) for a in stored]
    else:
        stored = [a.astype(np.float32) for a in (x, *params)]
        exact = [a.astype(np.float64) for a in stored]
    return stored, exact


def check_output(op, y_stored, exact, dtype, seed=None):
    """Every element within its own bound (a norm over the whole array would let one wrong element per row
    through once rows are long): bf16 output rounding (2^-8 of the value) or fp32 arithmetic (2e-5), plus an
    absolute part of 1e-5 of the row's largest value for outputs that cancel to ~0 (LayerNorm's beta)."""
    y = (bf16_bits_to_f32(y_stored) if dtype == "bf16" else y_stored).astype(np.float64)
    assert np.isfinite(y).all(), f"unwritten (poisoned) or non-finite outputs (seed {seed})"
    ref = reference(op, exact[0], exact[1:])
    rtol = 2.0 ** -8 if dtype == "bf16" else 2e-5
    bound = rtol * np.abs(ref) + 1e-5 * np.abs(ref).max(axis=1, keepdims=True)
    excess = np.abs(y - ref) / bound
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    assert excess[worst] <= 1.0, (f"{op} {dtype}: element {worst} = {y[worst]!r}, float64 {ref[worst]!r} "
                                  f"({excess[worst]:.2f} x its bound; {int((excess > 1).sum())} elements off; "
                                  f"seed {seed})")


def poison(like: np.ndarray) -> np.ndarray:
    return np.full_like(like, 0x7FC0) if like.dtype == np.uint16 else np.full_like(like, np.nan)


# ------------------------------------------------------------------ planner (pure Python)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("N", (1, 7, 31, 32, 37, 255, 256, 300, 1023, 1024, 1025, 2049, 4096, 8191, 16384,
                               32768, 50257, 65536, 262144, 262145, 1 << 20))
def test_plan_covers_row_within_register_budget(op, dtype, N):
    M = 37
    for aligned in (True, False):
        p = plan(op, M, N, dtype, aligned=aligned)
        assert p.kind in KINDS
        if not aligned:
            assert p.vec == 1
        if p.kind == "stream":
            assert p.grid == (M,) and p.block == (p.tpr,) and p.cluster == 1
        else:
            # body vectors (<= ceil(N / vec)) all have an owner; the scalar head/tail needs < 2 vectors
            assert p.nv * p.tpr * p.cluster >= -(-N // p.vec)
            if p.kind == "pipe":  # two buffers of raw 16-byte vectors (+ parameters) in registers
                assert p.vec > 1 and aligned
                regs = (2 + (p.nparams if p.psrc == dispatch.PSRC_REGS else 0)) * 4 * p.nv
                assert regs + dispatch.PIPE_SPARE_REGS <= min(255, dispatch.REGS_PER_SM // p.tpr)
            else:
                assert p.elems_per_thread <= dispatch.WARP_ROW_MAX_ELEMS
            assert p.block[0] == p.tpr * p.rpb <= 1024
            rows_covered = p.grid[0] // p.cluster * p.rpb
            assert rows_covered >= M and p.grid[0] % p.cluster == 0
            assert p.tpr <= 32 or p.rpb == 1
            assert p.cluster <= dispatch.MAX_CLUSTER
            assert p.shared_bytes <= dispatch.MAX_DYNAMIC_SHARED


PLAN_SWEEP = sorted(set(BENCH_N) | {1, 7, 31, 37, 300, 1023, 1025, 2049, 8191, 12000, 16383, 16387, 24576, 32769,
                                     100000, 131072, 262145, 1 << 20})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_default_plans_follow_the_planners_rules(op, dtype):
    """The rules every default plan follows, from dispatch's own constants and PIPE_TUNING (not its measured
    values restated: editing the tuning table must not break this test, a planner that ignores it must)."""
    itemsize = 2 if dtype == "bf16" else 4
    width = 16 // itemsize
    kinds = set()
    for N in PLAN_SWEEP:
        for aligned in (True, False):
            for allow in (True, False):
                p = plan(op, 37, N, dtype, aligned=aligned, allow_cluster=allow)
                kinds.add(p.kind)
                where = (N, aligned, allow, p.name)
                vec = width if aligned else 1
                nvec = -(-N // vec)
                if not aligned:
                    assert p.vec == 1 and p.kind != "pipe", where
                if not allow:
                    assert p.cluster == 1 and p.kind not in ("pipe", "cluster"), where
                if p.kind == "cached" and p.tpr <= 32:
                    # warp mode: the rows a warp's registers hold, WARP_MODE_THREADS threads a block
                    assert p.rpb * p.tpr == dispatch.WARP_MODE_THREADS, where
                    assert p.nv * p.vec <= 2 * dispatch.WARP_ROW_MAX_ELEMS, where
                if p.kind == "cached" and p.tpr > 32:
                    assert p.rpb == 1 and p.tpr in dispatch.BLOCK_ROW_TPR + (1024,), where
                    target = (2 if (itemsize == 2 or op == "softmax") else 1) * dispatch.BLOCK_ROW_TARGET_ELEMS
                    smaller = [t for t in dispatch.BLOCK_ROW_TPR if t < p.tpr]
                    # the smallest block per row that keeps a thread at its target (or the largest block)
                    assert all(-(-nvec // t) * vec > target for t in smaller), where
                if p.kind == "pipe":
                    tune = dispatch.PIPE_TUNING[(op, itemsize, N % width == 0)]
                    assert p.vec == width and p.nv <= tune.max_vecs, where
                    assert (p.sched, p.ahead) == (tune.sched, tune.ahead), where
                    key = (op, itemsize, p.tpr, p.nv, p.psrc, p.ahead)
                    assert p.spare == dispatch.PIPE_FLOOR_TUNED.get(key, dispatch.PIPE_FLOOR_SPARE_REGS), where
                    # the first shape in pipe_tpr_order the row fits (registers, shared memory) is the one taken
                    order = dispatch.pipe_tpr_order(nvec, p.cluster, tune.max_vecs)
                    if p.tpr in order:
                        for t in order[:order.index(p.tpr)]:
                            with pytest.raises(ValueError):
                                plan(op, 37, N, dtype, kind="pipe", cluster=p.cluster, tpr=t, psrc=tune.psrc)
                if p.kind == "stream":
                    assert p.grid == (37,) and p.cluster == 1, where
    # every kind is reachable by default
    assert kinds == set(KINDS), kinds


def test_plan_rejects_bad_requests():
    with pytest.raises(ValueError):
        plan("gelu", 4, 4, "float32")
    with pytest.raises(ValueError, match="spare"):
        plan("softmax", 8, 65536, "float32", kind="pipe", cluster=8, tpr=128, spare=-8)
    with pytest.raises(ValueError, match="sched"):
        plan("softmax", 8, 65536, "float32", kind="pipe", cluster=8, tpr=128, sched=3)
    with pytest.raises(TypeError):
        plan("softmax", 4, 4, "float64")
    with pytest.raises(ValueError):
        plan("softmax", 4, 4, "float32", kind="magic")
    with pytest.raises(ValueError):
        plan("softmax", 4, 1 << 20, "float32", kind="cached")
    with pytest.raises(ValueError):
        plan("softmax", 4, 65536, "float32", kind="cluster", allow_cluster=False)
    with pytest.raises(ValueError):  # 8 lanes cannot peel a bf16 row's head + tail (up to 14 scalars)
        plan("softmax", 4, 37, "bf16", tpr=8)
    with pytest.raises(ValueError):  # pipe kernels move 16-byte vectors only
        plan("layernorm", 4, 4096, "float32", kind="pipe", aligned=False)
    with pytest.raises(ValueError):  # two buffers of 32 vectors do not fit 1024 threads' registers
        plan("rmsnorm", 4, 32768, "float32", kind="pipe", cluster=1, tpr=1024)
    with pytest.raises(ValueError):  # a forced nv must still cover the row
        plan("rmsnorm", 4, 32768, "float32", kind="pipe", cluster=8, tpr=128, nv=4)
    with pytest.raises(ValueError, match="LayerNorm"):  # parameter pairs: gamma and beta only
        plan("rmsnorm", 8, 65536, "float32", kind="pipe", cluster=8, tpr=256, psrc=dispatch.PSRC_PAIRS)


def test_bf16_bits_round_to_nearest_even_and_keep_nan():
    vals = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf, np.nan, 3.0e38], dtype=np.float32)
    bits = f32_to_bf16_bits(vals)
    # 1 + 2^-8 is a tie -> even (1.0); 1 + 3 * 2^-8 is a tie -> even (1 + 2^-6)
    assert list(bits[:4]) == [0x3F80, 0x3F80, 0x3F82, 0xC020]
    back = bf16_bits_to_f32(bits)
    assert back[4] == np.inf and np.isnan(back[5]) and np.isfinite(back[6])


@pytest.mark.parametrize("op", OPS)
def test_source_is_shared_helpers_then_op_file_with_line_directives(op):
    """One copy of the helpers (common.cuh); every RawModule gets common.cuh + <op>.cu as one text."""
    common, op_file = dispatch.source_files(op)
    assert (common.name, op_file.name) == ("common.cuh", f"{op}.cu")
    assert source(op) == (f'#line 1 "solutions/kernels/common.cuh"\n{common.read_text(encoding="utf-8")}'
                          f'#line 1 "solutions/kernels/{op}.cu"\n{op_file.read_text(encoding="utf-8")}')
    # no helper pasted back into an op file (no long code line of common.cuh appears there again; template
    # parameter lists are declarations both files share, not code)
    helpers = {ln.strip() for ln in common.read_text(encoding="utf-8").splitlines()
               if len(ln.strip()) > 40 and not ln.strip().startswith(("//", "template <"))}
    assert not helpers & {ln.strip() for ln in op_file.read_text(encoding="utf-8").splitlines()}


def test_compile_errors_name_the_file_and_line_to_edit(tmp_path, monkeypatch):
    """The #line directives map NVRTC diagnostics back to common.cuh / <op>.cu lines."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    for f in dispatch.source_files("softmax"):
        (tmp_path / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    for name, line in (("common.cuh", 3), ("softmax.cu", 5)):
        good = (tmp_path / name).read_text(encoding="utf-8")
        lines = good.splitlines(keepends=True)
        (tmp_path / name).write_text("".join(lines[:line - 1] + ["int broken = ;\n"] + lines[line - 1:]),
                                     encoding="utf-8")
        monkeypatch.setattr(dispatch, "KERNEL_DIR", tmp_path)
        err, prog = nvrtc.nvrtcCreateProgram(source("softmax").encode(), b"reference.cu", 0, [], [])
        (res,) = nvrtc.nvrtcCompileProgram(prog, 1, [b"-std=c++17"])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert res != nvrtc.nvrtcResult.NVRTC_SUCCESS
        assert f"solutions/kernels/{name}({line}): error" in log.decode(errors="replace"), bytes(log)
        (tmp_path / name).write_text(good, encoding="utf-8")


# ------------------------------------------------------------------ NVRTC build (no GPU needed)
def _nvrtc_compile(src: str, names: list[str]) -> str:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"reference.cu", 0, [], [])
    for n in names:
        nvrtc.nvrtcAddNameExpression(prog, n.encode())
    opts = [b"-std=c++17", b"--gpu-architecture=sm_90", b"--ptxas-options=-v"]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, log)
    log = log.decode(errors="replace").replace("\x00", "")
    assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS, log[-3000:]
    return log


@pytest.mark.parametrize("op", OPS)
def test_benchmark_instances_compile_for_sm90_without_spills(op):
    try:
        import cuda.bindings.nvrtc as nvrtc
        nvrtc.nvrtcVersion()
    except Exception as exc:  # pragma: no cover - environment without the NVRTC wheel
        pytest.skip(f"NVRTC not available: {exc}")
    plans = {plan(op, 1024, N, dt, kind=k) for N in BENCH_N for dt in DTYPES for k in (None, "stream")}
    names = sorted({p.name for p in plans})
    # every instance compiled with fewer spare registers (a higher occupancy floor) is among them
    tuned = {key for key in dispatch.PIPE_FLOOR_TUNED if key[0] == op}
    assert tuned <= {(p.op, 2 if p.ctype != "float" else 4, p.tpr, p.nv, p.psrc, p.ahead) for p in plans
                               if p.kind == "pipe" and p.spare != dispatch.PIPE_FLOOR_SPARE_REGS}
    log = _nvrtc_compile(source(op), names)
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", log)]
    assert spills and max(spills) == 0, "register spills in: " + log[-2000:]
    assert len(re.findall(r"Compiling entry function", log)) == len(names)


# ------------------------------------------------------------------ CPU emulator through kernels.RawModule
def _cpu_backend_or_skip():
    kernels = pytest.importorskip("kernels")
    try:
        import kernels.cpu  # noqa: F401
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"CPU emulator not importable: {exc}")
    return kernels


CPU_SHAPES = (
    (5, 37, None),      # 8 (fp32) / 16 (bf16) lanes per row, rows not 16-byte aligned: head/tail peeling
    (19, 64, None),     # 16 lanes per row: lanes past the last row join shuffles, store nothing
    (4, 300, None),     # warp per row, aligned rows
    (2, 2052, None),    # block per row
    (3, 301, "stream"),  # stream kernel, scalar path (N % vec != 0)
    (3, 1200, "stream"),  # stream kernel, vector path
)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_cpu_emulator_matches_float64(op, dtype, monkeypatch):
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False)
    seed = zlib.crc32(f"{op}-{dtype}".encode())   # the same in every process (hash() is not): replayable
    rng = np.random.default_rng(seed)
    np_dtype = np.uint16 if dtype == "bf16" else np.float32
    rk.prepare([rk.plan(op, M, N, np_dtype, kind=k) for M, N, k in CPU_SHAPES])  # one build per op
    for M, N, kind in CPU_SHAPES:
        stored, exact = make_case(op, M, N, dtype, rng)
        x, *params = [kernels.asarray(a) for a in stored]
        y = kernels.asarray(poison(stored[0]))
        rk.run(op, x, params, out=y, kind=kind)
        check_output(op, kernels.asnumpy(y), exact, dtype, seed=f"{seed}, case {(M, N, kind)}")


@pytest.mark.parametrize("op", OPS)
def test_cpu_emulator_memcheck_racecheck_misaligned_rows(op, monkeypatch):
    """Head/tail peeling must stay inside each row and every barrier must hold (emulator checks)."""
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False)
    rng = np.random.default_rng(7)
    for M, N in ((3, 13), (2, 1029)):   # warp-per-row and block-per-row, rows start at every offset
        stored, exact = make_case(op, M, N, "float32", rng)
        x, *params = [kernels.asarray(a) for a in stored]
        y = kernels.asarray(poison(stored[0]))
        with kernels.check("memcheck", "racecheck"):
            rk.run(op, x, params, out=y)
        check_output(op, kernels.asnumpy(y), exact, "float32", seed=f"7, shape {(M, N)}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_cpu_emulator_pipe_kernel_prefetches_rows_with_parameters_anywhere(op, dtype, monkeypatch):
    """Pipelined persistent kernel (one CTA per row here; clusters need a GPU): 3 CTAs loop over M rows while
    the next row's loads are in flight, odd and even row counts (the loop is unrolled by two), parameters in
    global memory, registers and shared memory (the tensor's type; fp32 spread; aligned rows only; LayerNorm's
    gamma/beta pairs); N = 1029 / 131 / 2053 rows start at every 16-byte offset, where the register copy (filled
    for the first row's offset) must fall back to global memory; CTAs of 1-5 warps (160 threads: the shape
    8192 x 50257 runs at). Rows dealt out statically, by ticket, and by ticket for each CTA's last rows (37 rows
    on 3 CTAs: 8 static rows each first): a ticketed launch must draw exactly the tickets dispatch.pipe_tickets
    counts (the next launch's rows are counted from there; poisoned output would show a row skipped)."""
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False, persist_clusters=3)
    rng = np.random.default_rng(12)
    np_dtype = np.uint16 if dtype == "bf16" else np.float32
    cases, case = [], 0
    for M, N, tpr in ((7, 1029, 64), (8, 1024, 128), (2, 131, 32), (4, 131, 32), (9, 1029, 64), (37, 131, 32),
                      (5, 2053, 160)):
        for psrc in {"layernorm": (0, 1, 2, 3, 4, 5), "rmsnorm": (0, 1, 2, 3, 4)}.get(op, (None,)):
            case += 1
            # static / by ticket / late tickets in turn, rows prefetched to L2 ahead or not (a no-op here)
            config = {"tpr": tpr, "psrc": psrc, "sched": case % 3, "ahead": case // 3 % 2}
            if psrc == dispatch.PSRC_ALIGNED and N % (8 if dtype == "bf16" else 4):
                with pytest.raises(ValueError, match="16-byte boundary"):  # rows at other offsets
                    rk.plan(op, M, N, np_dtype, kind="pipe", **config)
                continue
            cases.append((case, M, N, config, rk.plan(op, M, N, np_dtype, kind="pipe", **config)))
    rk.prepare([p for *_, p in cases])   # one build of every instance (a build per instance: minutes, cold)
    for case, M, N, config, p in cases:
        assert p.kind == "pipe" and rk.launch_grid(p) == min(M, 3)
        stored, exact = make_case(op, M, N, dtype, rng)
        x, *params = [kernels.asarray(a) for a in stored]
        y = kernels.asarray(poison(stored[0]))
        with kernels.check("memcheck", "racecheck"):
            rk.run(op, x, params, out=y, kind="pipe", config=config)
        check_output(op, kernels.asnumpy(y), exact, dtype, seed=f"12, case {case}")
        assert int(kernels.asnumpy(rk._tickets)[0]) == rk._ticket_base


def softmax_wide_range_case(M: int, N: int):
    """bf16 rows whose probabilities span 2^-27 ... 1 (x from -19 to 0): (stored bits, exact float64 x)."""
    x = np.random.default_rng(21).uniform(-19.0, 0.0, (M, N))
    x[:, N // 2] = 0.0
    stored = f32_to_bf16_bits(x.astype(np.float32))
    return stored, bf16_bits_to_f32(stored).astype(np.float64)


def check_softmax_each_output(y_bits, x_exact):
    """Every output within bf16 rounding (2^-8 relative) plus the fp16 rounding of the kept exponential (2^-11)
    of float64: the pipe kernel keeps 2^15 exp(x - max) in fp16, which stays normal down to 2^-29 (unscaled,
    every probability under 2^-14 would lose bits, those under 2^-24 all of them)."""
    y = bf16_bits_to_f32(y_bits).astype(np.float64)
    ref = reference("softmax", x_exact, [])
    worst = float((np.abs(y - ref) / ref).max())
    assert worst <= 2.0 ** -8 + 2.0 ** -10, f"worst relative error {worst:.3g} (min probability {ref.min():.3g})"


def test_cpu_emulator_pipe_softmax_bf16_small_probabilities_keep_their_bits(monkeypatch):
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False, persist_clusters=2)
    stored, exact = softmax_wide_range_case(5, 2053)
    y = rk.softmax(kernels.asarray(stored), kind="pipe", config={"tpr": 160})
    check_softmax_each_output(kernels.asnumpy(y), exact)


def test_cpu_emulator_pipe_layernorm_outlier_in_first_column_stays_accurate(monkeypatch):
    """The pipe LayerNorm's one-round statistics are shifted sums about K = the mean of the row's first 32
    elements. Rows with a large mean and one huge value in column 0 (a massive activation): a single-sample
    shift K = x[0] would cancel ~N ulps of the variance (2.7e-4 relative error measured at N = 4096); the
    32-element mean keeps the error at the level of the exact Welford kernel."""
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False, persist_clusters=2)
    rng = np.random.default_rng(9)
    M, N = 4, 4096
    x = (rng.standard_normal((M, N)) + 100.0).astype(np.float32)
    x[:, 0] += 1e4
    g = (1.0 + 0.5 * rng.standard_normal(N)).astype(np.float32)
    b = (0.5 * rng.standard_normal(N)).astype(np.float32)
    ref = reference("layernorm", x.astype(np.float64), [g.astype(np.float64), b.astype(np.float64)])
    y = kernels.asnumpy(rk.layernorm(*[kernels.asarray(a) for a in (x, g, b)], kind="pipe", config={"tpr": 128}))
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 2e-6


def test_cpu_emulator_unaligned_base_pointer_uses_scalar_path(monkeypatch):
    kernels = _cpu_backend_or_skip()
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")
    rk = ReferenceKernels(raw_module=kernels.RawModule, allow_cluster=False)
    rng = np.random.default_rng(3)
    M, N = 3, 64
    buf = np.empty(M * N + 1, dtype=np.float32)
    x = buf[1:].reshape(M, N)          # 4 bytes past a 16-byte boundary
    x[...] = rng.standard_normal((M, N)).astype(np.float32) * 3
    assert x.ctypes.data % 16 != 0
    y = np.full_like(x, np.nan)
    xk = kernels.asarray(x)
    yk = kernels.asarray(y)
    if kernels.asnumpy(xk).ctypes.data % 16 == 0:  # pragma: no cover - the runtime copied to aligned memory
        pytest.skip("runtime realigned the array")
    rk.softmax(xk, out=yk)
    check_output("softmax", kernels.asnumpy(yk), [x.astype(np.float64)], "float32")


# ------------------------------------------------------------------ GPU (cupy), every path incl. clusters
GPU_SHAPES = [(7, 37), (64, 768), (9, 1025), (5, 4096), (3, 16384), (3, 32768), (3, 50257), (2, 65536),
              (2, 262145)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_gpu_every_path_matches_float64(op, dtype):
    cp = pytest.importorskip("cupy")
    rk = ReferenceKernels(raw_module=cp.RawModule)
    rng = np.random.default_rng(11)
    np_dtype = np.uint16 if dtype == "bf16" else np.float32
    ran, skipped = [], []
    for M, N in GPU_SHAPES:
        stored, exact = make_case(op, M, N, dtype, rng)
        x, *params = [cp.asarray(a) for a in stored]
        for kind in (None, "stream", "cluster"):
            try:
                rk.plan(op, M, N, np_dtype, kind=kind)
            except ValueError as exc:
                assert kind == "cluster" and "does not fit" in str(exc), (M, N, kind, exc)  # rows too long
                skipped.append((M, N, kind))
                continue
            y = cp.asarray(poison(stored[0]))
            rk.run(op, x, params, out=y, kind=kind)
            check_output(op, cp.asnumpy(y), exact, dtype, seed=f"11, shape {(M, N, kind)}")
            ran.append((M, N, kind))
    print(f"{op} {dtype}: {len(ran)} launches checked, skipped (no cluster shape): {skipped}")
    assert len(ran) == 3 * len(GPU_SHAPES) - len(skipped) and len(skipped) <= 2   # only the longest rows


PIPE_SHAPES = ((1, 512), (1, 1024), (2, 512), (2, 1024), (4, 512), (4, 1024), (8, 160), (8, 256), (8, 512))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_gpu_pipe_kernels_match_float64(op, dtype):
    """Every pipelined launch shape and parameter source, with 2 clusters looping over the rows (odd and even
    row counts per cluster) and with the driver-sized grid, on aligned and misaligned rows, rows dealt out
    statically, by ticket and by ticket for the last rows (in turn; 37 rows on 2 clusters: 14 static rows each),
    rows bulk-prefetched to L2 ahead or not (in turn)."""
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(6)
    np_dtype = np.uint16 if dtype == "bf16" else np.float32
    case, ran, skipped = 0, 0, {}
    for clusters in (2, None):
        rk = ReferenceKernels(raw_module=cp.RawModule, persist_clusters=clusters)
        for M, N in ((9, 4096), (7, 16387), (6, 32768), (11, 50257), (4, 65536), (37, 16387)):
            stored, exact = make_case(op, M, N, dtype, rng)
            x, *params = [cp.asarray(a) for a in stored]
            for c, t in PIPE_SHAPES:
                for psrc in {"layernorm": (0, 1, 2, 3, 4, 5), "rmsnorm": (0, 1, 2, 3, 4)}.get(op, (None,)):
                    case += 1
                    config = {"cluster": c, "tpr": t, "psrc": psrc, "sched": case % 3, "ahead": case // 3 % 2}
                    try:
                        p = rk.plan(op, M, N, np_dtype, kind="pipe", **config)
                    except ValueError as exc:   # shapes a row does not fit: counted by reason, never silently
                        reason = re.sub(r"\d+", "#", str(exc))
                        assert re.search(r"registers|shared memory|cannot hold|byte boundary", reason), exc
                        skipped[reason] = skipped.get(reason, 0) + 1
                        continue
                    y = cp.asarray(poison(stored[0]))
                    rk.run(op, x, params, out=y, kind="pipe", config=config)
                    assert clusters is None or rk.launch_grid(p) == min(M, clusters) * c
                    check_output(op, cp.asnumpy(y), exact, dtype, seed=f"6, case {case}")
                    assert int(rk._tickets.get()[0]) == rk._ticket_base  # exactly the tickets pipe_tickets counts
                    ran += 1
        assert clusters or rk.resident_error is None, rk.resident_error
    print(f"{op} {dtype}: {ran} pipe launches checked of {case}; skipped: {skipped}")
    assert ran >= case // 2, skipped   # most configurations must run, not only the ones that fit everywhere


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("N", (300, 50257))
def test_gpu_softmax_special_values_same_policy_on_every_path(N, dtype):
    """-inf entries (masks) do not poison a row; an all -inf row, a NaN or a +inf makes the row NaN.
    N=300: cached, stream and cluster kernels; N=50257: pipe (default), stream and cluster kernels, misaligned rows."""
    cp = pytest.importorskip("cupy")
    rk = ReferenceKernels(raw_module=cp.RawModule)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, N)).astype(np.float32)
    x[0, : N // 2] = -np.inf          # half the row masked, including whole threads' shares
    x[1, :] = -np.inf
    x[2, N // 3] = np.nan
    x[3, N - 1] = np.inf
    x[4, 1::2] = -np.inf
    if dtype == "bf16":
        stored = f32_to_bf16_bits(x)
        x, rtol, atol = bf16_bits_to_f32(stored), 2.0 ** -8 + 2.0 ** -10, 0.0  # as check_softmax_each_output
    else:
        stored, rtol, atol = x, 2e-5, 1e-7
    ref = reference("softmax", x[[0, 4]], [])  # exp(-inf - max) = 0 in float64 too
    xd = cp.asarray(stored)
    for kind in (None, "stream", "cluster"):
        y = cp.asnumpy(rk.softmax(xd, kind=kind))
        y = bf16_bits_to_f32(y) if dtype == "bf16" else y
        assert np.isnan(y[1:4]).all(), kind
        assert np.isfinite(y[[0, 4, 5]]).all(), kind
        np.testing.assert_allclose(y[[0, 4]], ref, rtol=rtol, atol=atol, err_msg=str(kind))


@pytest.mark.gpu
@pytest.mark.parametrize("N", (50257, 65536))
def test_gpu_pipe_softmax_bf16_small_probabilities_keep_their_bits(N):
    """The default bf16 pipe launches (8 x 160 x 5 at 50257, 8 x 128 x 8 at 65536), every output checked."""
    cp = pytest.importorskip("cupy")
    rk = ReferenceKernels(raw_module=cp.RawModule)
    stored, exact = softmax_wide_range_case(64, N)
    assert rk.plan("softmax", 64, N, np.uint16).kind == "pipe"
    check_softmax_each_output(cp.asnumpy(rk.softmax(cp.asarray(stored))), exact)


@pytest.mark.gpu
def test_gpu_same_result_through_kernels_runtime():
    """The dispatcher drives the course runtime's RawModule exactly like cupy's."""
    cp = pytest.importorskip("cupy")
    import kernels
    if kernels.backend() != "cupy":
        pytest.skip("kernels runtime is not on the GPU backend")
    rng = np.random.default_rng(5)
    stored, exact = make_case("layernorm", 16, 1000, "float32", rng)
    a = ReferenceKernels(raw_module=kernels.RawModule).layernorm(*[kernels.asarray(s) for s in stored])
    b = ReferenceKernels(raw_module=cp.RawModule).layernorm(*[cp.asarray(s) for s in stored])
    np.testing.assert_array_equal(kernels.asnumpy(a), cp.asnumpy(b))
