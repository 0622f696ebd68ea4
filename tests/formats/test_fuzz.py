"""Fuzzing the import edge: whatever the bytes, only ``TranscriptError`` escapes.

``load`` has a last-resort wrapper for importer bugs, so the importers owned
here (Claude Code, Anthropic, lab JSON) are also fuzzed directly: they must
raise ``TranscriptError`` on their own, never lean on that wrapper.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import Transcript
from lab.errors import TranscriptError
from lab.formats.claude import anthropic, claude_code
from lab.formats import labjson, load
from tests.conftest import corpus_path

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _corpus_lines(name: str, limit: int) -> list[dict[str, Any]]:
    path = corpus_path(f"claude-code/{name}")
    if not path.exists():
        return [{"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}]
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if len(line) < 20_000:  # keep examples small and fast
                out.append(rec)
            if len(out) >= limit:
                break
    return out


_LINES = _corpus_lines("enterprisebench-grpc-metadata-mcp-native.jsonl", 25) + _corpus_lines("attio-mcp-server-session.jsonl", 25)


def _only_transcript_errors(read: Callable[[Path], Transcript], path: Path) -> None:
    try:
        result = read(path)
    except TranscriptError:
        return
    assert isinstance(result, Transcript)


# --- strategies -------------------------------------------------------------------------------

_scalar = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
_keys = st.sampled_from(
    ["type", "role", "content", "message", "messages", "id", "uuid", "parentUuid", "isSidechain", "tool_use_id", "text", "input", "name", "source", "data", "usage", "system", "tools", "request", "response", "lab_transcript", "isCompactSummary", "subtype", "agentId", "timestamp"]
) | st.text(max_size=6)
_json = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5), max_leaves=25)
_objects = st.dictionaries(_keys, _json, max_size=6)


@st.composite
def _mutated_lines(draw: st.DrawFn) -> str:
    """A few real Claude Code entries, some with a key dropped, a value replaced or the line cut."""
    picks = draw(st.lists(st.sampled_from(_LINES), min_size=1, max_size=4))
    lines = []
    for rec in picks:
        rec = json.loads(json.dumps(rec))
        action = draw(st.sampled_from(["keep", "drop", "replace", "message", "cut"]))
        if action == "drop" and rec:
            rec.pop(draw(st.sampled_from(sorted(rec))))
        elif action == "replace" and rec:
            rec[draw(st.sampled_from(sorted(rec)))] = draw(_json)
        elif action == "message" and isinstance(rec.get("message"), dict):
            rec["message"][draw(st.sampled_from(["content", "id", "usage", "role", "model"]))] = draw(_json)
        text = json.dumps(rec)
        if action == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        lines.append(text)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


# --- load() with anything ---------------------------------------------------------------------


@_SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes(work: Path, data: bytes) -> None:
    p = work / "bytes.bin"
    p.write_bytes(data)
    _only_transcript_errors(load, p)


@_SETTINGS
@given(value=_json, as_lines=st.booleans())
def test_random_json_documents_and_lines(work: Path, value: Any, as_lines: bool) -> None:
    p = work / "doc.json"
    if as_lines and isinstance(value, list):
        p.write_text("\n".join(json.dumps(v) for v in value), encoding="utf-8")
    else:
        p.write_text(json.dumps(value), encoding="utf-8")
    _only_transcript_errors(load, p)


@_SETTINGS
@given(text=_mutated_lines())
def test_mutated_corpus_lines(work: Path, text: str) -> None:
    p = work / "mutated.jsonl"
    p.write_text(text, encoding="utf-8")
    _only_transcript_errors(load, p)
    _only_transcript_errors(claude_code.read, p)


# --- the importers owned here, without load()'s safety net ------------------------------------------


@_SETTINGS
@given(entries=st.lists(_objects, min_size=1, max_size=5), as_array=st.booleans())
def test_claude_code_reader_on_random_entries(work: Path, entries: list[dict[str, Any]], as_array: bool) -> None:
    p = work / "cc.jsonl"
    text = json.dumps(entries) if as_array else "\n".join(json.dumps(e) for e in entries)
    p.write_text(text, encoding="utf-8")
    _only_transcript_errors(claude_code.read, p)


@_SETTINGS
@given(
    messages=st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "x"]), "content": _json}), max_size=4)
    | _json,
    system=_json,
    tools=_json,
    log=st.booleans(),
)
def test_anthropic_reader_on_random_bodies(work: Path, messages: Any, system: Any, tools: Any, log: bool) -> None:
    body = {"model": "m", "system": system, "messages": messages, "tools": tools}
    p = work / "req.json"
    p.write_text(json.dumps(body) + ("\n" + json.dumps({"request": body}) if log else ""), encoding="utf-8")
    _only_transcript_errors(anthropic.read, p)


@_SETTINGS
@given(body=_objects)
def test_lab_reader_on_random_objects(work: Path, body: dict[str, Any]) -> None:
    p = work / "lab.json"
    p.write_text(json.dumps({"lab_transcript": 1, **body}), encoding="utf-8")
    _only_transcript_errors(labjson.read, p)
