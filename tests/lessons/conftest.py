"""Fixtures of the lesson proofs: the CPU emulator backend, and each lesson's released notebook."""
import pytest

from autograder import config

import proof


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


@pytest.fixture(scope="session")
def released():
    """released(spec) -> the lesson's notebook in lessons/. tests/autograder/test_generate.py proves lessons/ is
    exactly what nbgrader generate_assignment releases, so the proofs read it instead of generating it again."""

    def get(spec: proof.Lesson):
        return proof.ROOT / "lessons" / config.lesson(spec.id)["notebook"]

    return get
