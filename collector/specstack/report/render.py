"""The report's two renderers of one list of blocks: Markdown (report.md) and self-contained HTML (report.html,
plots embedded as base64 PNG). A block is ("h1"|"h2"|"h3", text), ("p", text), ("ul", [items]),
("table", header, rows) or ("img", name, caption)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

Heading: TypeAlias = tuple[Literal["h1", "h2", "h3"], str]
Paragraph: TypeAlias = tuple[Literal["p"], str]
Bullets: TypeAlias = tuple[Literal["ul"], Sequence[str]]
Table: TypeAlias = tuple[Literal["table"], Sequence[object], Sequence[Sequence[object]]]
Image: TypeAlias = tuple[Literal["img"], str, str]  # (name of the PNG, caption)
Block: TypeAlias = Heading | Paragraph | Bullets | Table | Image


def title_of(bl: Sequence[Block]) -> str:
    """The text of the first block, the heading both builders put first (the HTML page's title)."""
    first = bl[0]
    if first[0] in ("h1", "h2", "h3", "p"):
        return first[1]
    raise ValueError(f"the first block is a {first[0]!r}, not a heading")


_MD_ESCAPE = str.maketrans({"|": "\\|", "\n": " "})


def render_markdown(bl: Sequence[Block]) -> str:
    lines: list[str] = []
    for b in bl:
        if b[0] in ("h1", "h2", "h3"):
            lines += ["#" * int(b[0][1]) + " " + b[1], ""]
        elif b[0] == "p":
            lines += [b[1], ""]
        elif b[0] == "ul":
            lines += [f"- {item}" for item in b[1]] + [""]
        elif b[0] == "table":
            head, rows = b[1], b[2]
            lines.append("| " + " | ".join(str(h).translate(_MD_ESCAPE) for h in head) + " |")
            lines.append("|" + "---|" * len(head))
            lines += ["| " + " | ".join(str(c).translate(_MD_ESCAPE) for c in row) + " |" for row in rows]
            lines.append("")
        elif b[0] == "img":
            lines += [f"![{b[2]}]({b[1]})", "", f"*{b[2]}*", ""]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1600px}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f0f3f8}tr:nth-child(even) td{background:#fafafa}
figure{margin:1em 0}figcaption{font-size:12px;color:#555}img{max-width:100%;border:1px solid #ddd}
h2{border-bottom:2px solid #3274d9;padding-bottom:2px;margin-top:1.6em}code{background:#f4f4f4}"""


def _inline(text: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(str(text)))


def render_html(bl: Sequence[Block], images: dict[str, bytes], title: str) -> str:
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>"
    ]
    for b in bl:
        if b[0] in ("h1", "h2", "h3"):
            parts.append(f"<{b[0]}>{html.escape(b[1])}</{b[0]}>")
        elif b[0] == "p":
            parts.append(f"<p>{_inline(b[1])}</p>")
        elif b[0] == "ul":
            parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b[1]) + "</ul>")
        elif b[0] == "table":
            head = "".join(f"<th>{html.escape(str(h))}</th>" for h in b[1])
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in b[2])
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif b[0] == "img":
            data = base64.b64encode(images[b[1]]).decode("ascii")
            parts.append(
                f'<figure><img alt="{html.escape(b[2])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(b[2])}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)
