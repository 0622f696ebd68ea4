"""Claude Code sessions as other (mostly newer) Claude Code versions write them.

The fixtures are small entry lists built here, in the shapes real sessions have.
Where each shape was learnt:

- [grpc] the corpus session ``enterprisebench-grpc-metadata-mcp-native.jsonl``
  (Claude Code 2.1): one assistant line per content block sharing
  ``message.id``, chained by ``parentUuid``; each tool_result line's parent is
  the assistant line of its own tool_use (``sourceToolAssistantUUID``), so
  parallel calls fork the uuid tree.
- [attio] the corpus session ``attio-mcp-server-session.jsonl`` (1.0.70):
  ``isMeta`` caveat, ``<command-name>`` and ``<local-command-stdout>`` user
  lines; hook output as ``system`` lines without subtype.
- [cc#31330] anthropics/claude-code#31330: parallel tool results sit off the
  parent chain; [cc#35024]: hook ``progress`` entries fork the chain;
  [cc#22526], [cc#58554]: ``parentUuid`` naming a uuid never written.
- [sdk-notes] notes on the Agent SDK's session reader and on-disk sessions of
  Claude Code 2.1.8x-2.1.25x (a public research note on Claude Code session
  storage): ``attachment`` entries inside the chain; ``compact_boundary`` with
  ``parentUuid: null`` and ``logicalParentUuid``; ``<session>/subagents/
  agent-<id>.jsonl`` with ``isSidechain`` and ``agentId`` on every line, linked
  from the parent by the Agent result's ``toolUseResult.agentId``; state
  records (``mode``, ``permission-mode``, ``ai-title``, ``custom-title``,
  ``agent-name``, ``last-prompt``, ``file-history-snapshot``); ``system``
  subtypes ``turn_duration``, ``local_command``, ``informational``,
  ``api_error``, ``stop_hook_summary``.
- [readers] fixtures of public transcript readers: ``isApiErrorMessage``
  assistant lines (model ``<synthetic>``, text ``API Error: ...``, ``error``,
  ``apiErrorStatus``); ``system`` ``api_error`` retry lines; ``<bash-input>``,
  ``<bash-stdout>``, ``[Request interrupted by user]`` user lines.
- [queued], [preserved], [microcompact], [ide]: Claude Code 2.1 shapes seen by
  public transcript viewers and notes on its session storage: ``queued_command``
  attachments, ``compactMetadata.preservedSegment``, ``microcompact_boundary``
  with ``microcompactMetadata``, the IDE extensions' ``<ide_opened_file>`` and
  ``<ide_selection>`` text blocks (each described where its tests start).
- [api] the ``anthropic`` SDK's types: ``ServerToolUseBlock``,
  ``WebSearchToolResultBlock`` (results with ``encrypted_content``),
  ``RedactedThinkingBlock`` (opaque ``data``), ``DocumentBlockParam``, beta
  ``MCPToolUseBlock`` / ``MCPToolResultBlock``.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, Transcript, tool_pairs
from lab.core.summarizers.rules import first_user_request
from lab.core.validate import anthropic_problems
from lab.formats.claude import claude_code, claude_code_import
from lab.formats import detect, dump
from tests.builders import message_shapes
from tests.conftest import corpus_path

ATTIO = corpus_path("claude-code/attio-mcp-server-session.jsonl")

_AUTO: Any = object()


class Log:
    """Entries as Claude Code 2.x writes them: each names the one before it unless told otherwise."""

    def __init__(self, prefix: str = "e", *, cwd: str = "/work/repo", hour: int = 10, **common: Any) -> None:
        self.prefix = prefix
        self.hour = hour
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None
        self.n = 0
        self.common = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": "sess-1", "version": "2.1.30", **common}

    def _add(self, kind: str, parent: Any, fields: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        uuid = f"{self.prefix}{self.n:03d}"
        entry = {"parentUuid": self.last if parent is _AUTO else parent, **self.common, "type": kind, "uuid": uuid}
        entry["timestamp"] = f"2026-03-01T{self.hour:02d}:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
        entry.update(fields)
        self.lines.append(entry)
        self.last = uuid
        return entry

    def user(self, content: Any, parent: Any = _AUTO, **extra: Any) -> dict[str, Any]:
        return self._add("user", parent, {"message": {"role": "user", "content": content}, **extra})

    def part(self, api_id: str, block: dict[str, Any], parent: Any = _AUTO, **extra: Any) -> dict[str, Any]:
        """One content block of API message ``api_id`` ([grpc]: one line per block)."""
        message = {"model": "claude-sonnet-4-6", "id": api_id, "type": "message", "role": "assistant", "content": [block]}
        message["usage"] = {"input_tokens": 3, "output_tokens": 10, "cache_read_input_tokens": 100}
        return self._add("assistant", parent, {"message": message, "requestId": f"req_{api_id}", **extra})

    def text(self, api_id: str, text: str, **kw: Any) -> dict[str, Any]:
        return self.part(api_id, {"type": "text", "text": text}, **kw)

    def use(self, api_id: str, tool_id: str, name: str = "Read", **kw: Any) -> dict[str, Any]:
        return self.part(api_id, {"type": "tool_use", "id": tool_id, "name": name, "input": {"file_path": f"/work/repo/{tool_id}.py"}}, **kw)

    def result(self, tool_id: str, use_entry: dict[str, Any], content: Any = "ok", **extra: Any) -> dict[str, Any]:
        """A tool result whose parent is the line of its own tool_use ([grpc], [cc#31330])."""
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        extra.setdefault("toolUseResult", {"stdout": "ok"})
        return self.user([block], parent=use_entry["uuid"], sourceToolAssistantUUID=use_entry["uuid"], **extra)

    def other(self, kind: str, parent: Any = _AUTO, **fields: Any) -> dict[str, Any]:
        """A chain entry that makes no message (attachment, progress, system)."""
        return self._add(kind, parent, fields)

    def state(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A state record: no uuid, no parent ([sdk-notes])."""
        entry = {"type": kind, "sessionId": "sess-1", **fields}
        self.lines.append(entry)
        return entry


def _write(tmp_path: Path, lines: list[dict[str, Any]], name: str = "session.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    return p


def _read(tmp_path: Path, lines: list[dict[str, Any]], name: str = "session.jsonl") -> Transcript:
    return claude_code.read(_write(tmp_path, lines, name))


def _parallel_turn(log: Log, api_id: str, tools: list[str], prompt: str | None = "go") -> None:
    """A prompt, then thinking, text and parallel tool calls of one API message, then their results."""
    if prompt is not None:
        log.user(prompt)
    log.part(api_id, {"type": "thinking", "thinking": "plan", "signature": "sig"})
    log.text(api_id, "Reading the files.")
    uses = [log.use(api_id, t) for t in tools]
    for tool_id, use in zip(tools, uses, strict=True):
        log.result(tool_id, use, f"contents of {tool_id}")
    # The next line names the last result ([grpc] lines 18-20).
    log.last = log.lines[-1]["uuid"]


# --- streaming split ------------------------------------------------------------------------


def test_one_api_message_written_as_one_line_per_block_is_one_message(tmp_path: Path) -> None:
    log = Log()
    _parallel_turn(log, "msg_A", ["t1", "t2", "t3"])
    log.text("msg_B", "Done.")
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "use:t1", "use:t2", "use:t3"]),
        ("user", ["result:t1", "result:t2", "result:t3"]),
        ("assistant", ["text"]),
    ]
    assert anthropic_problems(t.messages) == []
    assert t.notes.skipped == {} and t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []


def test_parallel_results_off_the_chain_are_kept_when_the_file_ends_mid_turn(tmp_path: Path) -> None:
    # The session stopped after the first result: the last line is a fork off the chain, and the
    # second tool_use (a later line of the same API message) still belongs to the turn.
    log = Log()
    log.user("go")
    u1 = log.use("msg_A", "t1")
    log.use("msg_A", "t2")
    log.result("t1", u1)
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["use:t1", "use:t2"]), ("user", ["result:t1"])]
    assert t.notes.unanswered_tool_uses == ["t2"]
    assert "abandoned_branch" not in t.notes.skipped


def test_usage_is_the_last_lines_and_the_timestamp_the_firsts(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    first = log.text("msg_A", "one")
    last = log.text("msg_A", "two")
    last["message"]["usage"] = {"input_tokens": 3, "output_tokens": 99}
    t = _read(tmp_path, log.lines)
    reply = t.messages[1]
    assert reply.usage is not None and reply.usage.output_tokens == 99
    assert reply.timestamp is not None and reply.timestamp.isoformat().startswith(first["timestamp"][:19])


# --- the uuid chain -----------------------------------------------------------------------------


def test_a_rewound_prompt_leaves_an_abandoned_branch_that_is_skipped_and_counted(tmp_path: Path) -> None:
    log = Log()
    log.user("first request")
    a1 = log.text("msg_1", "answer one")
    log.user("second request, first try")
    use = log.use("msg_2", "t1")
    log.result("t1", use)
    log.text("msg_3", "answer to the first try")
    # /rewind to the second prompt: the new prompt hangs off the first answer.
    log.user("second request, edited", parent=a1["uuid"])
    log.text("msg_4", "answer to the edit")
    t = _read(tmp_path, log.lines)
    texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert texts == ["first request", "answer one", "second request, edited", "answer to the edit"]
    assert t.notes.skipped == {"abandoned_branch": 4}
    assert any("1 branch" in w for w in t.notes.warnings)
    assert t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []


def test_editing_the_first_prompt_makes_a_new_root(tmp_path: Path) -> None:
    log = Log()
    log.user("old first prompt")
    log.text("msg_1", "old answer")
    log.user("new first prompt", parent=None)
    log.text("msg_2", "new answer")
    t = _read(tmp_path, log.lines)
    assert [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)] == ["new first prompt", "new answer"]
    assert t.notes.skipped == {"abandoned_branch": 2}


def test_a_retried_response_replaces_the_partial_one(tmp_path: Path) -> None:
    # The first attempt streamed a tool call, then the stream broke; the retry answers the same prompt.
    log = Log()
    prompt = log.user("go")
    dead = log.use("msg_dead", "t_dead")
    log.result("t_dead", dead, "interrupted")
    log.other("system", subtype="api_error", level="error", error={"status": 529}, retryAttempt=1, maxRetries=10)
    log.text("msg_ok", "Here it is.", parent=prompt["uuid"])
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["text"])]
    assert t.notes.skipped == {"abandoned_branch": 2, "system:api_error": 1}
    assert "t_dead" not in t.notes.unanswered_tool_uses + t.notes.orphan_tool_results


def test_lines_written_before_their_parent_are_put_back_in_order(tmp_path: Path) -> None:
    log = Log()
    _parallel_turn(log, "msg_A", ["t1", "t2"])
    log.text("msg_B", "Done.")
    clean = _read(tmp_path, log.lines, "clean.jsonl")
    lines = list(log.lines)
    # A result line written before the tool_use it answers, the closing text before the last result.
    lines.insert(2, lines.pop(5))
    lines[-2], lines[-3] = lines[-3], lines[-2]
    t = _read(tmp_path, lines)
    assert t.messages == clean.messages
    assert any("parentUuid order" in w for w in t.notes.warnings)


def test_a_parent_missing_from_the_file_continues_with_the_line_before(tmp_path: Path) -> None:
    # [cc#22526]: Claude Code sometimes names a parent it never wrote; the history before it is real.
    log = Log()
    log.user("go")
    log.text("msg_1", "first")
    log.user("more", parent="never-written")
    log.text("msg_2", "second")
    t = _read(tmp_path, log.lines)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert any("1 parentUuid link" in w for w in t.notes.warnings)


def test_compact_boundary_follows_its_logical_parent(tmp_path: Path) -> None:
    log = Log()
    log.user("old request")
    log.text("msg_1", "old answer")
    before = log.last
    boundary = log.other(
        "system",
        parent=None,
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=before,
        compactMetadata={"trigger": "auto", "preTokens": 155000},
    )
    log.user("This session is being continued from a previous conversation...", parent=boundary["uuid"], isCompactSummary=True)
    log.text("msg_2", "continuing")
    use = log.use("msg_2", "t1")
    log.use("msg_2", "t2")
    log.result("t1", use)
    t = _read(tmp_path, log.lines)
    assert [m.tag for m in t.messages] == [None, None, "boundary", "summary", None, None]
    assert t.messages[2].boundary is not None and t.messages[2].boundary.tokens_before == 155000
    assert message_shapes(t)[4:] == [("assistant", ["text", "use:t1", "use:t2"]), ("user", ["result:t1"])]
    assert "abandoned_branch" not in t.notes.skipped


def test_a_boundary_whose_logical_parent_is_in_another_file_starts_the_chain(tmp_path: Path) -> None:
    log = Log()
    boundary = log.other("system", parent=None, subtype="compact_boundary", logicalParentUuid="in-the-old-file", compactMetadata={})
    log.user("Summary of the earlier conversation", parent=boundary["uuid"], isCompactSummary=True)
    log.user("next request")
    log.text("msg_1", "ok")
    t = _read(tmp_path, log.lines)
    assert [m.tag for m in t.messages] == ["boundary", "summary", None, None]
    assert t.notes.skipped == {}


def test_progress_forks_do_not_hide_the_tool_result(tmp_path: Path) -> None:
    # [cc#35024]: hook progress lines hang off the tool_use line and the next assistant line names
    # the last of them, leaving the tool_result line on a fork of its own.
    log = Log()
    log.user("go")
    use = log.use("msg_A", "t1", name="Bash")
    p1 = log.other("progress", parent=use["uuid"], data={"type": "hook_progress", "hookEvent": "PreToolUse"}, toolUseID="t1")
    p2 = log.other("progress", parent=p1["uuid"], data={"type": "hook_progress", "hookEvent": "PostToolUse"}, toolUseID="t1")
    log.result("t1", use, "built")
    log.text("msg_B", "Built.", parent=p2["uuid"])
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["use:t1"]), ("user", ["result:t1"]), ("assistant", ["text"])]
    assert t.notes.skipped == {"progress": 2}
    assert anthropic_problems(t.messages) == []


def test_attachments_inside_the_chain_are_walked_through_and_counted(tmp_path: Path) -> None:
    # [sdk-notes] 2.5: the assistant line names the last attachment, not the prompt.
    log = Log()
    prompt = log.user("go")
    log.other("attachment", attachment={"type": "skill_listing", "content": "..."})
    log.other("attachment", attachment={"type": "total_tokens_reminder"})
    log.text("msg_A", "hi")
    log.user("edit of go", parent=prompt["parentUuid"])
    log.text("msg_B", "hello", parent=log.last)
    t = _read(tmp_path, log.lines)
    assert [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)] == ["edit of go", "hello"]
    assert t.notes.skipped == {"attachment": 2, "abandoned_branch": 2}


def test_a_parent_cycle_does_not_hang_the_import(tmp_path: Path) -> None:
    log = Log()
    a = log.user("go")
    b = log.text("msg_1", "x")
    c = log.user("more", parent=b["uuid"])
    a["parentUuid"] = c["uuid"]
    log.text("msg_2", "y", parent=a["uuid"])
    t = _read(tmp_path, log.lines)
    assert len(t.messages) >= 2


def _rewound_first_prompt() -> Log:
    log = Log()
    log.user("old")
    log.text("msg_1", "old answer")
    log.user("new", parent=None)
    log.text("msg_2", "new answer")
    return log


def test_read_entries_reads_a_generator_twice_when_it_must() -> None:
    log = _rewound_first_prompt()
    t = claude_code.read_entries((f"line {i}", e) for i, e in enumerate(log.lines, 1))
    assert [m.id for m in t.messages] == [log.lines[2]["uuid"], log.lines[3]["uuid"]]


def test_entries_without_any_parent_link_keep_their_file_order(tmp_path: Path) -> None:
    # Hand-written entries, or tools that leave parentUuid out: null everywhere is no tree at all.
    log = Log()
    log.user("one", parent=None)
    log.text("msg_1", "two", parent=None)
    log.user("three", parent=None)
    assert [m.role for m in _read(tmp_path, log.lines).messages] == ["user", "assistant", "user"]


def test_duplicate_lines_are_counted_once_in_a_file_read_twice(tmp_path: Path) -> None:
    log = _rewound_first_prompt()
    t = _read(tmp_path, log.lines + [dict(log.lines[2])])
    assert t.notes.skipped == {"abandoned_branch": 2, "duplicate": 1}


def _interleaved_turn(log: Log, api_id: str, tools: list[str], prompt: str) -> None:
    """A(use1) U(result1) A(use2) U(result2): results written while the message still streams."""
    log.user(prompt)
    for tool_id in tools:
        use = log.use(api_id, tool_id)
        log.result(tool_id, use)


def _conversation(rng: random.Random, turns: int) -> Log:
    log = Log()
    for k in range(turns):
        tools = [f"t{k}_{j}" for j in range(rng.randint(0, 3))]
        shape = rng.choice(["parallel", "interleaved", "progress"]) if tools else "plain"
        if shape == "parallel":
            _parallel_turn(log, f"msg_{k}", tools, prompt=f"request {k}")
        elif shape == "interleaved":
            _interleaved_turn(log, f"msg_{k}", tools, f"request {k}")
        elif shape == "progress":
            log.user(f"request {k}")
            log.other("attachment", attachment={"type": "total_tokens_reminder"})
            use = log.use(f"msg_{k}", tools[0], name="Bash")
            hook = log.other("progress", data={"type": "hook_progress"}, toolUseID=tools[0])
            log.result(tools[0], use)
            log.last = hook["uuid"]
        else:
            log.user(f"request {k}")
        log.text(f"msg_{k}b", f"answer {k}")
    return log


def _branch(log: Log, rng: random.Random, parent: str | None, tag: str) -> list[dict[str, Any]]:
    """An abandoned branch: a prompt hanging off ``parent``, an answer, maybe a tool call."""
    # Written before the prompt that replaced it: older, as the leaf Claude Code resumes is the newest.
    side = Log(prefix=f"x{tag}-", hour=9)
    side.user(f"abandoned {tag}", parent=parent)
    if rng.random() < 0.5:
        use = side.use(f"msg_x{tag}", f"tx{tag}")
        side.result(f"tx{tag}", use)
    side.text(f"msg_y{tag}", "abandoned answer")
    return side.lines


def _canon(t: Transcript) -> list[Any]:
    """The messages, with parallel results in any order: the order they finished in is the file's own."""
    out: list[Any] = []
    for m in t.messages:
        if m.content and all(isinstance(b, ToolResultBlock) for b in m.content):
            out.append(("results", sorted(m.content, key=lambda b: b.tool_use_id)))  # type: ignore[union-attr]
        else:
            out.append(m)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), turns=st.integers(1, 5), branches=st.integers(0, 3), shuffles=st.integers(0, 6))
def test_branches_and_line_order_never_change_the_conversation(tmp_path: Path, seed: int, turns: int, branches: int, shuffles: int) -> None:
    rng = random.Random(seed)
    log = _conversation(rng, turns)
    clean = _read(tmp_path, log.lines, "clean.jsonl")
    lines = list(log.lines)
    extra = 0
    prompts = [i for i, e in enumerate(lines) if e["type"] == "user" and isinstance(e["message"]["content"], str)]
    for b in range(branches):
        at = rng.choice(prompts)
        side = _branch(log, rng, lines[at]["parentUuid"], str(b))
        extra += len(side)
        # Written before the prompt that replaced it, as a rewind does.
        lines[at:at] = side
        prompts = [i for i, e in enumerate(lines) if e["type"] == "user" and e["uuid"] in {p["uuid"] for p in log.lines}]
        prompts = [i for i in prompts if isinstance(lines[i]["message"]["content"], str)]
    for _ in range(shuffles):
        # Any line but the leaf may be written out of place.
        i, j = rng.randrange(len(lines) - 1), rng.randrange(len(lines) - 1)
        lines[i], lines[j] = lines[j], lines[i]
    t = _read(tmp_path, lines)
    assert _canon(t) == _canon(clean)
    assert t.notes.skipped.get("abandoned_branch", 0) == extra
    assert anthropic_problems(t.messages) == []
    # The one-pass import is taken only when the chain would change nothing.
    first = claude_code_import.EntryImporter("x")
    for i, e in enumerate(lines):
        first.add(e, f"line {i}")
    if first.jumps == 0:
        assert first.chain is not None and not first.chain.plan().needed


# --- subagents --------------------------------------------------------------------------------


def _subagent_lines(agent: str = "a1f2e3d4c5b6a7980") -> list[dict[str, Any]]:
    # [sdk-notes] 2.9: every line isSidechain with agentId and the parent's sessionId; own chain from null.
    log = Log(prefix="sub", isSidechain=True, agentId=agent, cwd="/work/repo/pkg")
    log.user("Find every caller of parse_config and report their files.")
    use = log.use("msg_s1", "ts1", name="Grep")
    log.result("ts1", use, "src/a.py\nsrc/b.py")
    log.text("msg_s2", "Two callers: src/a.py and src/b.py.")
    return log.lines


def test_a_subagent_file_imports_as_its_own_session(tmp_path: Path) -> None:
    t = _read(tmp_path, _subagent_lines(), "agent-a1f2e3d4c5b6a7980.jsonl")
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert t.sidechains == {}
    assert t.meta.cwd == "/work/repo/pkg"
    assert any("subagent thread a1f2e3d4c5b6a7980" in w for w in t.notes.warnings)
    assert first_user_request(t.messages) == "Find every caller of parse_config and report their files."
    assert anthropic_problems(t.messages) == []


def test_a_subagent_file_is_detected_as_claude_code(tmp_path: Path) -> None:
    assert detect(_write(tmp_path, _subagent_lines(), "agent-x.jsonl")) == "claude_code"


def test_inline_subagent_thread_is_keyed_by_the_call_its_result_names(tmp_path: Path) -> None:
    # The Agent result's toolUseResult.agentId names the thread even when the prompts differ.
    log = Log()
    log.user("look into the config parser")
    call = log.part("msg_A", {"type": "tool_use", "id": "toolu_agent", "name": "Agent", "input": {"prompt": "short prompt"}})
    log.result("toolu_agent", call, "Two callers.", toolUseResult={"agentId": "a1f2e3d4c5b6a7980", "status": "completed"})
    log.text("msg_B", "Done.")
    t = _read(tmp_path, log.lines + _subagent_lines())
    assert list(t.sidechains) == ["toolu_agent"]
    assert len(t.sidechains["toolu_agent"]) == 4
    assert t.meta.cwd == "/work/repo"


# --- text the harness wrote -------------------------------------------------------------------


def test_local_commands_caveats_and_notices_are_tagged_not_the_users_words(tmp_path: Path) -> None:
    log = Log()
    # [attio] lines 197-199; [readers] bash mode and interruption notices.
    log.user([{"type": "text", "text": "Caveat: The messages below were generated by the user while running local commands."}], isMeta=True)
    log.user("<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args></command-args>")
    log.user("<local-command-stdout>Set model to opus</local-command-stdout>")
    log.user("<bash-input>git status</bash-input>")
    log.user("<bash-stdout>nothing to commit</bash-stdout><bash-stderr></bash-stderr>")
    log.other("system", subtype="local_command", content="<command-name>/cost</command-name>", level="info")
    log.user("Fix the flaky date test in tests/test_dates.py")
    log.text("msg_A", "On it.")
    log.user("[Request interrupted by user]")
    log.user("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n<command-args>PR 42</command-args>")
    t = _read(tmp_path, log.lines)
    assert [m.tag for m in t.messages] == ["placeholder"] * 6 + [None, None, "placeholder", None]
    assert first_user_request(t.messages) == "Fix the flaky date test in tests/test_dates.py"
    assert t.messages[5].content == (TextBlock(text="<command-name>/cost</command-name>"),)
    assert any("1 isMeta" in w for w in t.notes.warnings)


@pytest.mark.corpus("claude-code/attio-mcp-server-session.jsonl")
def test_the_corpus_sessions_first_request_is_the_users_not_the_caveat() -> None:
    t = claude_code.read(ATTIO)
    first = first_user_request(t.messages)
    assert first is not None and first.startswith("OK @agent-project-delegator-orchestrator")
    assert sum(m.tag == "placeholder" for m in t.messages) == 12
    assert anthropic_problems(t.messages) == []


def test_api_error_notices_are_skipped_and_counted(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    error = log.part("msg_err", {"type": "text", "text": "API Error: 529 Overloaded"}, isApiErrorMessage=True, error="server_error", apiErrorStatus=529)
    error["message"]["model"] = "<synthetic>"
    log.user("try again")
    log.text("msg_ok", "Done.")
    t = _read(tmp_path, log.lines)
    assert [m.role for m in t.messages] == ["user", "user", "assistant"]
    assert t.notes.skipped == {"api_error_message": 1}
    assert t.meta.model == "claude-sonnet-4-6"


@pytest.mark.parametrize(
    ("fields", "counted"),
    [
        ({"subtype": "turn_duration", "durationMs": 4200}, "system:turn_duration"),
        ({"subtype": "informational", "content": "Switched to Opus", "level": "warning"}, "system:informational"),
        ({"subtype": "api_error", "level": "error", "error": {"status": 503}, "retryAttempt": 1}, "system:api_error"),
        # [microcompact] not a compaction of the history: old tool results cleared from later requests only.
        (
            {
                "subtype": "microcompact_boundary",
                "content": "Context microcompacted",
                "microcompactMetadata": {"trigger": "auto", "preTokens": 90000, "tokensSaved": 30000, "compactedToolIds": ["t1"]},
            },
            "system:microcompact_boundary",
        ),
        ({"subtype": "stop_hook_summary", "hookCount": 1, "hookErrors": []}, "system:stop_hook_summary"),
        ({"content": "PreToolUse:Bash [hook] completed successfully", "level": "info"}, "system"),
    ],
    ids=["turn_duration", "informational", "api_error", "microcompact_boundary", "stop_hook_summary", "hook-output"],
)
def test_system_lines_are_counted_by_subtype(tmp_path: Path, fields: dict[str, Any], counted: str) -> None:
    log = Log()
    log.user("go")
    log.other("system", **fields)
    log.text("msg_A", "ok")
    t = _read(tmp_path, log.lines)
    assert t.notes.skipped == {counted: 1}
    assert [m.role for m in t.messages] == ["user", "assistant"]


def test_state_records_are_counted_and_give_the_title(tmp_path: Path) -> None:
    log = Log()
    log.state("mode", mode="normal")
    log.state("permission-mode", permissionMode="default")
    log.state("custom-title", customTitle="fix dates")
    log.state("agent-name", agentName="fix dates")
    log.state("file-history-snapshot", messageId="m", snapshot={"trackedFileBackups": {}}, isSnapshotUpdate=False)
    log.user("go")
    log.text("msg_A", "ok")
    log.state("ai-title", aiTitle="Fixing flaky date tests")
    log.state("last-prompt", lastPrompt="go", leafUuid=log.last)
    t = _read(tmp_path, log.lines)
    assert t.meta.title == "fix dates"
    assert t.notes.skipped == {
        "mode": 1, "permission-mode": 1, "custom-title": 1, "agent-name": 1, "file-history-snapshot": 1, "ai-title": 1, "last-prompt": 1,
    }  # fmt: skip
    assert detect(_write(tmp_path, log.lines, "state-first.jsonl")) == "claude_code"


def test_ai_title_is_the_title_without_a_custom_one_and_the_last_one_wins(tmp_path: Path) -> None:
    log = Log()
    log.state("summary", summary="old style summary", leafUuid="x")
    log.user("go")
    log.state("ai-title", aiTitle="first guess")
    log.state("ai-title", aiTitle="better title")
    assert _read(tmp_path, log.lines).meta.title == "better title"


def test_cwd_is_the_last_main_thread_working_directory(tmp_path: Path) -> None:
    # A session resumed from another directory stamps the new cwd on later lines ([sdk-notes] 4).
    log = Log(cwd="/work/repo")
    log.user("go")
    log.common["cwd"] = "/work/repo/sub"
    log.text("msg_A", "ok")
    assert _read(tmp_path, log.lines).meta.cwd == "/work/repo/sub"
    # A subagent's lines, written later with their own cwd, are not the main thread's.
    assert _read(tmp_path, log.lines + _subagent_lines()).meta.cwd == "/work/repo/sub"
    no_cwd = [{k: v for k, v in e.items() if k != "cwd"} for e in log.lines]
    assert _read(tmp_path, no_cwd).meta.cwd is None


# --- content blocks -------------------------------------------------------------------------------


def _b64(n: int) -> str:
    return base64.b64encode(b"%PDF" + b"\0" * (n - 4)).decode()


def test_documents_become_markers_without_their_bytes(tmp_path: Path) -> None:
    pdf = _b64(2000)
    log = Log()
    log.user(
        [
            {"type": "text", "text": "Summarise this"},
            {"type": "document", "title": "spec.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}},
        ]
    )
    use = log.use("msg_A", "t1")
    doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}}
    log.result("t1", use, [{"type": "text", "text": "PDF file read"}, doc])
    log.user([{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain words"}, "title": "notes.txt"}])
    t = _read(tmp_path, log.lines)
    assert t.messages[0].content[1] == TextBlock(text="[document: spec.pdf, application/pdf, 2000 bytes]")
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "PDF file read\n[document: application/pdf, 2000 bytes]"
    assert t.messages[3].content == (TextBlock(text="[document: notes.txt]\nplain words"),)
    assert pdf not in json.dumps(dump(t))
    assert t.notes.skipped == {}


def test_images_in_user_content_and_in_tool_results(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 60).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    log = Log()
    log.user([{"type": "text", "text": "what is this?"}, image])
    use = log.use("msg_A", "t1")
    log.result("t1", use, [image])
    t = _read(tmp_path, log.lines)
    assert isinstance(t.messages[0].content[1], ImageBlock) and t.messages[0].content[1].size_bytes == 64
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "[image: image/png, 64 bytes]"


def test_server_tool_calls_stay_in_the_assistant_message_as_text(tmp_path: Path) -> None:
    log = Log()
    log.user("what changed in Python 3.13?")
    log.part("msg_A", {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "python 3.13 changes"}})
    results = [
        {
            "type": "web_search_result",
            "title": "What's New In Python 3.13",
            "url": "https://docs.python.org/3.13/whatsnew/3.13.html",
            "encrypted_content": "SECRETBLOB",
        }
    ]
    log.part("msg_A", {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": results})
    log.part("msg_A", {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "docs", "input": {"q": "gil"}})
    log.part("msg_A", {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False, "content": [{"type": "text", "text": "free-threaded build"}]})
    log.text("msg_A", "A free-threaded build, among others.")
    t = _read(tmp_path, log.lines)
    reply = t.messages[1]
    assert [b.type for b in reply.content] == ["text"] * 5
    texts = [b.text for b in reply.content if isinstance(b, TextBlock)]
    assert texts[0] == '[server_tool_use web_search: {"query": "python 3.13 changes"}]'
    assert "What's New In Python 3.13 https://docs.python.org/3.13/whatsnew/3.13.html" in texts[1]
    assert texts[2].startswith("[mcp_tool_use docs lookup:") and "free-threaded build" in texts[3]
    assert "SECRETBLOB" not in json.dumps(dump(t))
    assert tool_pairs(t.messages) == {} and anthropic_problems(t.messages) == []


def test_redacted_thinking_is_a_marker_never_exported(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    log.part("msg_A", {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})
    log.text("msg_A", "ok")
    t = _read(tmp_path, log.lines)
    assert t.messages[1].content[0] == ThinkingBlock(thinking="[redacted thinking]")
    body = dump(t, to="anthropic")
    assert "EmwKAhgBEgy3va3pzix" not in json.dumps(body)
    assert body["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_unknown_blocks_are_dropped_and_counted(tmp_path: Path) -> None:
    log = Log()
    log.user([{"type": "text", "text": "go"}, {"type": "container_upload", "file_id": "file_1"}])
    t = _read(tmp_path, log.lines)
    assert t.notes.skipped == {"block:container_upload": 1}
    assert t.messages[0].content == (TextBlock(text="go"),)


# --- messages sent while the agent worked -----------------------------------------------------
# [queued] Claude Code 2.1.x: a message typed while a turn runs and taken into it is written as an
# ``attachment`` entry of type ``queued_command`` (``prompt``, ``commandMode``, ``origin.kind``), with
# no user entry of its own (transcript readers and viewers that show it: they read it as the user's
# input); task notifications of background agents come the same way, ``commandMode: task-notification``.


def _queued(log: Log, prompt: Any, *, mode: str = "prompt", origin: str | None = "human", **kw: Any) -> dict[str, Any]:
    attachment: dict[str, Any] = {"type": "queued_command", "prompt": prompt, "commandMode": mode}
    if origin is not None:
        attachment["origin"] = {"kind": origin}
    return log.other("attachment", attachment=attachment, **kw)


def _replays_cleanly(t: Transcript) -> None:
    import lab

    report = lab.replay(t, "lab", window=32_000)
    assert report.invalid_requests == 0, [r.problems for r in report.rows if r.problems][:1]
    assert report.first_request_kept is True and all(r.first_request_kept for r in report.rows)


def test_a_message_queued_mid_turn_is_the_users_message_after_the_results(tmp_path: Path) -> None:
    log = Log()
    _parallel_turn(log, "msg_A", ["t1", "t2"], prompt="Fix the date test")
    _queued(log, "also update the changelog")
    log.text("msg_B", "Done, and the changelog too.")
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "use:t1", "use:t2"]),
        ("user", ["result:t1", "result:t2"]),
        ("user", ["text"]),
        ("assistant", ["text"]),
    ]
    assert t.messages[3].content == (TextBlock(text="also update the changelog"),)
    assert t.messages[3].tag is None and t.messages[3].id == log.lines[-2]["uuid"]
    assert "attachment" not in t.notes.skipped
    assert any("1 queued_command" in w for w in t.notes.warnings)
    assert anthropic_problems(t.messages) == []
    _replays_cleanly(t)


def test_a_message_queued_before_the_results_of_its_turn_waits_for_them(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    use = log.use("msg_A", "t1")
    _queued(log, "and t2 please")
    log.result("t1", use)
    log.last = log.lines[-1]["uuid"]
    log.text("msg_B", "ok")
    t = _read(tmp_path, log.lines)
    assert message_shapes(t) == [("user", ["text"]), ("assistant", ["use:t1"]), ("user", ["result:t1"]), ("user", ["text"]), ("assistant", ["text"])]
    assert anthropic_problems(t.messages) == []
    _replays_cleanly(t)


def test_a_queued_message_at_the_end_of_the_file_is_kept(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    log.use("msg_A", "t1")
    _queued(log, "stop after this one")
    t = _read(tmp_path, log.lines)
    assert message_shapes(t)[-1] == ("user", ["text"])
    assert t.notes.unanswered_tool_uses == ["t1"]


def test_queued_notifications_are_tagged_and_images_kept(tmp_path: Path) -> None:
    log = Log()
    log.user("start the background build")
    log.text("msg_A", "Started.")
    _queued(
        log,
        "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>",
        mode="task-notification",
        origin="task-notification",
    )
    log.text("msg_B", "The build finished.")
    png = base64.b64encode(b"\x89PNG" + b"\0" * 60).decode()
    _queued(log, [{"type": "text", "text": "look at this"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}])
    # An older line: no origin, only the prompt mode.
    _queued(log, "and this", origin=None)
    _queued(log, "", origin=None)
    log.other("attachment", attachment={"type": "queued_command", "prompt": None})
    t = _read(tmp_path, log.lines)
    assert [m.tag for m in t.messages] == [None, None, "placeholder", None, None, None]
    assert isinstance(t.messages[4].content[1], ImageBlock) and t.messages[4].content[1].size_bytes == 64
    assert t.messages[5].content == (TextBlock(text="and this"),)
    assert t.notes.skipped == {"attachment:queued_command": 2}
    assert first_user_request(t.messages) == "start the background build"


def test_queued_attachments_read_as_dicts_import_the_same(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    log.text("msg_A", "ok")
    _queued(log, "next")
    # A line whose content the Entry cannot take goes the dict way (entry_of).
    odd = log.user([{"type": "text", "text": "x"}, "stray"])
    assert odd
    from_lines = _read(tmp_path, log.lines)
    from_dicts = claude_code.read_entries([(f"line {i}", e) for i, e in enumerate(log.lines, 1)])
    assert [m.content for m in from_lines.messages] == [m.content for m in from_dicts.messages]
    assert from_dicts.messages[2].content == (TextBlock(text="next"),)


# --- the IDE extensions -----------------------------------------------------------------------
# [ide] the VS Code extension sends what the editor shows as text blocks of their own before the
# user's text: ``<ide_opened_file>`` and ``<ide_selection>`` (public issue threads quoting them).


def test_ide_notes_beside_the_users_text_keep_it_the_users_message(tmp_path: Path) -> None:
    log = Log()
    opened = "<ide_opened_file>The user opened the file /work/repo/app.py in the IDE. This may or may not be related to the current task.</ide_opened_file>"
    selected = "<ide_selection>The user selected the lines 3 to 4 from /work/repo/app.py:\ndef f():\n    return 1\n\nThis may or may not be related to the current task.</ide_selection>"
    log.user([{"type": "text", "text": opened}, {"type": "text", "text": selected}])
    log.user([{"type": "text", "text": opened}, {"type": "text", "text": "Why does f return 1?"}])
    log.text("msg_A", "Because it is written so.")
    t = _read(tmp_path, log.lines)
    assert [m.tag for m in t.messages] == ["placeholder", None, None]
    assert t.messages[1].content == (TextBlock(text=opened), TextBlock(text="Why does f return 1?"))
    assert first_user_request(t.messages) is not None and "Why does f return 1?" in first_user_request(t.messages)  # type: ignore[operator]
    _replays_cleanly(t)


# --- usage as the API writes it today ---------------------------------------------------------


def test_usage_with_the_nested_cache_and_server_tool_counts_reads_its_totals(tmp_path: Path) -> None:
    log = Log()
    log.user("go")
    entry = log.text("msg_A", "ok")
    entry["message"]["usage"] = {
        "input_tokens": 4,
        "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 20000,
        "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1000},
        "output_tokens": 77,
        "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0},
        "service_tier": "standard",
    }
    t = _read(tmp_path, log.lines)
    usage = t.messages[1].usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (4, 77, 20000, 1500)


# --- a compaction that kept recent messages -----------------------------------------------------
# [preserved] Claude Code 2.1 (partial and session-memory compaction): ``compactMetadata.preservedSegment``
# names the messages kept verbatim (``headUuid`` .. ``tailUuid``) and the ``anchorUuid`` (the summary, or
# the boundary) Claude Code relinks the head to when it loads the file; the kept messages stay where
# they were written, before the boundary, and the next message names the tail as its parent (public
# notes on Claude Code's session storage, and transcript viewers' fixtures).


def _preserving_compaction(log: Log, *, anchor: str = "summary") -> tuple[str, str]:
    log.user("first task")
    log.text("msg_A", "done A")
    head = log.user("second task")["uuid"]
    tail = log.text("msg_B", "done B")["uuid"]
    segment = {"headUuid": head, "anchorUuid": "", "tailUuid": tail}
    meta = {"trigger": "auto", "preTokens": 150000, "preservedSegment": segment}
    boundary = log.other("system", parent=None, subtype="compact_boundary", content="Conversation compacted", logicalParentUuid=tail, compactMetadata=meta)
    summary = log.user(
        "This session is being continued from a previous conversation. Summary: task one done.", isCompactSummary=True, isVisibleInTranscriptOnly=True
    )
    segment["anchorUuid"] = summary["uuid"] if anchor == "summary" else boundary["uuid"]
    log.user("third task", parent=tail)
    log.text("msg_C", "done C")
    return head, tail


@pytest.mark.parametrize("anchor", ["summary", "boundary"])
def test_messages_a_compaction_kept_follow_its_summary(tmp_path: Path, anchor: str) -> None:
    log = Log()
    head, tail = _preserving_compaction(log, anchor=anchor)
    t = _read(tmp_path, log.lines)
    texts = [m.content[0].text for m in t.messages]  # type: ignore[union-attr]
    assert [m.tag for m in t.messages] == [None, None, "boundary", "summary", None, None, None, None]
    assert texts[:2] == ["first task", "done A"] and texts[4:] == ["second task", "done B", "third task", "done C"]
    boundary = t.messages[2].boundary
    assert boundary is not None and (boundary.preserved_first_id, boundary.preserved_last_id) == (head, tail)
    assert (boundary.trigger, boundary.tokens_before) == ("auto", 150000)
    assert "abandoned_branch" not in t.notes.skipped
    assert anthropic_problems(t.messages) == []
    _replays_cleanly(t)


def test_a_kept_segment_is_sent_after_the_summary_when_the_compaction_is_kept(tmp_path: Path) -> None:
    import lab
    from lab.replayer.recorded import apply_recorded

    log = Log()
    _preserving_compaction(log)
    t = _read(tmp_path, log.lines)
    undone, found, _ = apply_recorded(t, "undo")
    assert [c.action for c in found] == ["undone"]
    assert [m.content[0].text for m in undone.messages] == ["first task", "done A", "second task", "done B", "third task", "done C"]  # type: ignore[union-attr]
    report = lab.replay(t, "lab", window=32_000, recorded_compactions="keep")
    assert report.invalid_requests == 0


# --- subagent files beside the session ----------------------------------------------------------
# [sdk-notes] 2.9: Claude Code 2.1 writes each subagent's entries to ``<session>/subagents/agent-<id>.jsonl``,
# not into the session file; the parent's Agent result names it in ``toolUseResult.agentId``.


def _one_turn_agent(agent: str, asked: str, answer: str, **common: Any) -> list[dict[str, Any]]:
    """A subagent's file of one request and its answer (a side request, or another session's agent)."""
    log = Log(prefix=f"{agent}-", isSidechain=True, agentId=agent, **common)
    log.user(asked)
    log.text(f"msg_{agent}", answer)
    return log.lines


def _session_with_agent_call(tmp_path: Path) -> Path:
    log = Log()
    log.user("look into the config parser")
    call = log.part("msg_A", {"type": "tool_use", "id": "toolu_agent", "name": "Agent", "input": {"prompt": "short prompt"}})
    log.result("toolu_agent", call, "Two callers.", toolUseResult={"agentId": "a1f2e3d4c5b6a7980", "status": "completed"})
    log.text("msg_B", "Done.")
    return _write(tmp_path, log.lines, "0b5c-session.jsonl")


def test_subagent_files_beside_the_session_are_its_sidechains(tmp_path: Path) -> None:
    path = _session_with_agent_call(tmp_path)
    folder = tmp_path / "0b5c-session" / "subagents"
    folder.mkdir(parents=True)
    _write(folder, _subagent_lines(), "agent-a1f2e3d4c5b6a7980.jsonl")
    # A side request (the compaction or prompt-suggestion agents) with no Agent call to name it.
    _write(folder, _one_turn_agent("acompact-77aa", "Summarize the conversation so far.", "Summary: the config parser has two callers."), "agent-acompact-77aa.jsonl")
    (folder / "agent-a1f2e3d4c5b6a7980.meta.json").write_text("{}", encoding="utf-8")
    t = claude_code.read(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert sorted(t.sidechains) == ["acompact-77aa", "toolu_agent"]
    assert [m.role for m in t.sidechains["toolu_agent"]] == ["user", "assistant", "user", "assistant"]
    assert t.meta.cwd == "/work/repo" and t.notes.orphan_tool_results == []
    assert "duplicate" not in t.notes.skipped
    _replays_cleanly(t)


def test_claude_code_2_0_agent_files_beside_the_session_are_its_sidechains(tmp_path: Path) -> None:
    # Claude Code 2.0 wrote agent-<id>.jsonl into the project folder itself, beside every session of the
    # project: each line names its parent's sessionId, which tells this session's apart from the others'.
    path = _session_with_agent_call(tmp_path)
    _write(tmp_path, _subagent_lines(), "agent-a1f2e3d4c5b6a7980.jsonl")
    _write(tmp_path, _one_turn_agent("b0b0", "Someone else's subagent.", "Not this session's.", sessionId="another-session"), "agent-b0b0.jsonl")
    (tmp_path / "agent-junk.jsonl").write_text("{not json\n", encoding="utf-8")
    t = claude_code.read(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert list(t.sidechains) == ["toolu_agent"] and len(t.sidechains["toolu_agent"]) == 4
    assert not any("Someone else" in str(m.content) for thread in t.sidechains.values() for m in thread)
    # The agent file itself still imports as its own session.
    assert claude_code.read(tmp_path / "agent-a1f2e3d4c5b6a7980.jsonl").sidechains == {}
    _replays_cleanly(t)


def test_a_damaged_subagent_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _session_with_agent_call(tmp_path)
    folder = tmp_path / "0b5c-session" / "subagents"
    folder.mkdir(parents=True)
    lines = "".join(json.dumps(e) + "\n" for e in _subagent_lines())
    (folder / "agent-a1f2e3d4c5b6a7980.jsonl").write_text(lines.replace("\n", "\n{not json\n", 1), encoding="utf-8")
    (folder / "agent-empty.jsonl").write_text("", encoding="utf-8")
    t = claude_code.read(path)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert any("agent-a1f2e3d4c5b6a7980.jsonl not read past line 1" in w for w in t.notes.warnings)
    assert any("agent-empty.jsonl" in w for w in t.notes.warnings)
    assert list(t.sidechains) == ["toolu_agent"] and len(t.sidechains["toolu_agent"]) == 1


def test_a_tool_reference_result_is_the_loaded_tools_name(tmp_path: Path) -> None:
    # [api] the tool search tool answers with tool_reference blocks naming deferred tools.
    log = Log()
    log.user("open an issue")
    use = log.use("msg_A", "t1", name="ToolSearch")
    refs = [{"type": "tool_reference", "tool_name": "mcp__github__create_issue"}, {"type": "tool_reference", "tool_name": "mcp__github__list_issues"}]
    log.result("t1", use, refs)
    # The same shape read the dict way (a stray string beside the blocks).
    log.result("t1b", use, [*refs[:1], "note"])
    t = _read(tmp_path, log.lines)
    results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert results[0].content == "[tool reference: mcp__github__create_issue]\n[tool reference: mcp__github__list_issues]"
    assert results[1].content == "[tool reference: mcp__github__create_issue]\nnote"


def test_tool_results_sent_as_previews_keep_their_full_output_and_are_warned(tmp_path: Path) -> None:
    # [preserved]'s storage notes: a result over the per-message budget is saved to disk and the model
    # sees a preview; a content-replacement record holds that exact text, the tool_result the full output.
    log = Log()
    log.user("dump the log")
    use = log.use("msg_A", "t1", name="Bash")
    log.result("t1", use, "line\n" * 20000)
    preview = "<persisted-output>\nOutput too large (100KB). Full output saved to: /tmp/t1.txt\n</persisted-output>"
    log.state("content-replacement", replacements=[{"kind": "tool-result", "toolUseId": "t1", "replacement": preview}, {"kind": "other"}])
    log.text("msg_B", "The log is long.")
    t = _read(tmp_path, log.lines)
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "line\n" * 20000
    assert t.notes.skipped == {"content-replacement": 1}
    assert any("1 tool result(s) were sent to the model as a saved-to-disk preview" in w for w in t.notes.warnings)


# --- a file written out of order ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_a_shuffled_file_keeps_the_whole_conversation_and_says_its_order_was_rebuilt(tmp_path: Path, seed: int) -> None:
    # Every line moved, the last one too: before, only the chain ending on the last line was kept (16 of 48).
    log = _conversation(random.Random(seed), 8)
    clean = _read(tmp_path, log.lines, "clean.jsonl")
    lines = list(log.lines)
    random.Random(seed + 100).shuffle(lines)
    if lines == log.lines:
        lines.reverse()
    t = _read(tmp_path, lines)
    assert _canon(t) == _canon(clean)
    assert anthropic_problems(t.messages) == []
    assert any("put back in parentUuid order" in w for w in t.notes.warnings)


def test_a_shuffled_file_resumes_at_the_newest_leaf_not_the_last_line(tmp_path: Path) -> None:
    log = Log()
    _parallel_turn(log, "msg_A", ["t1"], prompt="first request")
    log.text("msg_B", "done with the first")
    fork = log.lines[-1]["uuid"]
    log.user("second request")
    log.text("msg_C", "done with the second")
    # An abandoned branch off the same point, older than the conversation's end.
    side = Log(prefix="x-", hour=9)
    side.user("rewound request", parent=fork)
    side.text("msg_X", "abandoned answer")
    lines = side.lines + log.lines
    # The conversation's leaf first, a parallel result of the first turn last: no line order to trust.
    leaf = lines.pop()
    lines.insert(0, leaf)
    lines.append(lines.pop(lines.index(next(e for e in lines if e["uuid"] == fork))))
    t = _read(tmp_path, lines)
    texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert texts[0] == "first request"
    assert texts[-2:] == ["second request", "done with the second"]
    assert "rewound request" not in texts
    assert t.notes.skipped.get("abandoned_branch", 0) == 2
    first = claude_code_import.EntryImporter("x")
    for i, e in enumerate(lines):
        first.add(e, f"line {i}")
    assert first.chain is not None and first.chain.plan().moved_leaves == 1
