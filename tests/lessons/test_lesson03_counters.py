"""Lesson 3 prints the emulator's memory counters for its own kernels and explains them with a
hand count (cell demo_hand_count): the counters must give exactly those numbers, or the lesson
teaches a wrong profile. Runs the solution's kernels (128 x 128; head_permute at HS 64, 8, 1)
under kernels.memory_counters(); skipped where the runtime has no counters."""
import numpy as np
import pytest

import kernels
from autograder import notebook as nbio

import proof

pytestmark = pytest.mark.skipif(not hasattr(kernels, "memory_counters"),
                                reason="kernels runtime without memory_counters()")

N = 128


@pytest.fixture(scope="module")
def counted():
    if kernels.backend() != "cpu":
        pytest.skip("counters are recorded on the CPU emulator only (ncu on a GPU)")
    cell = nbio.cells_by_grade_id(nbio.read(proof.ROOT / "solutions" / "03_transpose.ipynb"))["transpose_src"]
    src = nbio.python_string_var(nbio._fill(cell.source), "TRANSPOSE_CU")
    mod = kernels.RawModule(code=src, options=("-std=c++17",),
                            name_expressions=["transpose_tiled<0>", "transpose_tiled<1>"])
    x = kernels.asarray(np.random.default_rng(0).standard_normal((N, N)).astype(np.float32))
    out = {}
    with kernels.memory_counters() as rec:
        for name in ("transpose_naive", "transpose_tiled<0>", "transpose_tiled<1>"):
            y = kernels.asarray(np.full((N, N), np.nan, np.float32))
            mod.get_function(name)((N // 32, N // 32, 1), (32, 8), (y, x, np.int32(N), np.int32(N)))
            assert np.array_equal(kernels.asnumpy(y), kernels.asnumpy(x).T)   # counting changes no result
            out[name] = rec.last
        B, T, NH = 1, 32, 4
        for hs in (64, 8, 1):
            qkv = kernels.asarray(np.arange(B * T * 3 * NH * hs, dtype=np.float32))
            qkv_out = [kernels.asarray(np.zeros(B * NH * T * hs, np.float32)) for _ in range(3)]
            total = B * NH * T * hs
            mod.get_function("head_permute")((-(-total // 256),), (256,),
                                             (*qkv_out, qkv, np.int32(B), np.int32(T), np.int32(NH), np.int32(hs)))
            out[f"permute{hs}"] = rec.last
    assert rec.available
    return out


def test_naive_transpose_reads_coalesced_and_writes_32_sectors_per_request(counted):
    c = counted["transpose_naive"]
    assert c.global_load.requests == c.global_store.requests == N * N // 32
    assert c.global_load.sectors_per_request == 4.0
    assert c.global_store.sectors_per_request == 32.0


@pytest.mark.parametrize("name", ["transpose_tiled<0>", "transpose_tiled<1>"])
def test_tiled_transposes_are_coalesced_both_ways(counted, name):
    c = counted[name]
    assert c.global_load.requests == c.global_store.requests == N * N // 32
    assert c.global_load.sectors_per_request == c.global_store.sectors_per_request == 4.0
    assert c.shared_load.requests == c.shared_store.requests == N * N // 32
    assert c.shared_store.bank_conflicts == 0                       # row writes


def test_unpadded_tile_column_reads_conflict_32_ways_padded_none(counted):
    c0, c1 = counted["transpose_tiled<0>"].shared_load, counted["transpose_tiled<1>"].shared_load
    assert c0.bank_conflicts == 31 * c0.requests
    assert c1.bank_conflicts == 0


@pytest.mark.parametrize("hs, load_spr", [(64, 4.0), (8, 4.0), (1, 32.0)])
def test_head_permute_is_coalesced_while_hs_fills_a_sector(counted, hs, load_spr):
    c = counted[f"permute{hs}"]
    assert c.global_store.sectors_per_request == 4.0
    assert c.global_load.sectors_per_request == load_spr
