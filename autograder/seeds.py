"""Seeds of the hidden cases: fixed per (course, lesson, student), unpredictable to students.

A course keeps a random salt in ``<course>/.autograder/seed_salt`` (created on first use, readable by the
instructor only). A student's seed is derived from it, so a regrade or a resumed batch draws the same cases,
``nbgrader autograde`` and ``autograder grade`` agree without being told a seed, and no student can compute
another's cases. ``--seed`` (or ``c.JudgeVerdict.seed``) overrides it for everyone.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path


def salt(course_root) -> bytes:
    p = Path(course_root) / ".autograder" / "seed_salt"
    try:
        return p.read_bytes().strip()
    except FileNotFoundError:
        p.parent.mkdir(parents=True, exist_ok=True)
        value = secrets.token_hex(16).encode()
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:          # another grader process made it first
            return p.read_bytes().strip()
        try:
            os.write(fd, value)
        finally:
            os.close(fd)
        return value
    except OSError:
        return b""


def course_seed(course_root, lesson: str, student: str) -> int:
    h = hashlib.sha256(salt(course_root) + b"\0" + lesson.encode() + b"\0" + student.encode()).digest()
    return int.from_bytes(h[:4], "big") % (2**31 - 1)
