"""The held-out batch: repositories added only after the fixes, never tuned on."""
from . import Corpus


def corpus() -> Corpus:
    c = Corpus("heldout")
    return c
