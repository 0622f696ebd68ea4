"""Every real transcript in the corpus imports, and exports without losing a tool pair."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import Message, Transcript, tool_pairs
from lab.formats import load
from lab.formats.export import to_anthropic, to_openai
from lab.formats.tool_results import anthropic_tool_id, openai_tool_id
from tests.conftest import CORPUS, CORPUS_FILES, corpus_id

pytestmark = pytest.mark.slow

_loaded: dict[Path, Transcript] = {}


def _load(path: Path) -> Transcript:
    # Each file is imported once for all the checks below.
    if path not in _loaded:
        _loaded[path] = load(path)
    return _loaded[path]


def _threads(t: Transcript) -> dict[str, list[Message]]:
    return {"main": t.messages, **{f"sidechain {k}": v for k, v in t.sidechains.items()}}


def _source_pairs(messages: list[Message]) -> set[str]:
    return {tool_id for tool_id, (use, result) in tool_pairs(messages).items() if use is not None and result is not None}


def _anthropic_pairs(body: dict[str, Any]) -> set[str]:
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    return uses & results


def _openai_pairs(body: dict[str, Any]) -> set[str]:
    uses = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    return uses & results


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_file_loads(path: Path) -> None:
    t = _load(path)
    assert t.messages or t.sidechains
    assert t.meta.source_format != "lab"
    ids = [m.id for thread in _threads(t).values() for m in thread]
    assert len(ids) == len(set(ids)), "message ids must be unique within a transcript"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_file_exports_every_tool_pair(path: Path) -> None:
    t = _load(path)
    for name, messages in _threads(t).items():
        pairs = _source_pairs(messages)
        tools = t.tools if name == "main" else []
        # Ids the API would refuse ('#' for Anthropic, over 40 characters for OpenAI) are rewritten by the export.
        assert _anthropic_pairs(to_anthropic(messages, tools)) >= {anthropic_tool_id(i) for i in pairs}, f"{name}: Anthropic export lost a pair"
        assert _openai_pairs(to_openai(messages, tools)) >= {openai_tool_id(i) for i in pairs}, f"{name}: OpenAI export lost a pair"


@pytest.mark.corpus()
def test_corpus_is_present() -> None:
    # Without a corpus the marker skips this (LAB_REQUIRE_CORPUS=1 fails it). A corpus that lists
    # its files (the shared one's SOURCES.md table) must hold every one, so none is silently untested.
    assert CORPUS is not None
    sources = CORPUS / "SOURCES.md"
    if not sources.is_file():
        pytest.skip(f"{CORPUS} has no SOURCES.md listing its files")
    listed = {cell for cell in re.findall(r"^\| ([^|]+?) \|", sources.read_text(encoding="utf-8"), flags=re.M) if "/" in cell}
    assert listed, "SOURCES.md lists no files"
    assert listed <= {p.relative_to(CORPUS).as_posix() for p in CORPUS_FILES}
