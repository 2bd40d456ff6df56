"""``nbgrader export`` with the verdict: the stock CSV columns plus ``passed``, ``vetoes``, ``needs_review``.

Enabled by the course config (``c.ExportApp.plugin_class``); the extra columns come from the verdict table
``autograder.gradebook`` keeps next to nbgrader's, so a vetoed student shows ``passed = no`` with the veto
ids even though nbgrader's own score is the sum of the item scores.
"""
from __future__ import annotations

import csv
import io

from nbgrader.plugins.export import CsvExportPlugin


class VerdictCsvExport(CsvExportPlugin):
    """CsvExportPlugin, then one verdict per (assignment, student) joined onto each row."""

    def export(self, gradebook) -> None:
        from ..gradebook import load_verdicts
        dest = self.to or "grades.csv"
        super().export(gradebook)
        url = gradebook.engine.url.render_as_string(hide_password=False)
        verdicts = load_verdicts(url)
        by_student = {}
        for (assignment, _nb, student), v in verdicts.items():
            by_student.setdefault((assignment, student), []).append(v)
        with open(dest, encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        out = io.StringIO()
        fields = list(rows[0].keys()) if rows else []
        w = csv.DictWriter(out, fieldnames=fields + ["passed", "vetoes", "needs_review"], lineterminator="\n")
        w.writeheader()
        for r in rows:
            vs = by_student.get((r["assignment"], r["student_id"]), [])
            # nbgrader's raw score already has the instructor's overrides in it; the rule is pass_rule's
            clean = all(not v.vetoes and not v.errors for v in vs)
            enough = float(r.get("raw_score") or 0) >= sum(v.pass_score for v in vs)
            r["passed"] = ("yes" if clean and enough else "no") if vs else ""
            r["vetoes"] = ";".join(x.id for v in vs for x in v.vetoes)
            r["needs_review"] = ";".join(i for v in vs for i in v.needs_review)
            w.writerow(r)
        with open(dest, "w", encoding="utf-8", newline="") as fh:
            fh.write(out.getvalue())
