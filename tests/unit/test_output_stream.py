"""A document written as it is made, chunk by chunk: whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.output import write_file


def test_chunks_are_written_as_one_file(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    write_file(out, (part.encode() for part in ["<!DOCTYPE html>", "<p>a</p>", "</html>\n"]))
    assert out.read_bytes() == b"<!DOCTYPE html><p>a</p></html>\n"


def test_a_failure_while_the_chunks_are_made_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    out.write_bytes(b"the page before")

    def failing() -> Iterator[bytes]:
        yield b"<!DOCTYPE html>"
        raise OSError("the session went away")

    with pytest.raises(OSError, match="went away"):
        write_file(out, failing())
    assert out.read_bytes() == b"the page before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # no part left beside it
