"""The one exception hierarchy of the CUDA runtime.

Every diagnostic the runtime produces (on either backend) is a ``KernelError``.
Each carries, where known, the kernel name, the source line (1-based, in the
user's own CUDA source), the line's text, and the block / thread indices as
``(x, y, z)`` tuples.  Messages are English; the autograder layer adds
student-facing Chinese explanations (``autograder.messages``).
"""
from __future__ import annotations

from typing import Optional, Tuple

Dim3 = Tuple[int, int, int]


class KernelError(Exception):
    """Base class of every runtime diagnostic."""

    kind = "error"

    def __init__(self, message: str, *, kernel: Optional[str] = None,
                 line: Optional[int] = None, source_line: Optional[str] = None,
                 block: Optional[Dim3] = None, thread: Optional[Dim3] = None,
                 details: Optional[str] = None, line2: Optional[int] = None):
        self.message = message
        self.kernel = kernel
        self.line = line
        self.line2 = line2          # the other source line of a two-sided finding (barrier lines, race)
        self.source_line = source_line
        self.block = tuple(block) if block is not None else None
        self.thread = tuple(thread) if thread is not None else None
        self.details = details
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.kernel:
            where.append(f"kernel {self.kernel}")
        if self.line:
            where.append(f"line {self.line}")
        if self.block is not None:
            where.append("block (%d, %d, %d)" % self.block)
        if self.thread is not None:
            where.append("thread (%d, %d, %d)" % self.thread)
        text = self.message
        if where:
            text = f"{text} [{', '.join(where)}]"
        if self.source_line:
            text += f"\n    {self.line}: {self.source_line.rstrip()}"
        if self.details:
            text += "\n" + self.details
        return text

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "kernel": self.kernel,
                "line": self.line, "line2": self.line2, "source_line": self.source_line,
                "block": self.block, "thread": self.thread, "details": self.details}


class CompileError(KernelError):
    """NVRTC (front end) or the host compiler rejected the source.

    ``diagnostics`` is a list of ``(line, severity, text)`` against the user's
    source; ``log`` is the full compiler log.
    """

    kind = "compile"

    def __init__(self, message: str, *, log: str = "", diagnostics=None, **kw):
        self.log = log
        self.diagnostics = list(diagnostics or [])
        super().__init__(message, **kw)


class ArgumentError(KernelError, TypeError):
    """Launch arguments do not match the kernel's parameters (checked before launch)."""

    kind = "argument"

    def __init__(self, message: str, *, param: Optional[str] = None, index: Optional[int] = None, **kw):
        self.param = param
        self.index = index
        super().__init__(message, **kw)


class KernelNotFoundError(KernelError, LookupError):
    """``get_function(name)`` names no callable kernel of the module."""

    kind = "not_found"


class LaunchError(KernelError):
    """Bad launch configuration (grid/block/shared memory out of CUDA's limits)."""

    kind = "launch"


class DeadlockError(KernelError):
    """No thread of a block can make progress (a barrier or warp operation waits for threads that wait
    elsewhere): the GPU would hang."""

    kind = "deadlock"


class SyncCheckError(DeadlockError):
    """What compute-sanitizer's synccheck reports (``kernels.check("synccheck")``): a block's threads reached
    ``__syncthreads()`` at different source lines. The GPU runs it (both are barrier 0); CUDA forbids it.
    ``line`` and ``line2`` are the two lines."""

    kind = "deadlock"


class UnsupportedFeatureError(KernelError):
    """The kernel uses a construct the CPU emulator does not implement (inline PTX, tensor cores, textures,
    a grid-wide barrier across blocks, ...). It runs on a GPU; the message names the construct and the line.
    Other kernels of the same module are not affected."""

    kind = "unsupported"


class ShuffleMaskError(KernelError):
    """A warp intrinsic's mask names a lane that exited or does not take part."""

    kind = "shuffle_mask"


class OutOfBoundsError(KernelError):
    """Out-of-bounds or misaligned access to global or shared memory."""

    kind = "out_of_bounds"


class RaceError(KernelError):
    """A data race: results depend on the order in which threads run."""

    kind = "race"


class KernelTimeout(KernelError):
    """The kernel did not finish within the time limit (``KERNELS_TIMEOUT``)."""

    kind = "timeout"


class DeviceAssertError(KernelError):
    """A device-side ``assert``/``__trap`` fired."""

    kind = "device_assert"


__all__ = ["KernelError", "CompileError", "ArgumentError", "KernelNotFoundError", "LaunchError", "DeadlockError",
           "SyncCheckError", "ShuffleMaskError", "OutOfBoundsError", "RaceError", "KernelTimeout",
           "DeviceAssertError", "UnsupportedFeatureError"]
