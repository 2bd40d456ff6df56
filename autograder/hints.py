"""The 4-level hint ladder (概念区域 → 具体方向 → 关键局部 → 完整答案) and usage records.

Usage is recorded twice so neither can be lost quietly: a sidecar file
``.hints/<notebook stem>.json`` next to the notebook, and a display output with
mimetype ``application/vnd.autograder.hint+json`` inside the notebook itself.
The grader takes the maximum level per item over both.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .notebook import HINT_MIME, outputs_with_mime

LEVEL_NAMES = ("概念区域", "具体方向", "关键局部", "完整答案")


def sidecar_path(notebook_path) -> Path:
    p = Path(notebook_path)
    return p.parent / ".hints" / f"{p.stem}.json"


def read_sidecar(notebook_path) -> Dict[str, int]:
    p = sidecar_path(notebook_path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        return {str(k): int(v) for k, v in (data.get("levels") or {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def record(notebook_path, lesson_id: str, item: str, level: int) -> None:
    p = sidecar_path(notebook_path)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data.setdefault("lesson", lesson_id)
    levels = data.setdefault("levels", {})
    levels[item] = max(int(levels.get(item, 0)), int(level))
    data.setdefault("log", []).append({"item": item, "level": level, "time": time.strftime("%Y-%m-%dT%H:%M:%S")})
    p.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def ladder(lesson: Dict[str, Any], item: str):
    hints = lesson.get("hints") or {}
    if item not in hints:
        known = ", ".join(hints) or "（本课没有提示）"
        raise KeyError(f"没有提示项「{item}」；可用的提示项：{known}")
    return hints[item]


def next_level(lesson: Dict[str, Any], item: str, used: int, level: Optional[int] = None) -> Tuple[int, str]:
    """``(level, text)`` of the hint to show: ``level`` when given, else one above ``used``."""
    steps = ladder(lesson, item)
    want = int(level) if level else used + 1
    want = max(1, min(want, len(steps)))
    return want, steps[want - 1]


def format_hint(item: str, level: int, text: str, total: int) -> str:
    name = LEVEL_NAMES[level - 1] if level <= len(LEVEL_NAMES) else f"第 {level} 级"
    tail = "" if level >= total else f"（再运行一次可看下一级；共 {total} 级）"
    return f"💡 提示 [{item}] 第 {level} 级 · {name}{tail}\n{text}"


def usage_from_notebook(nb) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for _, data in outputs_with_mime(nb, HINT_MIME):
        if isinstance(data, dict) and data.get("item"):
            out[data["item"]] = max(out.get(data["item"], 0), int(data.get("level", 0)))
    return out


def merge_usage(*usages: Dict[str, int]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for u in usages:
        for k, v in (u or {}).items():
            out[k] = max(out.get(k, 0), int(v))
    return out


def penalties(lesson: Dict[str, Any], usage: Dict[str, int], hint_penalty) -> Dict[str, float]:
    """Points deducted per graded item.  Hint key = item id, or ``code`` for every code item."""
    items = lesson.get("items") or {}
    out: Dict[str, float] = {}
    for key, level in usage.items():
        if level <= 0:
            continue
        deduction = float(hint_penalty[min(level, 4) - 1])
        if key in items:
            targets = [key]
        elif key == "code":
            targets = [i for i, it in items.items() if it["kind"] in ("cases", "test")]
        else:
            targets = [i for i, it in items.items() if it.get("hint") == key]
        for t in targets:
            out[t] = max(out.get(t, 0.0), deduction)
    return out
