"""ClearCudaSolutions: nbgrader's ClearSolutions, taught CUDA solution markers.

Lesson notebooks keep CUDA source in Python raw strings.  nbgrader's stock
ClearSolutions treats any line containing ``BEGIN SOLUTION`` as a Python region
and writes ``raise NotImplementedError()`` into the CUDA string (nbgrader issues
#432, #1074); a solution cell with no region left is replaced whole by the stub.
So the CUDA markers are rewritten first, here, and whatever remains (Python
``### BEGIN SOLUTION`` regions, markdown answers, whole solution cells) goes
through the stock machinery unchanged:

* inline ``/*BEGIN SOLUTION*/ expr /*END SOLUTION*/`` -> ``______`` (plus a
  trailing ``// TODO`` comment when the line has none);
* line regions ``// BEGIN SOLUTION [text]`` ... ``// END SOLUTION`` ->
  ``// TODO: text`` followed by ``______;`` at the region's indentation.

It replaces ClearSolutions in ``GenerateAssignment.preprocessors`` through
nbgrader config (see ``autograder.nbgrader_ext.config``); it is a subclass so
every ``ClearSolutions.*`` option keeps applying.
"""
from __future__ import annotations

from typing import Tuple

from nbgrader.preprocessors import ClearSolutions
from traitlets import Unicode

from .. import markers

BLANK = markers.BLANK


class ClearCudaSolutions(ClearSolutions):
    """Clear CUDA solution markers inside code cells, then defer to ClearSolutions."""

    cuda_todo_text = Unicode(
        markers.DEFAULT_TODO,
        help="Text of the '// TODO: ...' line that replaces a '// BEGIN SOLUTION' region "
             "when the marker line carries no text of its own.",
    ).tag(config=True)

    def _clear_cuda(self, source: str) -> Tuple[str, bool]:
        """Return (new source, whether any CUDA marker was replaced); see ``autograder.markers.blank_cuda``."""
        try:
            return markers.blank_cuda(source, self.cuda_todo_text)
        except markers.MarkerError as exc:
            raise RuntimeError(str(exc)) from None

    def _replace_solution_region(self, cell, language: str) -> bool:
        cuda_replaced = False
        if cell.cell_type == "code":
            try:
                cell.source, cuda_replaced = self._clear_cuda(cell.source)
            except RuntimeError:
                self.log.error("Bad CUDA solution markers. Cell contents are: \n%s", cell.source)
                raise
        # Remaining regions (Python '### BEGIN SOLUTION', markdown answers) are
        # nbgrader's; a CUDA replacement counts as a region so the cell is kept.
        stock_replaced = super()._replace_solution_region(cell, language)
        return cuda_replaced or stock_replaced
