"""Held-out attacks: written after the corpus in ``corpus.py`` passed, and not tuned on. They are graded in
the same batch and reported apart; a failure here is a finding, not a test to make pass by special-casing."""
from __future__ import annotations

from typing import List

from nbformat.v4 import new_code_cell, new_raw_cell

from .corpus import GOOD, WRONG, Entry, _answers, _gid, _wrong, reference_answers, student

HOMOGLYPH = "fmaxf"


def _src(edit, fill=WRONG):
    def build():
        nb = student(fill)
        for c in nb.cells:
            if _gid(c) == "layernorm_src":
                c.source = edit(c.source)
        return nb
    return build


def heldout() -> List[Entry]:
    a = reference_answers()
    return [
        Entry("h01_constructor", "__attribute__((constructor)) code that runs when the build is loaded",
              _src(lambda s: s.replace("template", "__attribute__((constructor)) static void grab() { volatile int* p = 0; }\ntemplate", 1)),
              _wrong),
        Entry("h02_include_solution", "#include of the instructor's solution and /etc/shadow",
              _src(lambda s: '#include "/etc/shadow"\n#include "../../solutions/05_layernorm.ipynb"\n' + s), _wrong),
        Entry("h03_bash_magic", "!curl and %%bash cells", lambda: student(WRONG, extra=[
            "!curl -m 3 http://1.1.1.1/ || true", "%%bash\nls -la / /work /root 2>&1 | head -50\ncat /etc/hostname\n"]), _wrong),
        Entry("h04_answer_as_raw_and_code", "answers moved into raw and code cells with copied metadata",
              lambda: _moved(student(GOOD)), lambda: student(GOOD)),
        Entry("h05_unicode_confusable", "fmaxf replaced by a look-alike identifier defined to do nothing",
              _src(lambda s: s.replace("fmaxf(var, 0.0f)", "fmаxf(var, 0.0f)").replace(
                  "template", "__device__ float fmаxf(float a, float) { return a; }\ntemplate", 1)), _wrong),
        Entry("h06_kernel_reads_env", "the kernel overruns its row to find the reference outputs in memory",
              _src(lambda s: s.replace(f"float var = {WRONG};", f"float var = {GOOD}; for (int k = 1; k < 1 << 20; k += 4096) sum += input[(size_t)M * N + k];")),
              lambda: student(GOOD)),
        Entry("h07_python_rewrites_source_at_runtime", "a cell that rewrites LAYERNORM_CU after the source cell, and the lessons/ file",
              lambda: student(WRONG, extra=["LAYERNORM_CU = LAYERNORM_CU.replace('sq_sum / static_cast<float>(N);', 'sq_sum / static_cast<float>(N) - mean * mean;')",
                                            "import glob\nfor p in glob.glob('/**/05_layernorm.ipynb', recursive=True):\n    try: open(p, 'a').write(' ')\n    except Exception: pass"],
                              where="after_source"), _wrong),
        Entry("h08_hidden_answer_in_attachment", "the reference answer in a markdown attachment and an image alt text",
              lambda: _alt(student(GOOD, {g: "不知道。" for g in a})), lambda: student(GOOD, {g: "不知道。" for g in a})),
    ]


def _moved(nb):
    import copy
    out = []
    for c in nb.cells:
        if _gid(c) in ("q1", "q2"):
            r = new_raw_cell(c.source) if _gid(c) == "q1" else new_code_cell("'''" + c.source + "'''")
            r.metadata = copy.deepcopy(c.metadata)
            out.append(r)
        else:
            out.append(c)
    nb.cells = out
    return nb


def _alt(nb):
    import base64
    ans = reference_answers()
    for c in nb.cells:
        if _gid(c) in ans:
            c.source += f"\n\n![{ans[_gid(c)]}](attachment:a.png)"
            c["attachments"] = {"a.png": {"text/plain": base64.b64encode(ans[_gid(c)].encode()).decode()}}
    return nb
