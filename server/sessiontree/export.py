"""A session as a document a person reads or pastes elsewhere: Markdown, or one self-contained HTML page.

The input is entries in order, each with how deep in the tree's branches it sits (0 for the
conversation's trunk) and whether it starts a branch. Everything taken from the session is
escaped: HTML output has no markup the session wrote, no script, no network reference (images are
inline data, their media type checked), so a message holding `<script>` stays text.

Both documents are written as a stream of chunks (`page_chunks`, `markdown_chunks`) from entries
given one at a time, so a session of 50,000 entries is never held whole, parsed or as text. What
must be known before the first entry (the context edits' marks, the branches for the navigation)
comes in an `Outline` the caller can build from its index; without one, it is read from the items.
An HTML page is made to show its first screen at once however long it is: entries off-screen are
not laid out (`content-visibility`), branches off the leaf's path are folded, and a long tool
output is shown once, its head open and the rest behind an expander.
"""

from __future__ import annotations

import base64
import binascii
import html
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .shown import as_object, as_text, finite, json_text

RESULT_PREVIEW: Final = 1200  # characters of a tool result shown before its expander
_INDENTS: Final = 8  # branch depths indented; deeper ones are indented as this one, their depth in words
_NAVIGATION_OPEN: Final = 40  # branches listed open at the top of the page; more, folded
_HTML_SPECIAL: Final = re.compile("[&<>\"']")
_IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BACKTICKS: Final = re.compile(r"`+")
_FENCE_OPEN: Final = re.compile(r"(`{3,}|~{3,})(.*)")  # at column 0 only: see _markdown_prose
_FENCE_CLOSE: Final = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


@dataclass(frozen=True)
class Item:
    """One entry to show: the entry, its branch depth, whether it starts a branch, and marks."""

    entry: dict[str, Any]
    depth: int = 0
    starts_branch: bool = False
    on_leaf_path: bool = True
    is_leaf: bool = False


@dataclass(frozen=True)
class Outline:
    """What a document needs before its first entry: the marks of the context edits on the leaf's
    path (by target id) and the branches to list, as (position among the items, label)."""

    edits: dict[str, str]
    branches: list[tuple[int, str]]


@dataclass(frozen=True)
class SessionFacts:
    """The facts a page opens with; `cost` None when no entry reported one."""

    cwd: str = ""
    first: str = ""
    last: str = ""
    entries: int = 0
    shown: int = 0
    models: tuple[str, ...] = ()
    cost: float | None = None


# --------------------------------------------------------------------------- what an entry says


@dataclass(frozen=True)
class Part:
    """A piece of an entry's display: `kind` is text, code, thinking, tool-call, tool-result,
    image, note (one line about a setting), or summary."""

    kind: str
    text: str = ""
    title: str = ""
    media_type: str = ""
    error: bool = False


_ROLE_TITLES: Final = {"user": "User", "assistant": "Assistant", "toolResult": "Tool result", "bashExecution": "Shell",
                       "system": "System prompt"}
_TYPE_TITLES: Final = {
    "compaction": "Compaction summary",
    "branch_summary": "Branch summary",
    "custom_message": "Custom message",
    "model_change": "Model",
    "thinking_level_change": "Thinking level",
    "label": "Label",
    "session_info": "Session name",
    "context_edit": "Context edit",
    "usage": "Usage",
}


def heading(entry: dict[str, Any]) -> tuple[str, str]:
    """(css class, title) of an entry."""
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        message = entry["message"]
        role = _one_line(as_text(message.get("role", "message")))
        title = _ROLE_TITLES.get(role, role)
        for key in ("toolName", "customType"):
            if isinstance(message.get(key), str):
                title += f" · {_one_line(message[key])}"
        return role, title
    name = _one_line(as_text(kind))
    return name, _TYPE_TITLES.get(name, name)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def parts(entry: dict[str, Any]) -> list[Part]:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        return _message_parts(entry["message"])
    if kind in ("compaction", "branch_summary"):
        return [Part("summary", as_text(entry.get("summary", "")))]
    if kind == "custom_message":
        return _content_parts(entry.get("content"))
    if kind == "model_change":
        return [Part("note", f"model: {as_text(entry.get('provider', '?'))}/{as_text(entry.get('modelId', '?'))}")]
    if kind == "thinking_level_change":
        return [Part("note", f"thinking level: {as_text(entry.get('thinkingLevel', '?'))}")]
    if kind == "label":
        label, target = as_text(entry.get("label")), as_text(entry.get("targetId"))
        return [Part("note", f"label on {target}: {label}" if label else f"label cleared on {target}")]
    if kind == "session_info":
        return [Part("note", f"session name: {as_text(entry.get('name', ''))}")]
    if kind == "context_edit":
        return _context_edit_parts(entry)
    if kind == "usage":
        return [Part("note", _usage_line(entry))]
    return [Part("note", f"{as_text(kind)} entry")]


def _message_parts(message: dict[str, Any]) -> list[Part]:
    role = message.get("role")
    if role == "bashExecution":
        output = as_text(message.get("output", ""))
        status = message.get("exitCode")
        title = f"exit code {as_text(status)}" if status is not None else "output"
        return [Part("code", f"$ {as_text(message.get('command', ''))}"),
                Part("tool-result", output, title, error=status not in (0, None))]
    if role == "toolResult":
        found = _content_parts(message.get("content"))
        text = "\n".join(p.text for p in found if p.kind == "text")
        images = [p for p in found if p.kind == "image"]
        name = as_text(message.get("toolName", "tool"))
        return [Part("tool-result", text, name, error=bool(message.get("isError"))), *images]
    if role in ("branchSummary", "compactionSummary"):
        return [Part("summary", as_text(message.get("summary", "")))]
    if role == "system":
        return [_system_part(message)]
    return _content_parts(message.get("content"))


def _system_part(message: dict[str, Any]) -> Part:
    """A system message (pi 1.6): one collapsed part, titled with its sections' and tools' names;
    the body is the prompt's text, each section by name, and each tool's name and description, not
    its JSON schema."""
    sections = as_object(message.get("sections"))
    added = [tool for tool in _list(message.get("toolsAdded")) if isinstance(tool, dict)]
    removed = [as_text(tool.get("name")) for tool in _list(message.get("toolsRemoved")) if isinstance(tool, dict)]
    title = [f"sections: {', '.join(sections)}" if sections else "",
             f"tools: {', '.join(as_text(tool.get('name')) for tool in added)}" if added else "",
             f"tools removed: {', '.join(removed)}" if removed else ""]
    text = "\n".join(part.text for part in _content_parts(message.get("content")) if part.kind == "text")
    body = [text] if text else []
    body += [f"[{name}]\n{as_text(section)}" if section is not None else f"[{name}] removed"
             for name, section in sections.items()]
    body += [f"tool {as_text(tool.get('name'))}: {as_text(tool.get('description', ''))}" for tool in added]
    body += [f"tool {name} removed" for name in removed]
    return Part("system", "\n\n".join(body), "; ".join(t for t in title if t) or "instructions")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _context_edit_parts(entry: dict[str, Any]) -> list[Part]:
    target, replacement = as_text(entry.get("targetId")), entry.get("replacement")
    if not isinstance(replacement, dict):
        return [Part("note", f"hides {target} from the context")]
    found = _content_parts(replacement.get("content"))
    return [Part("note", f"replaces the content of {target} in the context with:"), *found]


def _usage_line(entry: dict[str, Any]) -> str:
    """A usage entry (pi 1.6: cache warming, accounting) as one line: it is no part of the conversation."""
    usage = as_object(entry.get("usage"))
    counts = [finite(usage.get(kind)) for kind in ("input", "output", "cacheRead", "cacheWrite")]
    tokens = math.fsum(count for count in counts if count is not None)
    cost = finite(as_object(usage.get("cost")).get("total"))
    figures = [f"{tokens:,.0f} tokens" if math.isfinite(tokens) else "", f"cost {cost:.4f}" if cost is not None else ""]
    model = "/".join(as_text(entry.get(k)) for k in ("provider", "model") if entry.get(k) is not None)
    words = [as_text(entry.get("kind", "usage")), model, *figures, as_text(entry.get("note"))]
    return "usage: " + " · ".join(_one_line(w) for w in words if w)


def _content_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Part("text", content)]
    if not isinstance(content, list):
        return []
    found = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            found.append(Part("text", as_text(block.get("text", ""))))
        elif kind == "thinking":
            found.append(Part("thinking", as_text(block.get("thinking", ""))))
        elif kind == "toolCall":
            found.append(Part("tool-call", json_text(block.get("arguments", {})), as_text(block.get("name", "?"))))
        elif kind == "image":
            found.append(Part("image", as_text(block.get("data", "")), media_type=as_text(block.get("mimeType", ""))))
    return found


def context_edits(items: Sequence[Item]) -> dict[str, str]:
    """What the context edits on the path to the leaf do to their targets: the latest edit of each
    target wins (pi: edits are branch-relative), as a mark for the target's heading."""
    marks: dict[str, str] = {}
    for item in items:
        entry = item.entry
        if entry.get("type") == "context_edit" and item.on_leaf_path and isinstance(entry.get("targetId"), str):
            done = "edited in the context" if isinstance(entry.get("replacement"), dict) else "hidden from the context"
            marks[entry["targetId"]] = f"{done} by {as_text(entry.get('id'))}"
    return marks


def branch_label(title: str, entry_id: str, on_leaf_path: bool) -> str:
    return f"{title} {entry_id}{' (path to the leaf)' if on_leaf_path else ''}"


def outline_of(items: Sequence[Item]) -> Outline:
    """The outline of items already in memory (a caller with an index builds it without them)."""
    branches = [(n, branch_label(heading(item.entry)[1], as_text(item.entry.get("id", "")), item.on_leaf_path))
                for n, item in enumerate(items) if item.starts_branch]
    return Outline(context_edits(items), branches)


def _outlined(items: Iterable[Item], outline: Outline | None) -> tuple[Iterable[Item], Outline]:
    if outline is not None:
        return items, outline
    listed = list(items)
    return listed, outline_of(listed)


def _image_data(part: Part) -> str | None:
    """The image as a data URI, or None unless it is one of the usual types in valid base64."""
    if part.media_type not in _IMAGE_TYPES:
        return None
    try:
        base64.b64decode(part.text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return f"data:{part.media_type};base64,{part.text}"


# --------------------------------------------------------------------------- Markdown


def markdown(title: str, items: Sequence[Item]) -> str:
    return "".join(markdown_chunks(title, items))


def markdown_chunks(title: str, items: Iterable[Item], outline: Outline | None = None) -> Iterator[str]:
    """The conversation as a person would paste it into an issue, entry by entry. Nothing the session
    wrote becomes HTML: outside code, `&` and `<` are escaped; code is fenced with a fence no line can close."""
    items, outline = _outlined(items, outline)
    yield f"# {_inline(_one_line(title))}\n"
    for item in items:
        yield "\n" + "\n".join(_markdown_entry(item, outline.edits)).rstrip("\n") + "\n"


def _markdown_entry(item: Item, edits: dict[str, str]) -> list[str]:
    out: list[str] = []
    if item.starts_branch:
        out += [f"{'#' * min(6, 2 + item.depth)} Branch{' (on the path to the leaf)' if item.on_leaf_path else ''}", ""]
    _, name = heading(item.entry)
    entry_id = as_text(item.entry.get("id", ""))
    marks = "".join(f" · {mark}" for mark in (edits.get(entry_id), "leaf" if item.is_leaf else None) if mark)
    stamp = _inline(_one_line(f"{entry_id} · {as_text(item.entry.get('timestamp', ''))}"))
    out += [f"**{_inline(name)}**{_inline(marks)} <sub>{stamp}</sub>", ""]
    for part in parts(item.entry):
        out += _markdown_part(part)
    return out


def _markdown_part(part: Part) -> list[str]:
    if part.kind == "text":
        return [*_markdown_prose(part.text), ""]
    if part.kind == "note":
        return [f"_{_inline(_one_line(part.text))}_", ""]
    if part.kind == "image":
        return [f"_[image, {_inline(_one_line(part.media_type)) or 'unknown type'}]_", ""]
    if part.kind == "summary":
        return ["> " + line if line else ">" for line in _markdown_prose(part.text)] + [""]
    summary = {"thinking": "Thinking", "tool-call": f"Tool call: {part.title}", "tool-result": f"Result: {part.title}",
               "system": f"System prompt ({part.title})"}
    name = summary.get(part.kind, part.kind) + (" (error)" if part.error else "")
    if part.kind == "code":
        return [*_fenced(part.text, "sh"), ""]
    body = _fenced(part.text, "json" if part.kind == "tool-call" else "")
    return ["<details>", f"<summary>{html.escape(_one_line(name))}</summary>", "", *body, "", "</details>", ""]


def _fenced(text: str, language: str) -> list[str]:
    """A code block whose fence is longer than any run of backticks in the text, so no line of it
    (however indented: CommonMark closes a fence indented up to three spaces) can close it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", text, fence]


def _markdown_prose(text: str) -> list[str]:
    """Prose as Markdown, with no HTML of its own: `&` and `<` escaped outside fenced code, inline code
    spans written as <code> elements of escaped text, a fence left open closed at the end.

    A fence is taken as code only when it opens at column 0: indented, a renderer may read it as
    part of a list item that a later line ends, and what followed would be HTML."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            out.append(line)
            closing = _FENCE_CLOSE.fullmatch(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
            continue
        opening = _FENCE_OPEN.fullmatch(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            out += [_inline(line) for line in prose]
            prose = []
            fence = opening.group(1)
            out.append(fence + _inline(opening.group(2)))
            continue
        prose.append(line)
    out += [_inline(line) for line in prose]
    if fence is not None:
        out.append(fence)
    return out


def _inline(text: str) -> str:
    """One line of prose: code spans (a run of backticks closed by the next run as long, on the same
    line) as <code> elements, and `&` and `<` escaped everywhere else."""
    if "`" not in text:
        return _escape(text)
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    out, at, n = [], 0, 0
    while n < len(runs):
        start, end = runs[n]
        closing = next((k for k in range(n + 1, len(runs)) if runs[k][1] - runs[k][0] == end - start), None)
        if closing is None:
            n += 1
            continue
        code = text[end : runs[closing][0]]
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
            code = code[1:-1]
        out += [_escape(text[at:start]), f"<code>{html.escape(code, quote=False)}</code>"]
        at, n = runs[closing][1], closing + 1
    out.append(_escape(text[at:]))
    return "".join(out)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


# --------------------------------------------------------------------------- HTML


_STYLE: Final = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #656d76; --bg: #ffffff; --card: #f6f8fa;
  --user: #0969da; --assistant: #8250df; --tool: #9a6700; --error: #cf222e; --summary: #1a7f37; --line: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117; --card: #161b22;
  --user: #4493f8; --assistant: #a371f7; --tool: #d29922; --error: #f85149; --summary: #3fb950; --line: #30363d; } }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
  max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; } .meta { color: var(--muted); font-size: .8rem; }
.entry { border-left: 3px solid var(--line); background: var(--card); border-radius: 6px; margin: .8rem 0; padding: .5rem .9rem; }
.entry > header { font-weight: 600; display: flex; gap: .6rem; align-items: baseline; }
.user { border-color: var(--user); } .assistant { border-color: var(--assistant); }
.toolResult, .bashExecution { border-color: var(--tool); } .compaction, .branch_summary, .compactionSummary,
.branchSummary { border-color: var(--summary); }
.note { color: var(--muted); font-style: italic; margin: .2rem 0; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .6rem; overflow-x: auto;
  font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; white-space: pre-wrap; }
details { margin: .4rem 0; } summary { cursor: pointer; color: var(--muted); }
.error > summary { color: var(--error); } .leaf-mark { color: var(--summary); }
.edit-mark { color: var(--tool); font-weight: 400; font-size: .85rem; } .system { border-color: var(--muted); }
.branch { padding-left: .6rem; border-left: 2px dashed var(--line); }
.branch > h2, .branch > summary { font-size: .95rem; color: var(--muted); margin: .8rem 0 .2rem; }
.off-path .entry { opacity: .78; }
.indent-1 { margin-left: 1.2rem; } .indent-2 { margin-left: 2.4rem; } .indent-3 { margin-left: 3.6rem; }
.indent-4 { margin-left: 4.8rem; } .indent-5 { margin-left: 6rem; } .indent-6 { margin-left: 7.2rem; }
.indent-7 { margin-left: 8.4rem; } .indent-8 { margin-left: 9.6rem; }

.entry { content-visibility: auto; contain-intrinsic-size: auto 9rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; font-size: .85rem; margin: 0 0 1rem; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; overflow-wrap: anywhere; }
img { max-width: 100%; border-radius: 4px; }
nav ul { padding-left: 1.2rem; } nav a { color: var(--user); }
"""


def page(title: str, items: Sequence[Item], tree: bool, facts: SessionFacts | None = None) -> str:
    return "".join(page_chunks(title, items, tree, facts))


def page_chunks(
    title: str, items: Iterable[Item], tree: bool, facts: SessionFacts | None = None, outline: Outline | None = None
) -> Iterator[str]:
    """One self-contained page, chunk by chunk: styles inline, no script, no external reference."""
    items, outline = _outlined(items, outline)
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{_html(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{_html(title)}</h1>"
    )
    if facts is not None:
        yield _facts(facts)
    if tree:
        yield _navigation(outline.branches)
    yield from _html_body(items, outline.edits)
    yield "</body></html>\n"


def _facts(facts: SessionFacts) -> str:
    dates = facts.first if facts.first == facts.last else f"{facts.first} – {facts.last}"
    shown = f"{facts.entries:,}" if facts.shown == facts.entries else f"{facts.entries:,} ({facts.shown:,} shown)"
    rows = [("cwd", facts.cwd), ("dates", dates), ("entries", shown), ("models", ", ".join(facts.models)),
            ("cost", "" if facts.cost is None else f"${facts.cost:,.4f}")]
    cells = "".join(f"<dt>{name}</dt><dd>{_html(value)}</dd>" for name, value in rows if value)
    return f'<dl class="facts">{cells}</dl>'


def _navigation(branches: Sequence[tuple[int, str]]) -> str:
    if not branches:
        return ""
    links = "".join(f'<li><a href="#branch-{n}">{_html(label)}</a></li>' for n, label in branches)
    shown = " open" if len(branches) <= _NAVIGATION_OPEN else ""  # a long list would be the whole first screen
    return f"<nav><details{shown}><summary>Branches ({len(branches):,})</summary><ul>{links}</ul></details></nav>"


def _html_body(items: Iterable[Item], edits: dict[str, str]) -> Iterator[str]:
    """Entries, each branch in a block of its own: on the leaf's path a section, off it a folded
    <details> (parsed, but not laid out until opened: it costs the first screen nothing; a link to
    it or a search in the page opens it). The blocks follow one another, never nested: a session's
    branches can nest a thousand deep, past what a browser's parser keeps (512 levels), so the depth
    is shown by an indent (up to `_INDENTS`) and in words."""
    closing = ""
    for n, item in enumerate(items):
        if item.starts_branch:
            yield closing
            indent = f" indent-{min(item.depth, _INDENTS)}"
            entry_id = as_text(item.entry.get("id", ""))
            parent = as_text(item.entry.get("parentId", ""))
            where = _html(f"from {parent}, depth {item.depth}" if parent else f"depth {item.depth}")
            if item.on_leaf_path:
                yield f'<section class="branch{indent}" id="branch-{n}"><h2>branch on the path to the leaf, {where}</h2>'
                closing = "</section>"
            else:
                _, name = heading(item.entry)
                label = _html(f"branch {entry_id}: {name}, ") + where
                yield f'<details class="branch off-path{indent}" id="branch-{n}"><summary>{label}</summary>'
                closing = "</details>"
        yield _html_entry(item, edits)
    yield closing


def _html_entry(item: Item, edits: dict[str, str]) -> str:
    css, name = heading(item.entry)
    raw_id = as_text(item.entry.get("id", ""))
    entry_id = _html(raw_id)
    stamp = _html(as_text(item.entry.get("timestamp", "")))
    leaf = ' <span class="leaf-mark">← leaf</span>' if item.is_leaf else ""
    edit = f' <span class="edit-mark">{_html(edits[raw_id])}</span>' if raw_id in edits else ""
    header = f'<header>{_html(name)}{edit}{leaf}<span class="meta">{entry_id} · {stamp}</span></header>'
    body = "".join(_html_part(part) for part in parts(item.entry))
    return f'<article class="entry {_html(css)}" id="e-{entry_id}">{header}{body}</article>'


def _html_part(part: Part) -> str:
    if part.kind == "text":
        return _html_text(part.text)
    if part.kind == "note":
        return f'<p class="note">{_html(part.text)}</p>'
    if part.kind == "summary":
        return _html_text(part.text)
    if part.kind == "code":
        return f"<pre><code>{_html(part.text)}</code></pre>"
    if part.kind == "image":
        data = _image_data(part)
        if data is None:
            return f'<p class="note">[image of type {_html(part.media_type or "unknown")} not shown]</p>'
        return f'<img alt="image" src="{_html(data)}">'
    if part.kind == "tool-result":
        return _html_result(part)
    titles = {"thinking": "Thinking", "system": f"System prompt ({part.title})"}
    title = titles.get(part.kind, f"Tool call: {part.title}")
    return f"<details><summary>{_html(title)}</summary><pre><code>{_html(part.text)}</code></pre></details>"


def _html_result(part: Part) -> str:
    """A tool's output: open, but a long one shows its head and keeps the rest (not the whole
    again) behind an expander, so the page holds each character once."""
    error = " error" if part.error else ""
    title = _html(f"Result: {part.title}" + (" (error)" if part.error else ""))
    text = part.text
    if len(text) <= RESULT_PREVIEW:
        return f'<details class="result{error}" open><summary>{title}</summary><pre><code>{_html(text)}</code></pre></details>'
    cut = _cut_at(text, RESULT_PREVIEW)
    head, rest = _html(text[:cut]), _html(text[cut:])
    more = f"<details><summary>show the other {len(text) - cut:,} of {len(text):,} characters</summary><pre><code>{rest}</code></pre></details>"
    return f'<details class="result{error}" open><summary>{title}</summary><pre><code>{head}</code></pre>{more}</details>'


def _cut_at(text: str, limit: int) -> int:
    """Where to cut a long text for its head: after the last line end before `limit`, if any."""
    line_end = text.rfind("\n", 0, limit)
    return line_end + 1 if line_end > limit // 2 else limit


def _html(text: str) -> str:
    """`text` escaped for HTML (quotes too): most of a session's text has nothing to escape, and a
    search for the five characters is faster than html.escape's five replacements."""
    return html.escape(text) if _HTML_SPECIAL.search(text) else text


def _html_text(text: str) -> str:
    """Prose as written, with fenced code blocks in monospace."""
    out, chunks, inside = [], re.split(r"^(```[^\n]*)$", text, flags=re.M), False
    for chunk in chunks:
        if chunk.startswith("```"):
            inside = not inside
            continue
        if not chunk.strip():
            continue
        if inside:
            out.append(f"<pre><code>{_html(chunk.strip(chr(10)))}</code></pre>")
        else:
            out.append(f'<div class="text">{_html(chunk.strip(chr(10)))}</div>')
    return "".join(out)
