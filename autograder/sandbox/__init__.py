"""A sandbox per submission: bubblewrap namespaces plus resource limits.

Everything a submission can influence runs through :func:`run`: the learner's CUDA compiled and launched
on hidden cases (``autograder.judge.runner``) and the notebook executed for feedback
(``autograder.execute``). Inside, the process sees

* a private writable directory (``/sandbox``, the only writable path besides a small ``/tmp``) holding that
  submission's files alone;
* read-only: the system (``/usr``, ``/etc``, ...), the Python environment and the ``autograder`` and
  ``kernels`` packages; nothing else of the host: no solutions, no rubric file, no gradebook, no course
  directory, no other submission, no home directory;
* no network (its own empty network namespace: loopback only), its own PID namespace (nothing it starts
  outlives it), its own IPC/UTS namespaces, no capabilities, a new session (no terminal injection);
* a separate user: a distinct unprivileged uid per concurrent slot when the grader runs as root, else a user
  namespace;
* limits: wall-clock time, CPU time, memory (resident set of the whole sandbox, watched from outside;
  address space too where the process allows it), processes (per uid), file size, open files, captured
  output.

Where bubblewrap is missing or cannot create namespaces (a student laptop), ``mode="auto"`` runs the command
with the rlimits alone and the outcome says ``sandboxed=False``; ``mode="require"`` (instructor grading)
raises :class:`SandboxUnavailable` instead. ``tests/autograder/test_sandbox.py`` and ``tests/hostile/``
hold the proofs.
"""
from __future__ import annotations

from .core import (MODES, Limits, Outcome, SandboxUnavailable, available, run, unavailable_reason,
                   will_isolate)

__all__ = ["Limits", "Outcome", "SandboxUnavailable", "available", "run", "unavailable_reason", "will_isolate",
           "MODES"]
