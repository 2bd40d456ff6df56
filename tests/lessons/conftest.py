"""Fixtures of the lesson proofs: the CPU emulator backend, and each lesson's released
notebook built once per session (shared by the blank/leak proof and the graded run)."""
import pytest

from autograder import generate

import proof


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    monkeypatch.setenv("KERNELS_BACKEND", "cpu")


@pytest.fixture(scope="session")
def released(tmp_path_factory):
    """released(spec) -> path of the notebook nbgrader generate_assignment releases for ``spec``."""
    built = {}

    def get(spec: proof.Lesson):
        if spec.id not in built:
            built[spec.id] = generate.build_course(tmp_path_factory.mktemp(f"course_{spec.id}"), spec.solution)
        return built[spec.id]

    return get
