"""truncate_head / truncate_tail: limits hold on the rendered output, whole lines only,
continuation offsets that page through everything."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import TokenCounter, get_counter, truncate_head, truncate_tail

_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=120
)
_lines = st.lists(
    _line | st.sampled_from(["", "word " * 80, "中文句子。" * 30]), min_size=0, max_size=60
)
EST = get_counter("estimate")


def _split(text: str) -> list[str]:
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines.pop()
    return lines


@settings(max_examples=80, deadline=None)
@given(
    lines=_lines,
    max_tokens=st.none() | st.integers(min_value=0, max_value=400),
    max_bytes=st.none() | st.integers(min_value=0, max_value=2000),
    max_lines=st.integers(min_value=1, max_value=30),
)
def test_head_pages_through_everything(
    lines: list[str], max_tokens: int | None, max_bytes: int | None, max_lines: int
) -> None:
    text = "\n".join(lines)
    all_lines = _split(text)
    offset, seen, pages = 1, [], 0
    while True:
        out = truncate_head(
            text,
            max_lines=max_lines,
            max_tokens=max_tokens,
            max_bytes=max_bytes,
            offset=offset,
            counter=EST,
        )
        rendered = out.render()
        if max_tokens is not None:
            assert EST.count(rendered) <= max_tokens
        if max_bytes is not None:
            assert len(rendered.encode()) <= max_bytes
        if max_tokens is None and max_bytes is None:
            assert len(rendered.encode()) <= 30 * 1024
        assert out.output_lines <= max_lines
        assert out.total_lines == len(all_lines)
        if out.partial_line:
            assert out.output_lines == 1
            assert all_lines[offset - 1].startswith(out.text)
        elif out.output_lines:
            assert out.text == "\n".join(all_lines[offset - 1 : offset - 1 + out.output_lines])
            assert (out.start_line, out.end_line) == (offset, offset + out.output_lines - 1)
            seen.extend(all_lines[offset - 1 : offset - 1 + out.output_lines])
        if not out.truncated:
            assert out.next_offset is None and out.notice is None
            break
        assert out.truncated_by in {"lines", "tokens", "bytes"}
        if out.next_offset is None or out.next_offset > len(all_lines):
            break
        if out.notice:
            assert f"offset={out.next_offset}" in out.notice
        if out.partial_line:
            seen.append(all_lines[offset - 1])  # the one cut line is reported, not lost
        assert out.next_offset > offset
        offset = out.next_offset
        pages += 1
        assert pages <= len(all_lines) + 1
    if not out.truncated or out.next_offset is None:
        assert seen == all_lines[: len(seen)]


@settings(max_examples=80, deadline=None)
@given(
    lines=_lines,
    max_tokens=st.none() | st.integers(min_value=0, max_value=400),
    max_bytes=st.none() | st.integers(min_value=0, max_value=2000),
    max_lines=st.integers(min_value=1, max_value=30),
)
def test_tail_keeps_the_end(
    lines: list[str], max_tokens: int | None, max_bytes: int | None, max_lines: int
) -> None:
    text = "\n".join(lines)
    all_lines = _split(text)
    out = truncate_tail(
        text,
        max_lines=max_lines,
        max_tokens=max_tokens,
        max_bytes=max_bytes,
        counter=EST,
        full_output_path="/tmp/out.log",
    )
    rendered = out.render()
    if max_tokens is not None:
        assert EST.count(rendered) <= max_tokens
    if max_bytes is not None:
        assert len(rendered.encode()) <= max_bytes
    assert out.output_lines <= max_lines
    if out.partial_line:
        assert all_lines[-1].endswith(out.text)
    elif out.output_lines:
        assert out.text == "\n".join(all_lines[-out.output_lines :])
        assert out.end_line == len(all_lines)
    if not out.truncated:
        assert out.text == "\n".join(all_lines)


def test_head_notices_follow_the_documented_forms(stdlib: Path, cl100k: TokenCounter) -> None:
    text = "\n".join(f"line {i}" for i in range(1, 5001))
    out = truncate_head(text, max_lines=2000)
    assert out.notice == "[Showing lines 1-2000 of 5000. Use offset=2001 to continue]"
    assert (out.truncated_by, out.output_lines, out.total_lines, out.next_offset) == (
        "lines",
        2000,
        5000,
        2001,
    )
    out = truncate_head(text, offset=1000)
    assert out.notice == "[Showing lines 1000-2999 of 5000. Use offset=3000 to continue]"
    out = truncate_head(text, max_bytes=3000)
    assert out.truncated_by == "bytes"
    assert (
        out.notice
        == f"[Showing lines 1-{out.end_line} of 5000 (3,000-byte limit). Use offset={out.end_line + 1} to continue]"
    )
    assert len(out.render().encode()) <= 3000
    bomb = (stdlib / "pydoc_data" / "topics.py").read_text()
    out = truncate_head(bomb, max_tokens=1000, counter=cl100k)
    assert out.truncated_by == "tokens"
    assert "(1,000-token limit). Use offset=" in (out.notice or "")
    assert cl100k.count(out.render()) <= 1000
    assert cl100k.count(out.render()) > 900  # the limit is used, not wasted


def test_a_line_alone_over_the_limit_is_shown_in_part(cl100k: TokenCounter) -> None:
    text = "short\n" + "word " * 5000 + "\nlast"
    out = truncate_head(text, max_tokens=100, offset=2, counter=cl100k)
    assert out.partial_line and out.output_lines == 1 and out.next_offset == 3
    n = cl100k.count("word " * 5000)
    assert (
        out.notice
        == f"[Line 2 is {n:,} tokens, over the 100-token limit; showing its start. Use offset=3 to continue]"
    )
    assert cl100k.count(out.render()) <= 100
    assert out.text.startswith("word word") and not out.text.endswith(" wo")
    tail = truncate_tail("first\n" + "word " * 5000, max_tokens=100, counter=cl100k)
    assert tail.partial_line and tail.notice and "showing its end" in tail.notice
    assert cl100k.count(tail.render()) <= 100


def test_tail_notice_and_full_output_path() -> None:
    text = "\n".join(f"out {i}" for i in range(1, 50001))
    out = truncate_tail(text, full_output_path="/tmp/run.log")
    assert out.notice == "[Showing lines 48001-50000 of 50000. Full output: /tmp/run.log]"
    assert out.text.startswith("out 48001\n") and out.text.endswith("out 50000")


def test_small_and_empty_inputs() -> None:
    assert truncate_head("").render() == ""
    assert truncate_head("a\nb\n").text == "a\nb"
    assert truncate_tail("").truncated is False
    out = truncate_head("x" * 100, max_tokens=0)
    assert out.render() == "" and out.truncated


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"offset": 0}, "offset must be an int >= 1"),
        ({"offset": 5}, "offset 5 is past the end: the text has 2 lines"),
        ({"max_lines": 0}, "max_lines must be >= 1"),
        ({"max_tokens": -1}, "max_tokens must be >= 0"),
        ({"max_bytes": "10"}, "max_bytes must be an int"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        truncate_head("a\nb", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        truncate_tail(b"bytes")  # type: ignore[arg-type]
