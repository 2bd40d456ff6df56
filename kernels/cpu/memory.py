"""Launch arguments as allocations: what memcheck and racecheck copy.

A kernel sees pointers, not arrays.  Two arguments can point into the same allocation
(``f(x, x)`` for an in-place op, ``x[1:]`` and ``x[:-1]``), and a view can start at any
address (``x[1:]`` is 4 bytes past a 16-byte boundary, so a ``float4`` load through it is
misaligned on a GPU).  The checked runs work on copies; copying each argument on its own
would turn an in-place kernel into an out-of-place one and realign every view.  So the
copies are made per allocation: every array argument belongs to the allocation that owns
its memory (the numpy array at the end of its ``.base`` chain, merged with any other
allocation it overlaps), each allocation is copied once at the same address modulo
``ALIGN``, and each argument becomes the same offset into its copy.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np

# Copies keep an allocation's address modulo this (cudaMalloc returns 256-byte aligned memory;
# the widest CUDA vector access needs 16): a view misaligned for float4 stays misaligned.
ALIGN = 256

try:                                  # numpy >= 2.0
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:                   # pragma: no cover - numpy 1.x
    _byte_bounds = np.byte_bounds


def _owner(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@dataclass
class Allocation:
    lo: int                           # first byte (address in this process)
    hi: int                           # one past the last byte
    writeable: bool
    members: List[int] = field(default_factory=list)   # argument indices

    @property
    def nbytes(self) -> int:
        return self.hi - self.lo

    @property
    def pad(self) -> int:             # lo modulo ALIGN, kept by every copy
        return self.lo % ALIGN

    def read(self) -> bytes:
        return ctypes.string_at(self.lo, self.nbytes) if self.nbytes else b""

    def write(self, data: bytes) -> None:
        if self.writeable and self.nbytes:
            ctypes.memmove(self.lo, data, self.nbytes)


def allocations(args: Sequence) -> List[Allocation]:
    """The allocations behind the array arguments, in order of first use."""
    spans = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            o = _owner(a)
            lo, hi = _byte_bounds(o)
            spans.append((int(lo), int(hi), bool(o.flags.writeable), i))
    out: List[Allocation] = []
    for lo, hi, w, i in spans:
        hits = [al for al in out if lo < al.hi and al.lo < hi or (lo == hi == al.lo)]
        if not hits:
            out.append(Allocation(lo, hi, w, [i]))
            continue
        keep = hits[0]
        for al in hits[1:]:           # an argument that bridges two allocations merges them
            keep.members += al.members
            keep.lo, keep.hi, keep.writeable = min(keep.lo, al.lo), max(keep.hi, al.hi), keep.writeable and al.writeable
            out.remove(al)
        keep.lo, keep.hi = min(keep.lo, lo), max(keep.hi, hi)
        keep.writeable = keep.writeable and w
        keep.members.append(i)
    for al in out:
        al.members.sort()
    return out


def owner_of(allocs: Sequence[Allocation], i: int) -> Optional[int]:
    return next((k for k, al in enumerate(allocs) if i in al.members), None)


def offset_of(allocs: Sequence[Allocation], args: Sequence, i: int) -> int:
    al = allocs[owner_of(allocs, i)]
    return int(args[i].ctypes.data) - al.lo


def _aligned_buffer(nbytes: int, pad: int) -> np.ndarray:
    """A uint8 buffer of ``nbytes`` whose address is ``pad`` modulo ALIGN.

    It is its own allocation as far as ``allocations`` can tell (its ``.base`` is a memoryview, not
    the larger array it is cut from), so a copy handed to memcheck is checked at its exact size."""
    raw = np.empty(nbytes + 2 * ALIGN, np.uint8)
    shift = (pad - raw.ctypes.data) % ALIGN
    return np.frombuffer(raw.data[shift:shift + nbytes], np.uint8)


def clone(args: Sequence, allocs: Optional[Sequence[Allocation]] = None):
    """Fresh copies of the arguments that keep their aliasing and alignment.

    Returns ``(copied_args, buffers)``: scalars are passed through; array arguments are views
    into one uint8 buffer per allocation (``buffers``, same order as ``allocs``)."""
    allocs = allocations(args) if allocs is None else allocs
    buffers = []
    out = list(args)
    for al in allocs:
        buf = _aligned_buffer(al.nbytes, al.pad)
        if al.nbytes:
            buf[:] = np.frombuffer(al.read(), np.uint8)
        buffers.append(buf)
        for i in al.members:
            a = args[i]
            off = int(a.ctypes.data) - al.lo
            view = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
            if not a.flags.writeable:
                view.flags.writeable = False
            out[i] = view
    return out, buffers


__all__ = ["ALIGN", "Allocation", "allocations", "clone", "owner_of", "offset_of"]
