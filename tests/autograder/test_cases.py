"""Case generation, launching, comparison and Chinese failure reasons.

The harness tests use a stand-in RawModule that runs numpy "kernels" chosen by
the source text (so the logic is tested without a compiler); the tests at the
bottom run real CUDA through ``kernels`` and skip when no backend can compile.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernels
from autograder import cases, config, references
from kernels import errors as kerr

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def fixture_rubric(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_RUBRIC", str(FIXTURES / "grading_rubric.yaml"))
    monkeypatch.delenv("AUTOGRADER_SEED", raising=False)


def _layernorm_f32(x, gamma, beta, y, M, N, eps, clamp=True, write_cols=None):
    x2 = x.reshape(int(M), int(N)).astype(np.float32)
    s = x2.sum(axis=1, dtype=np.float32)
    sq = (x2 * x2).sum(axis=1, dtype=np.float32)
    mean = s / np.float32(N)
    var = sq / np.float32(N) - mean * mean
    if clamp:
        var = np.maximum(var, np.float32(0))
    with np.errstate(invalid="ignore"):
        inv = (np.float32(1) / np.sqrt(var + np.float32(eps))).astype(np.float32)
    out = ((x2 - mean[:, None]) * inv[:, None] * gamma + beta).astype(np.float32)
    cols = int(N) if write_cols is None else int(N) - int(N) % write_cols
    y.reshape(int(M), int(N))[:, :cols] = out[:, :cols]


class FakeModule:
    """Stands in for kernels.RawModule; ``code`` names the behaviour."""

    def __init__(self, code, options=(), name_expressions=None):
        if "syntax error" in code:
            raise kerr.CompileError("compile failed", log="x.cu(3): error: expected a ';'",
                                    diagnostics=[(3, "error", "expected a ';'")])
        self.code = code

    def get_function(self, name):
        code = self.code

        def launch(grid, block, args, shared_mem=0):
            x, g, b, y, M, N, eps = args
            if "oob" in code:
                raise kerr.OutOfBoundsError("global read out of bounds", kernel=name, line=7,
                                            source_line="    float v = row_in[col + 1];", block=(0, 0, 0),
                                            thread=(255, 0, 0))
            _layernorm_f32(x, g, b, y, M, N, eps, clamp="noclamp" not in code,
                           write_cols=256 if "skiptail" in code else None)
        return launch


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(kernels, "RawModule", FakeModule)


def lesson():
    return config.lesson("05_layernorm")


def test_correct_kernel_passes_every_family(fake):
    res = cases.run_item(lesson(), "code_normal", {"layernorm_src": "good"}, seed=1)
    assert res.passed, res.summary
    assert [f.family for f in res.families] == ["N 为 block 整数倍", "N 不是 block 整数倍"]
    assert all(f.max_error is not None and f.max_error < 1e-4 for f in res.families)


def test_unwritten_tail_is_reported_without_inputs(fake):
    res = cases.run_item(lesson(), "code_normal", {"layernorm_src": "skiptail"}, seed=3)
    assert not res.passed
    ok, bad = res.families
    assert ok.passed                       # N = 512 is a multiple of the block: nothing skipped
    assert not bad.passed and bad.error_kind == "unwritten"
    assert "「N 不是 block 整数倍」失败" in bad.reason and "未写入" in bad.reason
    assert "seed=3" in res.summary


def test_large_mean_family_reports_error_size(fake):
    item = dict(lesson()["items"]["code_boundary"])
    cfg = lesson()
    # tighten the tolerance so the float32 two-moment kernel must fail the large-mean family
    cfg["items"] = {"code_boundary": {**item, "cases": [dict(item["cases"][2], tol={"atol": 1e-3, "rtol": 0})]}}
    res = cases.run_item(cfg, "code_boundary", {"layernorm_src": "good"}, seed=5)
    (fam,) = res.families
    assert not fam.passed and fam.error_kind == "mismatch"
    assert fam.reason.startswith("边界族「大均值小方差」失败：最大误差")
    assert "超过容差 1.0e-03" in fam.reason


def test_kernel_diagnostic_becomes_chinese_message_quoting_line(fake):
    res = cases.run_item(lesson(), "code_normal", {"layernorm_src": "oob"}, seed=0)
    fam = res.families[0]
    assert fam.error_kind == "out_of_bounds"
    assert "越界访问" in fam.reason and "row_in[col + 1]" in fam.reason and "第 7 行" in fam.reason


def test_compile_error_fails_all_families_with_compiler_lines(fake):
    res = cases.run_item(lesson(), "code_boundary", {"layernorm_src": "syntax error"}, seed=0)
    assert not res.passed and len(res.families) == 3
    assert all("编译失败" in f.reason and "expected a ';'" in f.reason for f in res.families)


def test_same_seed_same_draws_different_seed_differs():
    ev1, ev2, ev3 = (cases.Evaluator(np.random.default_rng(s)) for s in (7, 7, 8))
    a = [ev1("randint(257, 2000)") for _ in range(5)]
    assert a == [ev2("randint(257, 2000)") for _ in range(5)]
    assert a != [ev3("randint(257, 2000)") for _ in range(5)]


def test_expressions_are_restricted():
    ev = cases.Evaluator(np.random.default_rng(0), {"M": 3, "N": 10})
    assert ev("(M, ceil_div(N, 4))") == (3, 3)
    assert ev("choice([1, 2])") in (1, 2)
    with pytest.raises(cases.ExprError):
        ev("__import__('os')")
    with pytest.raises(cases.ExprError):
        ev("M.__class__")


def test_arrays_dtypes_dists_and_set():
    ev = cases.Evaluator(np.random.default_rng(0), {"M": 3, "N": 5})
    x = cases.make_array({"shape": "(M, N)", "dtype": "float16", "dist": {"uniform": {"low": -1, "high": 1}},
                          "set": [{"index": "0, :", "value": "nan"}]}, ev)
    assert x.dtype == np.float16 and np.isnan(x[0]).all() and np.isfinite(x[1:]).all()
    m = cases.make_array({"shape": "(M, N)", "dtype": "uint8", "dist": {"bernoulli": {"p": 0.5}},
                          "set": [{"index": "1, :", "value": 0}]}, ev)
    assert set(np.unique(m)) <= {0, 1} and not m[1].any()
    b = cases.make_array({"shape": "(N,)", "dtype": "bfloat16", "dist": {"values": {"list": [1.0, 2.5, -3.0]}}}, ev)
    assert np.array_equal(cases.to_float64(b, "bfloat16"), [1.0, 2.5, -3.0, 1.0, 2.5])
    lin = cases.make_array({"shape": "(N,)", "dtype": "float32", "dist": {"linspace": {"start": 0, "stop": 1}}}, ev)
    assert lin[0] == 0 and lin[-1] == 1
    ex = cases.make_array({"shape": "(M, N)", "dtype": "float64",
                           "dist": {"normal": {"mean": -1.5, "std": 0.25, "exact": True}}}, ev)
    np.testing.assert_allclose(ex.mean(axis=1), -1.5, rtol=0, atol=1e-12)   # every row's own moments
    np.testing.assert_allclose(ex.std(axis=1), 0.25, rtol=1e-12, atol=0)
    one = cases.make_array({"shape": "(M, 1)", "dtype": "float64",
                            "dist": {"normal": {"mean": 0.0, "std": 1.0, "exact": True}}}, ev)
    assert np.isfinite(one).all() and one.std() > 0  # rows of one element: no std to match, left as drawn


def test_compare_nan_policy_and_tolerance():
    want = np.array([[1.0, 2.0], [np.nan, np.nan]])
    ok, *_ = cases.compare("y", np.array([[1.0, 2.0], [np.nan, np.nan]]), want, 1e-5, 0)
    assert ok
    ok, _, kind, msg = cases.compare("y", np.array([[1.0, 2.0], [0.0, 0.0]]), want, 1e-5, 0)
    assert not ok and kind == "nan" and "应为 NaN" in msg
    ok, err, kind, msg = cases.compare("y", np.array([[1.0, 2.5], [np.nan, np.nan]]), want, 1e-3, 0)
    assert not ok and kind == "mismatch" and abs(err - 0.5) < 1e-12 and "5.0e-01" in msg
    ok, *_ = cases.compare("y", np.array([[1.0, 2.5], [0.0, 0.0]]), want, 1e-3, 0, nan_policy="ignore")
    assert not ok  # finite mismatch still fails


def test_pipeline_and_kernel_choice_by_params(monkeypatch):
    """A two-stage pipeline sharing arrays, chosen by a `when` on K."""
    calls = []

    class TwoStage:
        def __init__(self, code, options=(), name_expressions=None):
            pass

        def get_function(self, name):
            def launch(grid, block, args, shared_mem=0):
                calls.append(name)
                if name == "row_max":
                    x, mx, M, K = args
                    mx[:] = x.reshape(int(M), int(K)).max(axis=1)
                elif name == "normalize":
                    x, mx, y, M, K = args
                    e = np.exp(x.reshape(int(M), int(K)) - mx[:, None])
                    y.reshape(int(M), int(K))[:] = e / e.sum(axis=1, keepdims=True)
                else:
                    x, y, M, K = args
                    x2 = x.reshape(int(M), int(K))
                    e = np.exp(x2 - x2.max(axis=1, keepdims=True))
                    y.reshape(int(M), int(K))[:] = e / e.sum(axis=1, keepdims=True)
            return launch

    monkeypatch.setattr(kernels, "RawModule", TwoStage)
    cfg = {
        "settings": {"checks": []},
        "sources": {"s": {"var": "SRC"}},
        "kernels": {
            "one": {"source": "s", "function": "fused", "grid": "(M,)", "block": "(32,)",
                    "args": ["x", "y", "int32(M)", "int32(K)"], "outputs": ["y"], "reference": "softmax"},
            "stage1": {"source": "s", "function": "row_max", "grid": "(M,)", "block": "(256,)",
                       "args": ["x", "mx", "int32(M)", "int32(K)"]},
            "stage2": {"source": "s", "function": "normalize", "grid": "(M,)", "block": "(256,)",
                       "args": ["x", "mx", "y", "int32(M)", "int32(K)"], "outputs": ["y"], "reference": "softmax"},
        },
        "arrays": {"x": {"shape": "(M, K)", "dtype": "float32", "dist": {"normal": {"mean": 0, "std": 3}}},
                   "mx": {"shape": "(M,)", "dtype": "float32", "fill": 0},
                   "y": {"shape": "(M, K)", "dtype": "float32", "fill": "nan"}},
        "items": {"code": {"points": 1, "kind": "cases", "cases": [
            {"family": "小 K", "kernel": [{"when": "K <= 32", "kernel": "one"}, {"kernel": ["stage1", "stage2"]}],
             "params": {"M": 3, "K": 20}, "tol": {"atol": 1e-5, "rtol": 1e-4}},
            {"family": "大 K", "kernel": [{"when": "K <= 32", "kernel": "one"}, {"kernel": ["stage1", "stage2"]}],
             "params": {"M": 3, "K": 3000}, "tol": {"atol": 1e-5, "rtol": 1e-4}}]}},
    }
    res = cases.run_item(cfg, "code", {"s": "src"}, seed=2)
    assert res.passed, res.summary
    assert calls == ["fused", "row_max", "normalize"]


# ----------------------------------------------------------------------------- real kernels

# The seed's lesson-5 kernel (the one copy in the repo), with its variance expression as a placeholder.
_SEED = Path(__file__).resolve().parents[1] / "kernels" / "cuda" / "layernorm_seed.cu"
LAYERNORM_CU = _SEED.read_text().replace("sq_sum / static_cast<float>(N) - mean * mean;", "VAR_EXPR;", 1)
assert "VAR_EXPR" in LAYERNORM_CU, "seed kernel's variance line not found"


def _real_backend_or_skip():
    """The runtime is part of the repository (CPU emulator, or cupy on a GPU): a backend that cannot launch or
    gives a wrong result must fail these tests, never skip them."""
    mod = kernels.RawModule(code='extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }')
    buf = kernels.asarray(np.zeros(4, np.float32))
    mod.get_function("k")((1,), (4,), (buf,))
    assert np.all(kernels.asnumpy(buf) == 1), f"kernels backend {kernels.backend()!r} gave {kernels.asnumpy(buf)}"


def test_real_layernorm_passes_normal_and_boundary():
    _real_backend_or_skip()
    src = LAYERNORM_CU.replace("VAR_EXPR", "sq_sum / static_cast<float>(N) - mean * mean")
    for item in ("code_normal", "code_boundary"):
        res = cases.run_item(lesson(), item, {"layernorm_src": src}, seed=11)
        assert res.passed, res.summary


def test_real_wrong_variance_fails_with_family_reason():
    _real_backend_or_skip()
    src = LAYERNORM_CU.replace("VAR_EXPR", "sq_sum / static_cast<float>(N)")   # forgot - mean^2
    res = cases.run_item(lesson(), "code_normal", {"layernorm_src": src}, seed=11)
    assert not res.passed
    assert "用例族「N 为 block 整数倍」失败：" in res.families[0].reason


def test_real_compile_error_is_explained():
    _real_backend_or_skip()
    src = LAYERNORM_CU.replace("VAR_EXPR", "sq_sum / N - mean * mean  ")  # compiles
    bad = src.replace("float sum = block_reduce_sum", "float sum = block_reduce_summ")
    res = cases.run_item(lesson(), "code_normal", {"layernorm_src": bad}, seed=0)
    assert not res.passed and all("编译失败" in f.reason for f in res.families)


def test_references_sanity():
    x = np.array([[10000.0, 10001.0]])
    y = references.layernorm(x, np.ones(2), np.zeros(2), 0.0)
    assert np.allclose(y, [[-1.0, 1.0]])
    s = references.softmax(np.array([[1.0, 2.0, np.nan], [1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]),
                           mask=np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]]))
    assert np.isnan(s[0]).all() and (s[1] == 0).all() and np.allclose(s[2], 1 / 3)
    o = references.online_softmax(np.random.default_rng(0).normal(size=(3, 100)))
    assert np.allclose(o["y"], references.softmax(np.random.default_rng(0).normal(size=(3, 100))))
    assert np.allclose(o["row_sum"], references.softmax_stats(np.random.default_rng(0).normal(size=(3, 100)))["row_sum"])
    r = references.rmsnorm(np.array([[3.0, 4.0]]), np.ones(2), 0.0)
    assert np.allclose(r, [[3 / np.sqrt(12.5), 4 / np.sqrt(12.5)]])


def test_explain_every_kernel_error_kind_in_chinese_with_line():
    from autograder import messages
    kinds = [kerr.ArgumentError, kerr.KernelNotFoundError, kerr.LaunchError, kerr.DeadlockError,
             kerr.ShuffleMaskError, kerr.OutOfBoundsError, kerr.RaceError, kerr.KernelTimeout,
             kerr.DeviceAssertError]
    for cls in kinds:
        exc = cls("boom", kernel="k", line=12, source_line="  __syncthreads();", block=(1, 0, 0), thread=(3, 0, 0))
        text = messages.explain(exc)
        assert "第 12 行" in text and "__syncthreads();" in text and "建议" in text, (cls, text)
        assert any("\u4e00" <= ch <= "\u9fff" for ch in text.splitlines()[0])
        assert "__syncthreads();" in messages.short(exc)
    assert "断言失败" in messages.explain(AssertionError("x"))
    ce = kerr.CompileError("failed", log="a.cu(5): error: identifier \"foo\" is undefined")
    assert "编译失败" in messages.explain(ce) and "foo" in messages.explain(ce)


def test_view_arguments_stay_views_of_their_array_through_the_plan():
    """``args: ["y[oy:]", "x[ox:]"]``: the plan keeps an offset into the case array (not a copy), so what the
    kernel writes through the view lands in the array the reference is compared with, also in the sandbox."""
    host = {"x": np.arange(10, dtype=np.float32), "y": np.zeros(10, np.float32)}
    kind, value = cases._arg(host["y"][3:], host, "y[oy:]")
    assert (kind, value) == ("view", ("y", 3, (7,)))
    dev = {k: v.copy() for k, v in host.items()}
    view = cases.launch_arg(dev, kind, value)
    view[:] = 1.0
    assert dev["y"][:3].tolist() == [0, 0, 0] and dev["y"][3:].tolist() == [1] * 7
    assert cases._arg(np.float32(2.5), host, "eps") == ("scalar", np.float32(2.5))
    with pytest.raises(cases.ExprError):
        cases._arg(np.zeros(3, np.float32), host, "zeros(3)")
    with pytest.raises(cases.ExprError):
        cases._arg(host["x"][::2], host, "x[::2]")
