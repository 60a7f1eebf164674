"""session/export: Markdown to paste, one self-contained HTML page, nothing of the session's run as markup."""

from __future__ import annotations

import base64
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sessiontree import export
from sessiontree import protocol as p
from sessiontree.errors import EntryNotFound
from sessiontree.service import ServiceConfig, SessionService
from support import pi16_entries as pi16
from support.messages import line, user_entry

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="alert(1)"> & "quotes"'


@pytest.fixture
def service(tmp_path: Path) -> SessionService:
    return SessionService(ServiceConfig(tmp_path / "sessions"))


def _open(service: SessionService) -> str:
    path = service.root / "--w--" / "demo.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, path)
    return service.open(p.OpenParams(str(path))).session_id


class _Markup(HTMLParser):
    """The elements and attributes of a page, as a browser's parser finds them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _assert_inert(page: str) -> _Markup:
    markup = _Markup(page)
    assert "script" not in {tag for tag, _ in markup.tags}
    assert not [name for _, attrs in markup.tags for name in attrs if name.startswith("on")]
    assert all((attrs.get("src") or "").startswith("data:image/") for tag, attrs in markup.tags if tag == "img")
    assert all((attrs.get("href") or "#").startswith("#") for tag, attrs in markup.tags if tag == "a")
    return markup


def test_markdown_of_the_path_reads_as_the_conversation(service: SessionService) -> None:
    sid = _open(service)
    result = service.export(p.ExportParams(sid, "markdown"))
    text = result.content
    assert result.leaf_id == "9d0e1f2a" and text.startswith("# Empty input in the parser\n")
    assert "**User**" in text and "The tests in parser.py fail on empty input." in text
    assert "<summary>Tool call: read</summary>" in text and '"path": "src/parser.py"' in text
    assert "**Compaction summary**" in text and "**Branch summary**" in text
    assert "Raise a ValueError" not in text  # the other branch is not on the path
    assert text.index("On second thought") < text.index("Now check the callers")


def test_markdown_of_the_tree_has_every_branch(service: SessionService) -> None:
    sid = _open(service)
    text = service.export(p.ExportParams(sid, "markdown", scope="tree")).content
    assert "Raise a ValueError" in text and "On second thought" in text
    assert text.count("Branch") >= 2 and "(on the path to the leaf)" in text


def test_a_code_block_in_a_tool_result_gets_a_longer_fence() -> None:
    entry = {"type": "message", "id": "a", "message": {"role": "toolResult", "toolName": "read",
             "content": [{"type": "text", "text": "````\nnested\n````"}]}}
    text = export.markdown("t", [export.Item(entry)])
    assert "`````\n````\nnested\n````\n`````" in text


def test_html_is_one_page_with_nothing_from_the_session_as_markup(service: SessionService) -> None:
    sid = _open(service)
    service.append(p.AppendParams(sid, entry=user_entry(HOSTILE)))
    page = service.export(p.ExportParams(sid, "html", scope="tree")).content
    assert page.startswith("<!DOCTYPE html>") and "default-src 'none'" in page
    markup = _assert_inert(page)
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page  # shown as text
    assert not [attrs for tag, attrs in markup.tags if tag == "link"]  # styles inline, nothing fetched
    assert [attrs["href"] for tag, attrs in markup.tags if tag == "a"] == ["#branch-6", "#branch-9"]


def test_a_branch_off_the_path_is_folded_and_the_path_is_open(service: SessionService) -> None:
    """The tree's page: the branch on the leaf's path a section, the other one a closed <details>
    (parsed, not laid out until opened), each where the navigation's link points."""
    sid = _open(service)
    tags = _assert_inert(service.export(p.ExportParams(sid, "html", scope="tree")).content).tags
    sections = [attrs for tag, attrs in tags if tag == "section"]
    folded = [attrs for tag, attrs in tags if tag == "details" and "branch" in (attrs.get("class") or "")]
    assert [(a["class"], a["id"]) for a in sections] == [("branch indent-1", "branch-9")]
    assert [(a["class"], a["id"], "open" in a) for a in folded] == [("branch off-path indent-1", "branch-6", False)]


class _Nesting(HTMLParser):
    """How deep branch blocks nest in a page."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.open: list[bool] = []
        self.deepest = 0
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("section", "details"):
            self.open.append("branch" in (dict(attrs).get("class") or ""))
            self.deepest = max(self.deepest, sum(self.open))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("section", "details"):
            self.open.pop()


def test_branches_a_thousand_deep_are_blocks_side_by_side() -> None:
    """A browser's parser keeps 512 levels of elements: deeper, it moves them. Branches nested a
    thousand deep (a long session that went back often) are blocks one after the other, indented
    up to a bound and their depth in words."""
    items = []
    for depth in range(1, 1001):
        items.append(export.Item({"type": "message", "id": f"off{depth}", "parentId": f"on{depth - 1}",
                                  "message": {"role": "user", "content": "tried"}}, depth, True, False))
        items.append(export.Item({"type": "message", "id": f"on{depth}", "parentId": f"on{depth - 1}",
                                  "message": {"role": "user", "content": "kept"}}, depth, True, True))
    page = export.page("t", items, tree=True)
    assert _Nesting(page).deepest == 1
    assert page.count('<details class="branch off-path') == 1000 and page.count('<section class="branch') == 1000
    assert 'class="branch indent-8" id="branch-1999"><h2>branch on the path to the leaf, from on999, depth 1000</h2>' in page
    assert "<nav><details><summary>Branches (2,000)</summary>" in page  # folded: too long for the first screen


def test_the_page_opens_with_the_sessions_facts(service: SessionService) -> None:
    sid = _open(service)
    page = service.export(p.ExportParams(sid, "html")).content
    facts = page[page.index('<dl class="facts">') : page.index("</dl>")]
    assert "<dt>cwd</dt><dd>/home/user/demo</dd>" in facts
    assert "<dt>dates</dt><dd>2026-01-01T00:00:01.000Z – 2026-01-01T00:02:05.000Z</dd>" in facts
    assert "<dt>entries</dt><dd>16 (13 shown)</dd>" in facts  # the path, of the whole tree's 16
    assert "<dt>models</dt><dd>anthropic/claude-sonnet-4-5</dd>" in facts and "<dt>cost</dt><dd>$0.0000</dd>" in facts
    assert page.index("</dl>") < page.index("<article")


def test_entries_off_screen_are_not_laid_out() -> None:
    page = export.page("t", [export.Item(user_entry("hello"))], tree=False)
    assert ".entry { content-visibility: auto;" in page


def test_the_export_reads_its_entries_as_it_writes_them(service: SessionService) -> None:
    """A document is a stream: before its first chunk is taken no entry is decoded, and the entries
    are decoded one chunk at a time, so a large session is never held whole."""
    sid = _open(service)
    session = service._synced(sid).session
    decoded: list[str] = []
    entry = session.entry

    def counted(node: object) -> dict[str, object]:
        found = entry(node)  # type: ignore[arg-type]
        decoded.append(found["id"])
        return found

    session.entry = counted  # type: ignore[method-assign]
    for form, scope in (("html", "tree"), ("markdown", "path")):
        decoded.clear()
        _, chunks = service.export_chunks(p.ExportParams(sid, form, scope=scope))  # type: ignore[arg-type]
        assert decoded == []
        taken = [next(chunks), next(chunks)]
        assert len(decoded) <= 2 and "".join(taken)
        rest = "".join(chunks)
        assert len(decoded) == (16 if scope == "tree" else 13) and rest.endswith("\n")


def test_images_are_inline_only_when_they_are_images() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
    good = {"type": "image", "data": png, "mimeType": "image/png"}
    bad_type = {"type": "image", "data": png, "mimeType": 'image/svg+xml" onload="x'}
    bad_data = {"type": "image", "data": 'AAAA" onerror="x', "mimeType": "image/png"}
    entry = {"type": "message", "id": "a", "message": {"role": "user", "content": [good, bad_type, bad_data]}}
    page = export.page("t", [export.Item(entry)], tree=False)
    images = [attrs for tag, attrs in _assert_inert(page).tags if tag == "img"]
    assert [image["src"] for image in images] == [f"data:image/png;base64,{png}"]
    assert page.count("not shown") == 2


def test_a_long_tool_result_is_cut_with_an_expander_for_the_rest() -> None:
    entry = {"type": "message", "id": "a", "message": {"role": "toolResult", "toolName": "bash", "isError": True,
             "content": [{"type": "text", "text": "x" * 5000}]}}
    page = export.page("t", [export.Item(entry)], tree=False)
    assert "show the other 3,800 of 5,000 characters" in page and 'class="result error"' in page
    assert page.count("x") - export.page("t", [], tree=False).count("x") == 5000  # each character once


def test_a_long_tool_result_is_cut_at_a_line_end() -> None:
    text = "".join(f"line {n:04}\n" for n in range(500))
    entry = {"type": "message", "id": "a", "message": {"role": "toolResult", "toolName": "read",
             "content": [{"type": "text", "text": text}]}}
    page = export.page("t", [export.Item(entry)], tree=False)
    head = page[page.index("<pre><code>") + len("<pre><code>") : page.index("</code></pre>")]
    assert head.endswith("line 0119\n") and text.startswith(head)
    assert f"show the other {len(text) - len(head):,} of {len(text):,} characters" in page


def test_an_unknown_leaf_is_an_error(service: SessionService) -> None:
    sid = _open(service)
    with pytest.raises(EntryNotFound):
        service.export(p.ExportParams(sid, "html", leaf_id="ffffffff"))
    other = service.export(p.ExportParams(sid, "markdown", leaf_id="2c3d4e5f")).content
    assert "Raise a ValueError" in other and "On second thought" not in other


def _pi16(service: SessionService) -> str:
    path = service.root / "--w--" / "pi16.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(line(pi16.HEADER) + b"".join(line(e) for e in pi16.session()))
    return service.open(p.OpenParams(str(path))).session_id


def test_pi_16_entries_read_as_what_they_do(service: SessionService) -> None:
    """A system message collapsed to its sections' and tools' names, context edits as what they do
    with their targets marked on the path, a usage entry as one line."""
    sid = _pi16(service)
    text = service.export(p.ExportParams(sid, "markdown", leaf_id="b0000009")).content
    assert "<details>\n<summary>System prompt (sections: preamble, cwd, skills; tools: read, bash, edit)</summary>" in text
    assert "tool read: The read tool." in text and '"properties"' not in text  # no JSON schema inline
    assert "**Assistant** · hidden from the context by b0000007 <sub>" in text
    assert "**Tool result · read** · edited in the context by b0000006 <sub>" in text
    assert "_replaces the content of b0000004 in the context with:_\n\nfile body (edited)" in text
    assert "_hides b0000003 from the context_" in text
    assert "_usage: cache_warm · anthropic/claude-x · 150 tokens · cost 0.2000 · cache warming_" in text
    other_branch = service.export(p.ExportParams(sid, "markdown")).content  # the edits are not on this path
    assert "hidden from the context" not in other_branch
    page = service.export(p.ExportParams(sid, "html", leaf_id="b0000009", scope="tree")).content
    _assert_inert(page)
    assert "<details><summary>System prompt (sections: preamble, cwd, skills; tools: read, bash, edit)" in page
    assert '<span class="edit-mark">hidden from the context by b0000007</span>' in page
