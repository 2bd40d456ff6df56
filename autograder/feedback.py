"""Per-student HTML summary page: score per item, vetoes with evidence, hints
used, seed and status, linking nbgrader's own feedback notebook HTML."""
from __future__ import annotations

import html
from pathlib import Path

_CSS = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;max-width:920px;margin:2em auto;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.35em .6em;text-align:left;vertical-align:top}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b3261e;font-weight:bold}
pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
"""


def _e(x) -> str:
    return html.escape(str(x))


def render(row, lesson_cfg: dict, notebook_html: str | None = None) -> str:
    title = lesson_cfg.get("title", lesson_cfg.get("id", ""))
    verdict = '<span class="pass">通过</span>' if row.passed else '<span class="fail">未通过</span>'
    out = [f"<!doctype html><html lang='zh-CN'><head><meta charset='utf-8'><title>{_e(row.student)} · {_e(title)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p>学生：<b>{_e(row.student)}</b> · 总分 <b>{row.total:g}/{row.max_score:g}</b> · {verdict}"
           f" · 随机种子 {_e(row.seed if row.seed is not None else '-')}</p>"]
    if row.status != "graded":
        label = {"timeout": "运行超时", "crashed": "运行崩溃", "error": "评分出错"}.get(row.status, row.status)
        out.append(f"<p class='fail'>{_e(label)}：{_e(row.reason)}</p>")
    items = {it.get("id"): it for it in (row.rubric or {}).get("items", [])}
    out.append("<h2>各项得分</h2><table><tr><th>项目</th><th>得分</th><th>说明</th></tr>")
    for item_id, cfg in lesson_cfg.get("items", {}).items():
        it = items.get(item_id, {})
        score = row.scores.get(item_id, 0.0)
        note = it.get("message", "")
        if item_id in row.overridden:
            note = f"（教师已改分）{note}"
        fams = "".join(f"<li>{'✔' if f.get('passed') else '✘'} {_e(f.get('family', ''))}"
                       f"{(' — ' + _e(f.get('reason'))) if f.get('reason') else ''}</li>"
                       for f in it.get("families", []) or [])
        out.append(f"<tr><td>{_e(item_id)}</td><td>{score:g}/{cfg.get('points', 0):g}</td>"
                   f"<td>{_e(note)}{'<ul>' + fams + '</ul>' if fams else ''}</td></tr>")
    out.append("</table>")
    out.append("<h2>一票否决</h2>")
    if row.vetoes:
        for v in row.vetoes:
            out.append(f"<p><b>{_e(v.get('id', '?'))}</b>：{_e(v.get('message', ''))}</p>")
            if v.get("evidence"):
                out.append(f"<pre>{_e(v['evidence'])}</pre>")
    else:
        out.append("<p>无。</p>")
    out.append("<h2>使用过的提示</h2><p>" + (_e("，".join(row.hints)) if row.hints else "无") + "</p>")
    if notebook_html:
        out.append(f"<p><a href='{_e(notebook_html)}'>查看批改后的完整笔记本（nbgrader 反馈）</a></p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_page(path: Path, row, lesson_cfg: dict, notebook_html: str | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(row, lesson_cfg, notebook_html), encoding="utf-8")
    return path
