"""Per-launch memory counters (lesson 3: coalescing and shared-memory transposes).

    with kernels.memory_counters() as rec:
        f(grid, block, args)
    c = rec.last                        # LaunchCounters, or None on the cupy backend
    c.global_load.sectors_per_request   # ncu: l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio
    c.shared_load.bank_conflicts        # ncu: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    c.as_ncu()                          # {ncu metric name: value}

On the CPU emulator every launch inside the block runs its warps' lanes in lockstep (an instrumented build:
several times slower) so that lanes executing one memory instruction together form one warp-level
request, as Nsight Compute counts them. Requests, global 32-byte sectors and shared-memory wavefronts
(32 banks of 4 bytes; 8- and 16-byte accesses in phases of 16 and 8 lanes) are counted over the whole launch.
The outputs are the same as a plain launch. On cupy nothing is recorded (``rec.available`` is False) and
the kernels run as usual: use ``ncu --metrics`` with the names ``as_ncu()`` gives.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

_local = threading.local()


@dataclass(frozen=True)
class GlobalAccess:
    requests: int
    sectors: int

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class SharedAccess:
    requests: int
    wavefronts: int
    ideal_wavefronts: int      # the fewest the requests could take (1 per request of <= 4-byte accesses)

    @property
    def bank_conflicts(self) -> int:
        return self.wavefronts - self.ideal_wavefronts

    @property
    def wavefronts_per_request(self) -> float:
        return self.wavefronts / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class LaunchCounters:
    kernel: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    global_load: GlobalAccess
    global_store: GlobalAccess
    shared_load: SharedAccess
    shared_store: SharedAccess

    def as_ncu(self) -> Dict[str, float]:
        """The same numbers under the names of Nsight Compute's metrics."""
        return {
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": self.global_load.requests,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": self.global_load.sectors,
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": self.global_store.requests,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": self.global_store.sectors,
            "smsp__inst_executed_op_shared_ld.sum": self.shared_load.requests,
            "smsp__inst_executed_op_shared_st.sum": self.shared_store.requests,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": self.shared_load.wavefronts,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": self.shared_store.wavefronts,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": self.shared_load.bank_conflicts,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": self.shared_store.bank_conflicts,
        }


class MemoryCounters:
    """What ``memory_counters()`` yields: the launches made inside the block, in order."""

    def __init__(self, available: bool):
        self.available = available
        self.launches: List[LaunchCounters] = []

    @property
    def last(self) -> Optional[LaunchCounters]:
        return self.launches[-1] if self.launches else None

    def _add(self, kernel: str, grid, block, raw) -> None:   # raw: kernels.cpu.module.Counters
        self.launches.append(LaunchCounters(
            kernel=kernel, grid=tuple(grid), block=tuple(block),
            global_load=GlobalAccess(raw.gld_requests, raw.gld_sectors),
            global_store=GlobalAccess(raw.gst_requests, raw.gst_sectors),
            shared_load=SharedAccess(raw.sld_requests, raw.sld_wavefronts, raw.sld_ideal),
            shared_store=SharedAccess(raw.sst_requests, raw.sst_wavefronts, raw.sst_ideal)))


def current() -> Optional[MemoryCounters]:
    """The innermost active recorder of this thread (None outside ``memory_counters()``)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def memory_counters() -> Iterator[MemoryCounters]:
    """Record the memory counters of every launch in the block (CPU emulator; on cupy: nothing)."""
    from . import _config
    rec = MemoryCounters(available=_config.backend() == "cpu")
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    if rec.available:
        stack.append(rec)
    try:
        yield rec
    finally:
        if rec.available:
            stack.pop()


__all__ = ["memory_counters", "MemoryCounters", "LaunchCounters", "GlobalAccess", "SharedAccess", "current"]
