"""Structural fuzzing of every importer: real shapes, damaged, never a crash (issue 11).

Each importer's reader is called directly, not through ``load``: ``load`` turns an
importer's unexpected exception into a ``TranscriptError`` ("importer bug") and would
hide the crash. Whatever the damage, a reader either returns a ``Transcript`` or raises
``TranscriptError``; a ``KeyError``, ``TypeError``, ``AttributeError``, ``ValueError``
(pydantic's ``ValidationError`` is one) or ``RecursionError`` fails the test.

Seeds are real shapes: the sample sessions, the fixtures under ``fixtures/`` and the
module-level documents other test modules build; with ``LAB_CORPUS`` the matching
corpus files too (cut down so that one example reads in milliseconds), else those
tests skip and say why. A
mutation picks any node of the parsed JSON (or any line of a text format) and
deletes it, gives it another JSON type, truncates, duplicates, reorders, splices
in a node from elsewhere in the file, or damages a JSON document held in a string
(tool-call arguments, SSE ``data:`` payloads). JSONL files may also get a line cut
off mid-write or a broken line.

Runs are derandomized, so CI sees the same examples every time. To hunt for
crashes, raise the count and let hypothesis pick fresh examples::

    LAB_FUZZ_EXAMPLES=1000 LAB_FUZZ_RANDOM=1 python -m pytest -q tests/formats/test_fuzz_importers.py
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import Transcript
from lab.errors import TranscriptError
from lab.formats.claude import agent_sdk, anthropic, managed_agents
from lab.formats.editors import aider, cline, continue_dev, copilot_chat, copilot_cli, qwen_code, gemini
from lab.formats.shell_agents import autogen, pydantic_ai, langchain, minicode
from lab.formats.databases import goose, opencode
from lab.formats.http import http_log
from lab.formats.openai import openai_chat, openai_responses
from lab.formats.openhands import openhands, openhands_v1
from lab.formats.openai.codex import read_rollout
from lab.formats.sanity import check
from tests.conftest import SAMPLES, corpus_glob, corpus_id
from tests.formats.test_cursor import kv_seeds as cursor_kv_seeds
from tests.formats.test_cursor import read_kv_json
from tests.formats.test_crush import read_tables_json as crush_read_tables_json
from tests.formats.test_crush import table_seeds as crush_table_seeds
from tests.formats.test_zed import read_thread_json
from tests.formats.test_zed import thread_seeds as zed_thread_seeds

FIXTURES = Path(__file__).parent / "fixtures"
def fuzz_settings(default_examples: int) -> Any:
    """Hypothesis settings of a fuzz module: derandomized and without a database (CI stays stable), unless
    ``LAB_FUZZ_RANDOM=1``; ``LAB_FUZZ_EXAMPLES`` raises the count to hunt."""
    return settings(
        max_examples=int(os.environ.get("LAB_FUZZ_EXAMPLES", str(default_examples))),
        deadline=None,
        derandomize=os.environ.get("LAB_FUZZ_RANDOM") != "1",
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


_SETTINGS = fuzz_settings(40)
# Corpus files are cut to this many records per list and characters per string: the shapes stay,
# an example stays small.
_MAX_LIST = 30
_MAX_STR = 1500


# --- seeds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """One real input. ``kind``: "json" (one document), "jsonl" (a list of records, one a line),
    "text" (a text file) or "folder" (``{relative path: JSON document}``)."""

    name: str
    kind: str
    data: Any


def _shrink(value: Any) -> Any:
    if isinstance(value, str):
        return value[:_MAX_STR]
    if isinstance(value, list):
        return [_shrink(v) for v in value[:_MAX_LIST]]
    if isinstance(value, dict):
        return {k: _shrink(v) for k, v in value.items()}
    return value


def _file_seed(path: Path, *, shrink: bool = False) -> Seed:
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if doc is not None:
        return Seed(path.name, "json", _shrink(doc) if shrink else doc)
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        records = [json.loads(line) for line in lines]
    except ValueError:
        return Seed(path.name, "text", text)
    return Seed(path.name, "jsonl", _shrink(records) if shrink else records)


def _sample(name: str) -> Seed:
    return _file_seed(SAMPLES / name)


def _fixture(relpath: str) -> Seed:
    return _file_seed(FIXTURES / relpath)


def _folder(path: Path) -> Seed:
    files = {p.relative_to(path).as_posix(): json.loads(p.read_text(encoding="utf-8")) for p in sorted(path.rglob("*.json"))}
    return Seed(path.name, "folder", files)


def _codex_seeds() -> list[Seed]:
    from tests.formats import test_codex_rollouts as c
    from tests.formats.test_openai_responses import ROLLOUT

    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    varied = [
        c.meta(instructions="be careful"),
        c.line("turn_context", {"model": "gpt-5-codex", "cwd": "/repo"}),
        c.msg("user", c.ENV),
        c.msg("user", c.AGENTS),
        c.msg("user", "list files"),
        c.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "content": [{"type": "reasoning_text", "text": "x"}]}),
        c.call("c1"),
        c.call("c2", "read", {"path": "a"}, namespace="mcp__docs__"),
        c.output("c2", '{"output": "A", "metadata": {"exit_code": 1, "duration_seconds": 0.1}}'),
        c.output("c1", [{"type": "input_text", "text": "x y"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]),
        c.item({"type": "custom_tool_call", "status": "completed", "call_id": "p1", "name": "apply_patch", "input": patch}),
        c.output("p1", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok", "custom_tool_call_output"),
        c.item({"type": "local_shell_call", "call_id": "s1", "status": "completed", "action": {"type": "exec", "command": ["ls"], "working_directory": "/repo"}}),
        c.output("s1", "a.py"),
        c.item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}}),
        c.event("token_count", info={"last_token_usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 7}}),
        c.line("compacted", {"message": c.SUMMARY_PREFIX + "\nsummary", "replacement_history": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}]}),
        c.event("thread_rolled_back", num_turns=1),
        c.msg("assistant", "Done.", part="output_text", phase="final_answer"),
    ]
    old = [
        {"id": "0199", "timestamp": c.TS, "instructions": "old header"},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
    ]
    return [_sample("codex-rollout-forecast.jsonl"), Seed("rollout", "jsonl", ROLLOUT), Seed("varied", "jsonl", varied), Seed("old", "jsonl", old)]


def _responses_seeds() -> list[Seed]:
    from tests.formats import test_http_log as h

    items = [h.R_USER, h.R_REASON, h.R_CALL, h.R_OUT, h.R_MSG]
    ts_cli = {"session": {"id": "s", "timestamp": "2025-04-01T00:00:00Z", "instructions": "be brief"}, "items": items}
    return [_sample("openai-responses-docs.responses.json"), Seed("input", "json", {"model": "gpt-5", "instructions": "sys", "input": items}), Seed("ts-cli", "json", ts_cli), *_codex_seeds()[:2]]


def _chat_seeds() -> list[Seed]:
    from tests.formats import test_text_commands as tc
    from tests.formats.test_chat_jsonl import OPENAI_LINES

    return [
        _sample("openai-chat-ratelimit.openai.json"),
        _sample("swe-agent-slugify.traj"),
        _sample("mini-swe-agent-duration.traj.json"),
        Seed("swe-text", "json", {"history": tc._swe_history()}),
        Seed("swe-text-1x", "json", {"history": tc._swe_history(message_type=True), "info": {}}),
        Seed("mini-text", "json", {"messages": tc._mini_history(), "info": {"exit_status": "Submitted"}}),
        Seed("bare-list", "json", OPENAI_LINES),
        Seed("lines", "jsonl", OPENAI_LINES),
    ]


def _openai_lines() -> list[Seed]:
    from tests.formats.test_chat_jsonl import EPOCH, OPENAI_LINES

    wrapped = [{"type": "message", "timestamp": EPOCH + i, "message": m} for i, m in enumerate(OPENAI_LINES)]
    return [Seed("openai", "jsonl", OPENAI_LINES), Seed("wrapped", "jsonl", wrapped)]


def _anthropic_lines() -> list[Seed]:
    from tests.formats.test_chat_jsonl import ANTHROPIC_LINES

    mixed = [{"type": "meta", "session": "s"}, *ANTHROPIC_LINES[:3], {"event": "usage", "tokens": 3}, *ANTHROPIC_LINES[3:]]
    return [Seed("anthropic", "jsonl", ANTHROPIC_LINES), Seed("mixed", "jsonl", mixed)]


def _openhands_seeds() -> list[Seed]:
    from tests.formats.test_openhands import EVENTS

    return [_sample("openhands-pagecount.openhands.json"), Seed("events", "json", EVENTS), Seed("output", "jsonl", [{"instance_id": "i1", "history": EVENTS}])]


def _openhands_v1_docs() -> list[Seed]:
    from tests.formats.test_openhands_v1 import EVENTS

    return [Seed("list", "json", EVENTS), Seed("lines", "jsonl", EVENTS), Seed("events", "json", {"events": EVENTS}), Seed("page", "json", {"items": EVENTS, "next_page_id": None})]


def _openhands_v1_folder() -> list[Seed]:
    from tests.formats.test_openhands_v1 import EVENTS

    files = {f"events/event-{i:05d}-{e.get('id', 'x')}.json": e for i, e in enumerate(EVENTS)}
    return [Seed("folder", "folder", {"base_state.json": {"id": "conv"}, **files})]


def _gemini_seeds() -> list[Seed]:
    from tests.formats import test_gemini as g

    recording = {**g.HEADER, "messages": g.MESSAGES}
    log = [g.HEADER, *g.MESSAGES, {"$set": {"lastUpdated": g.TS}}, {"$rewindTo": "g2"}, g.MESSAGES[-1]]
    return [
        Seed("body", "json", g.BODY),
        Seed("snake", "json", g._snake(g.BODY)),
        Seed("contents", "json", g.CONTENTS),
        Seed("history", "json", {"history": g.CONTENTS}),
        Seed("restore", "json", {"clientHistory": g.CONTENTS, "toolCall": {"name": "write_file", "args": {}}}),
        Seed("recording", "json", recording),
        Seed("log", "jsonl", log),
    ]


def _langchain_seeds() -> list[Seed]:
    from tests.formats.test_langchain import PLAIN, SHAPES, as_dict

    return [*(Seed(k, "json", v) for k, v in sorted(SHAPES.items())), Seed("lines", "jsonl", [as_dict(m) for m in PLAIN])]


def _http_seeds() -> list[Seed]:
    from tests.formats import test_http_log as h

    streamed = h._anthropic_log({"body_raw": "".join(h._sse(h._stream_events()))})
    events = h._anthropic_log({"events": [{"event": e["type"], "data": json.dumps(e)} for e in h._stream_events()]})
    chat_raw = "".join(f"data: {json.dumps(c)}\n\n" for c in h._chat_chunks()) + "data: [DONE]\n\n"
    responses = h._responses_log({"events": [{"event": e["type"], "data": json.dumps(e)} for e in h._responses_events(completed=False)]})
    return [
        _sample("claude-trace-sample.jsonl"),
        Seed("anthropic", "jsonl", h._anthropic_log({"body": h._answer(h.A5, h.USAGE[2])})),
        Seed("sse-raw", "jsonl", streamed),
        Seed("sse-events", "jsonl", events),
        Seed("chat-stream", "jsonl", h._chat_log({"body_raw": chat_raw})),
        Seed("responses-stream", "jsonl", responses),
        Seed("compacted", "jsonl", h._compacted_log(long_tail=False)),
        Seed("array", "json", h._chat_log({"body": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}})),
    ]


def _cline_ui() -> list[Seed]:
    return [_fixture("cline/ui_messages.json"), _fixture("cline/roo-task/ui_messages.json"), _sample("cline-sample.ui_messages.json")]


def _cline_folders() -> list[Seed]:
    return [_folder(FIXTURES / "cline" / "task"), _folder(FIXTURES / "cline" / "roo-task")]


def _aider_chat() -> list[Seed]:
    return [_sample("aider-sample.aider.chat.history.md"), Seed("chat", "text", (FIXTURES / "aider" / ".aider.chat.history.md").read_text(encoding="utf-8"))]


def _aider_llm() -> list[Seed]:
    return [Seed("llm", "text", (FIXTURES / "aider" / ".aider.llm.history").read_text(encoding="utf-8"))]


# --- targets --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    id: str
    read: Callable[[Path], Transcript]
    seeds: Callable[[], list[Seed]]
    # The name the file is written under (some readers look at it); a folder seed ignores it.
    filename: str = "input.json"


TARGETS = [
    Target("codex", read_rollout, _codex_seeds, "rollout-2025-10-01.jsonl"),
    Target("openai_responses", openai_responses.read, _responses_seeds),
    Target("openai_chat", openai_chat.read, _chat_seeds),
    Target("message_lines_openai", openai_chat.read_lines, _openai_lines, "log.jsonl"),
    Target("message_lines_anthropic", anthropic.read_lines, _anthropic_lines, "log.jsonl"),
    Target("openhands", openhands.read, _openhands_seeds),
    Target("openhands_v1", openhands_v1.read, _openhands_v1_docs),
    Target("openhands_v1_folder", openhands_v1.read_folder, _openhands_v1_folder),
    Target("gemini", gemini.read, _gemini_seeds, "session-2025-10-18T14-57-abcd1234.json"),
    Target("langchain", langchain.read, _langchain_seeds),
    Target("managed_agents", managed_agents.read, lambda: [*(_fixture(f"managed_agents/{n}") for n in ("session.events.json", "session.events.jsonl", "session.page.json", "session.wrapped.jsonl")), _sample("managed-agents-sample.events.jsonl")]),
    Target("agent_sdk", agent_sdk.read, lambda: [_fixture("agent_sdk/session.stream.jsonl"), _fixture("agent_sdk/session.dataclasses.jsonl"), _sample("claude-agent-sdk-sample.stream.jsonl")], "run.stream.jsonl"),
    Target("http_log", http_log.read, _http_seeds, "log-2025-06-15-15-06-40.jsonl"),
    Target("aider_chat", aider.read_chat_history, _aider_chat, ".aider.chat.history.md"),
    Target("aider_llm", aider.read_llm_history, _aider_llm, ".aider.llm.history"),
    Target("aider", aider.read, lambda: [*_aider_chat(), *_aider_llm()], "history.md"),
    Target("cline_ui", cline.read_ui, _cline_ui, "ui_messages.json"),
    Target("cline_folder", cline.read_folder, _cline_folders),
    Target("minicode", minicode.read, lambda: [_sample("minicode-refactor.minicode.json")]),
    Target("opencode", opencode.read, lambda: [_fixture("opencode/session.export.json"), _fixture("opencode/session.messages.json")]),
    Target("goose", goose.read, lambda: [_fixture("goose/20260101_100000.jsonl"), _fixture("goose/session.export.json")], "20260101_100000.jsonl"),
    Target("continue", continue_dev.read, lambda: [_fixture(f"continue/{n}.json") for n in ("3f1c2e9a-7b5d-4e21-9c1a-0d8e6f4b2a17", "b7a0c6d2-1e4f-4a8b-9d3c-5f2e7a1b0c94")], "3f1c2e9a-7b5d-4e21-9c1a-0d8e6f4b2a17.json"),
    Target("copilot_chat", copilot_chat.read, lambda: [_fixture("copilot_chat/4e8a1c2b-9d3f-4b6e-a7c5-2f1e0d9c8b7a.json"), _fixture("copilot_chat/9f2d7c1e-3b4a-4c5d-8e6f-1a2b3c4d5e6f.jsonl")], "9f2d7c1e-3b4a-4c5d-8e6f-1a2b3c4d5e6f.jsonl"),
    Target("cursor", read_kv_json, lambda: [Seed(n, "json", d) for n, d in cursor_kv_seeds()]),
    Target("zed", read_thread_json, lambda: [Seed(n, "json", d) for n, d in zed_thread_seeds()]),
    Target("crush", crush_read_tables_json, lambda: [Seed(n, "json", d) for n, d in crush_table_seeds()]),
    Target("qwen_code", qwen_code.read, lambda: [_fixture("qwen_code/6d1c9a52-3f0e-4b7a-9e21-8c4d2f1a0b37.jsonl")], "6d1c9a52-3f0e-4b7a-9e21-8c4d2f1a0b37.jsonl"),
    Target("copilot_cli", copilot_cli.read, lambda: [_fixture("copilot_cli/events.jsonl")], "events.jsonl"),
    Target("pydantic_ai", pydantic_ai.read, lambda: [_fixture("pydantic_ai/history.json")], "history.json"),
    Target("autogen", autogen.read, lambda: [_fixture("autogen/agent_state.json"), _fixture("autogen/team_state.json")], "state.json"),
]


@cache
def _seeds(target_id: str) -> tuple[Seed, ...]:
    return tuple(next(t for t in TARGETS if t.id == target_id).seeds())


# --- mutations ------------------------------------------------------------------------------

Path_ = tuple[Any, ...]

_scalar = (
    st.none()
    | st.booleans()
    | st.sampled_from([0, -1, 1, 2**70, -(2**63), 1.5, -0.0, 1e308, float("nan"), "", " ", "x", "user", "assistant", "tool_use", "text", "message", "null", "0", "[]", "{"])
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_junk_keys = st.sampled_from(["type", "role", "content", "id", "text", "name", "input", "arguments", "call_id", "tool_call_id", "parts", "message", "data", "kind", "source"]) | st.text(max_size=4)
_junk = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_junk_keys, inner, max_size=3), max_leaves=8)

# Mutations per example: a few, so that most of the input stays real and reaches deep code.
_MUTATIONS = 4
_OPS = ["delete", "replace", "retype", "truncate", "duplicate", "reorder", "splice", "inner"]


def _nodes(root: Any, limit: int = 4000) -> list[Path_]:
    """Paths of the nodes under ``root`` (not ``root`` itself), depth first, at most ``limit``."""
    out: list[Path_] = []
    stack: list[tuple[Path_, Any]] = [((), root)]
    while stack and len(out) < limit:
        path, value = stack.pop()
        children: Iterator[tuple[Any, Any]]
        if isinstance(value, dict):
            children = iter(value.items())
        elif isinstance(value, list):
            children = iter(enumerate(value))
        else:
            continue
        for key, child in children:
            out.append((*path, key))
            stack.append(((*path, key), child))
    return out


def _get(root: Any, path: Path_) -> Any:
    for key in path:
        root = root[key]
    return root


def _retype(value: Any) -> Any:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _keyed(root: Any, paths: list[Path_]) -> list[Path_]:
    """The paths most worth damaging: object keys holding anything but long text (types, roles, ids, lists)."""
    out = []
    for p in paths:
        if isinstance(p[-1], str):
            value = _get(root, p)
            if not (isinstance(value, str) and len(value) > 40):
                out.append(p)
    return out


def _mutate_once(draw: st.DrawFn, holder: dict[str, Any], depth: int = 0) -> None:
    paths = _nodes(holder)
    # Most nodes are text deep in content; the keys that decide what a record is are a small share.
    keyed = _keyed(holder, paths)
    pool = keyed if keyed and draw(st.integers(0, 9)) < 7 else paths
    path = pool[draw(st.integers(0, len(pool) - 1))]
    parent, key = _get(holder, path[:-1]), path[-1]
    value = parent[key]
    op = draw(st.sampled_from(_OPS))
    if op == "delete" and path != ("root",):
        del parent[key]
    elif op == "replace":
        parent[key] = draw(_junk)
    elif op == "retype":
        parent[key] = _retype(value)
    elif op == "truncate" and isinstance(value, (list, str)):
        parent[key] = value[: draw(st.integers(0, max(0, len(value) - 1)))]
    elif op == "duplicate" and isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        value.insert(draw(st.integers(0, len(value))), copy.deepcopy(value[i]))
    elif op == "reorder" and isinstance(value, list) and len(value) > 1:
        parent[key] = draw(st.permutations(value))
    elif op == "splice":
        donor = paths[draw(st.integers(0, len(paths) - 1))]
        if donor[: len(path)] != path:  # not a node inside the one replaced
            parent[key] = copy.deepcopy(_get(holder, donor))
    elif op == "inner" and isinstance(value, str) and value[:1] in "[{" and depth < 2:
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if isinstance(inner, (dict, list)) and inner:
            box = {"root": inner}
            _mutate_once(draw, box, depth + 1)
            parent[key] = json.dumps(box["root"]) if "root" in box else ""
    else:
        parent[key] = draw(_junk)


@st.composite
def _mutated_json(draw: st.DrawFn, data: Any) -> Any:
    holder = {"root": copy.deepcopy(data)}
    for _ in range(draw(st.integers(1, _MUTATIONS))):
        if "root" not in holder:
            break
        _mutate_once(draw, holder)
    return holder.get("root")


_MARKERS = [
    "#### ",
    "> ",
    "```",
    "```python",
    "<<<<<<< SEARCH",
    "=======",
    ">>>>>>> REPLACE",
    "# aider chat started at 2024-01-01 00:00:00",
    "> Tokens: 1.2k sent, 30 received. Cost: $0.01 message, $0.02 session.",
    "> Applied edit to a.py",
    "TO LLM 2024-01-01T00:00:00.000000",
    "LLM RESPONSE 2024-01-01T00:00:00",
    "-------",
    "SYSTEM ",
    "USER ",
    "ASSISTANT ",
    "a.py",
    "",
]


@st.composite
def _mutated_text(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "prefix", "cut"]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "delete" and lines:
            del lines[i]
        elif op == "duplicate" and lines:
            lines.insert(i, lines[i])
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(_MARKERS)) + draw(st.sampled_from(["", "x", "a.py", " 1", "  "])))
        elif op == "prefix" and lines:
            lines[i] = draw(st.sampled_from(_MARKERS)) + lines[i]
        elif op == "cut" and lines:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


@st.composite
def _inputs(draw: st.DrawFn, target_id: str) -> tuple[str, Any]:
    """One of the target's seeds, by name, and its damaged content."""
    seed = draw(st.sampled_from(_seeds(target_id)))
    return seed.name, draw(_damaged(seed))


@st.composite
def _damaged(draw: st.DrawFn, seed: Seed) -> Any:
    """A seed's content, damaged, ready for ``_write``: a text, or ``{relpath: text}`` for a folder."""
    if seed.kind == "text":
        return draw(_mutated_text(seed.data))
    data = draw(_mutated_json(seed.data))
    if seed.kind == "folder":
        files = data if isinstance(data, dict) else {}
        return {str(k): _dumps(v) for k, v in files.items() if isinstance(k, str) and k.endswith(".json")}
    if seed.kind == "json" or not isinstance(data, list):
        return _dumps(data)
    lines = [_dumps(r) for r in data]
    tail = draw(st.sampled_from(["none", "none", "cut", "broken", "blank"]))
    if tail == "cut" and lines:
        lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
    elif tail == "broken" and lines:
        lines.insert(draw(st.integers(0, len(lines))), '{"type": "x", ')
    elif tail == "blank":
        lines.insert(draw(st.integers(0, len(lines))), "")
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


def _write(root: Path, target: Target, content: Any) -> Path:
    """``content`` as ``target`` reads it: a file, or a folder when it is ``{relpath: text}``."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if isinstance(content, dict):
        for rel, text in content.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        return root
    p = root / target.filename
    p.write_text(content, encoding="utf-8")
    return p


def _only_transcript_errors(target: Target, path: Path) -> None:
    try:
        result = target.read(path)
    except TranscriptError:
        return
    assert isinstance(result, Transcript)
    check(result)  # load() checks every result: the check must not crash either


# --- the tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    # Module scope: hypothesis runs every example in one test call, and a fresh folder per example
    # is made by _write.
    root = Path(tempfile.mkdtemp(prefix="fuzz-importers-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _intact(seed: Seed) -> Any:
    if seed.kind == "text":
        return seed.data
    if seed.kind == "folder":
        return {k: _dumps(v) for k, v in seed.data.items()}
    if seed.kind == "json":
        return _dumps(seed.data)
    return "\n".join(_dumps(r) for r in seed.data) + "\n"


@pytest.mark.parametrize("target", TARGETS, ids=[t.id for t in TARGETS])
def test_every_seed_reads_as_it_is(work: Path, target: Target) -> None:
    # The seeds themselves must import: otherwise the fuzzing below only ever tests the refusal path.
    for seed in _seeds(target.id):
        t = target.read(_write(work / target.id, target, _intact(seed)))
        assert t.messages, f"{target.id}: seed {seed.name} gives no messages"


@pytest.mark.parametrize("target", TARGETS, ids=[t.id for t in TARGETS])
def test_damaged_real_shapes_raise_only_transcript_error(work: Path, target: Target) -> None:
    @_SETTINGS
    @given(case=_inputs(target.id))
    def run(case: tuple[str, Any]) -> None:
        _only_transcript_errors(target, _write(work / target.id, target, case[1]))

    run()


# Corpus folders and the importer that reads them (claude-code/ is fuzzed by test_fuzz.py).
_CORPUS_TARGETS = {"codex": "codex", "openai-chat": "openai_chat", "openhands": "openhands"}
CORPUS_SEEDS = [p for folder in _CORPUS_TARGETS for p in corpus_glob(f"{folder}/*")]


@pytest.mark.parametrize("path", CORPUS_SEEDS, ids=corpus_id)
def test_damaged_corpus_files_raise_only_transcript_error(work: Path, path: Path) -> None:
    target = next(t for t in TARGETS if t.id == _CORPUS_TARGETS[path.parent.name])
    # Cut down (lists to their first records, long text to its start): the shapes stay, an example stays fast.
    seed = _file_seed(path, shrink=True)
    assert target.read(_write(work / target.id, target, _intact(seed))).messages

    @_SETTINGS
    @given(content=_damaged(seed))
    def run(content: Any) -> None:
        _only_transcript_errors(target, _write(work / target.id, target, content))

    run()


def test_mutations_change_the_input() -> None:
    # The fuzzer is only as good as its damage: most examples must differ from their seed.
    seeds = _seeds("managed_agents")
    changed = 0

    @settings(max_examples=30, derandomize=True, database=None, deadline=None)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        nonlocal changed
        seed = data.draw(st.sampled_from(seeds))
        mutated = data.draw(_mutated_json(seed.data))
        changed += _dumps(mutated) != _dumps(seed.data)

    run()
    assert changed >= 20
