"""The kernel's side of the course's JupyterLab extension (``autograder/labextension``).

* ``autograder.snapshot`` (frontend -> kernel): right before a cell calling ``L.check`` /
  ``L.self_check`` is sent, the extension sends the notebook's cells as they are ON SCREEN
  (saved or not). Messages are handled in order on the shell channel, so the snapshot is
  here when that cell runs; ``snapshot()`` returns it only for the cell now running.
* ``autograder.frontend`` (kernel -> frontend): append an output to a cell (hint-usage
  records, so the saved notebook carries them) or save the notebook.

Without the extension (VS Code, classic Notebook, nbclient) every function degrades to
"unknown": callers read the saved file and say so.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

SNAPSHOT_TARGET = "autograder.snapshot"
FRONTEND_TARGET = "autograder.frontend"

_state: Dict[str, Any] = {"snapshot": None, "seen_extension": False}


def _ipython():
    try:
        from IPython import get_ipython
        return get_ipython()
    except Exception:
        return None


def _on_snapshot(comm, msg) -> None:
    data = ((msg or {}).get("content") or {}).get("data") or {}
    if isinstance(data, dict) and isinstance(data.get("cells"), list):
        data["received"] = time.time()
        _state["snapshot"] = data
        _state["seen_extension"] = True


def install(ip=None) -> None:
    """Register the snapshot comm target in this kernel (idempotent; no-op outside ipykernel)."""
    ip = ip or _ipython()
    kernel = getattr(ip, "kernel", None)
    if kernel is None or getattr(kernel, "_autograder_frontend", False):
        return
    try:
        from comm import get_comm_manager
        get_comm_manager().register_target(SNAPSHOT_TARGET, _on_snapshot)
    except Exception:
        manager = getattr(kernel, "comm_manager", None)
        if manager is None:
            return
        manager.register_target(SNAPSHOT_TARGET, _on_snapshot)
    kernel._autograder_frontend = True


def current_cell_id() -> Optional[str]:
    """The JupyterLab cell id of the execution now running (JupyterLab sends it as ``cellId``)."""
    ip = _ipython()
    kernel = getattr(ip, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent("shell")
    except TypeError:
        parent = kernel.get_parent()
    except Exception:
        parent = getattr(ip, "parent_header", None) or {}
    return ((parent or {}).get("metadata") or {}).get("cellId")


def snapshot() -> Optional[Dict[str, Any]]:
    """The on-screen notebook sent for the cell now running, else None."""
    snap = _state.get("snapshot")
    if not snap:
        return None
    cid = current_cell_id()
    if cid is not None and snap.get("cell_id") != cid:
        return None
    return snap


def extension_seen() -> bool:
    return bool(_state.get("seen_extension"))


def screen_cells(snap: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """``{grade_id: cell}`` of a snapshot."""
    return {c["grade_id"]: c for c in snap.get("cells") or [] if c.get("grade_id")}


def _send(data: Dict[str, Any]) -> bool:
    """Open-and-close a comm carrying ``data``; a front end without the extension ignores it."""
    if getattr(_ipython(), "kernel", None) is None:
        return False
    try:
        from comm import create_comm
        c = create_comm(target_name=FRONTEND_TARGET, data=data)
        c.close()
        return True
    except Exception:
        return False


def append_output(cell_id: Optional[str], output: Dict[str, Any]) -> bool:
    """Ask the extension to append ``output`` (an nbformat output dict) to cell ``cell_id``."""
    if not cell_id:
        return False
    return _send({"action": "append_output", "cell_id": cell_id, "output": output})


def request_save() -> bool:
    return _send({"action": "save"})


__all__ = ["install", "snapshot", "screen_cells", "current_cell_id", "append_output", "request_save",
           "extension_seen"]
