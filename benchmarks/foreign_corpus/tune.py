"""The tuning batch: the repositories the emulator's issue-21 fixes were developed against."""
from . import Corpus, llmc, samples, sgemm


def corpus() -> Corpus:
    c = Corpus("tune")
    llmc.add(c)
    samples.add(c)
    sgemm.add(c)
    return c
