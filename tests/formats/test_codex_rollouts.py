"""Codex CLI rollouts as current and older Codex versions write them.

The fixtures are small JSONL written here, in the shapes the Codex sources
give (openai/codex on GitHub):

- codex-rs/protocol/src/models.rs: the ResponseItem variants (message with
  phase, reasoning, local_shell_call with an exec action, function_call with
  namespace, custom_tool_call, web_search_call, image_generation_call,
  tool_search_call/output, ghost_snapshot, compaction) and
  FunctionCallOutputPayload (a string or a list of content items);
- codex-rs/protocol/src/protocol.rs: RolloutLine {timestamp, type, payload},
  RolloutItem, CompactedItem {message, replacement_history?}, EventMsg;
- codex-rs/rollout/src/policy.rs: which event_msg types a rollout keeps;
- codex-rs/core/src/contextual_user_message.rs: the injected user fragments;
- codex-rs/core/src/tools/mod.rs: shell outputs ("Exit code: N" text and the
  {"output", "metadata": {"exit_code"}} JSON);
- codex-rs/core/src/codex/rollout_reconstruction.rs: compaction and
  thread_rolled_back replay on resume;
- codex-rs/core/templates/compact/summary_prefix.md: the summary message prefix;
- codex-rs/core/src/rollout.rs (mid 2025): the bare header line, bare items
  and {"record_type": "state"} lines;
- codex-cli/src/utils/storage/save-rollout.ts: the TypeScript CLI's
  {"session": {...}, "items": [...]} JSON document.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, message_text, tool_pairs
from lab.core.summarizers.rules import first_user_request
from lab.errors import TranscriptError
from lab.formats import detect, load
from lab.formats.openai import openai_responses as resp
from lab.formats.openai.codex import is_injected_context, read_rollout
from lab.formats.jsonio import read_file_head

TS = "2025-10-01T12:00:00.000Z"
ENV = "<environment_context>\n  <cwd>/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n  <shell>zsh</shell>\n</environment_context>"
AGENTS_BODY = "## Repo rules\nRun the tests before you commit."
AGENTS = f"# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n{AGENTS_BODY}\n</INSTRUCTIONS>"
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. You also have "
    "access to the state of the tools that were used by that language model."
)


def _write(tmp_path: Path, records: list[Any], name: str = "rollout.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return p


def line(kind: str, payload: Any) -> dict[str, Any]:
    return {"timestamp": TS, "type": kind, "payload": payload}


def meta(**extra: Any) -> dict[str, Any]:
    payload = {"id": "0199-sess", "timestamp": TS, "cwd": "/repo", "originator": "codex_cli_rs", "cli_version": "0.60.0"}
    return line("session_meta", {**payload, **extra})


def msg(role: str, *texts: str, part: str = "input_text", **extra: Any) -> dict[str, Any]:
    return line("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": t} for t in texts], **extra})


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return line("response_item", payload)


def call(call_id: str, name: str = "shell", args: Any = None, **extra: Any) -> dict[str, Any]:
    arguments = json.dumps(args if args is not None else {"command": ["bash", "-lc", "ls"], "workdir": "/repo"})
    return item({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id, **extra})


def output(call_id: str, out: Any = "ok", kind: str = "function_call_output") -> dict[str, Any]:
    return item({"type": kind, "call_id": call_id, "output": out})


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return line("event_msg", {"type": kind, **fields})


def read(tmp_path: Path, records: list[Any]) -> Transcript:
    return load(_write(tmp_path, records))


def results(t: Transcript) -> list[ToolResultBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]


def uses(t: Transcript) -> list[ToolUseBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]


class TestItemVariants:
    def test_function_calls_pair_with_outputs_by_call_id(self, tmp_path: Path) -> None:
        t = read(tmp_path, [meta(), msg("user", "list files"), call("c1"), call("c2", "read", {"path": "a"}), output("c2", "A"), output("c1", "x y")])
        assert [(u.id, u.name) for u in uses(t)] == [("c1", "shell"), ("c2", "read")]
        assert uses(t)[0].input == {"command": ["bash", "-lc", "ls"], "workdir": "/repo"}
        assert [(r.tool_use_id, r.content) for r in results(t)] == [("c2", "A"), ("c1", "x y")]
        assert len(tool_pairs(t.messages)) == 2 and not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses

    def test_namespaced_function_call_is_named_as_codex_names_it(self, tmp_path: Path) -> None:
        t = read(tmp_path, [call("c1", "search", {"q": "x"}, namespace="mcp__docs__"), output("c1")])
        assert uses(t)[0].name == "mcp__docs__search"

    def test_apply_patch_custom_tool_call_keeps_its_freeform_input(self, tmp_path: Path) -> None:
        patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
        recs = [
            item({"type": "custom_tool_call", "status": "completed", "call_id": "p1", "name": "apply_patch", "input": patch}),
            output("p1", '{"output":"Success. Updated the following files:\\nM a.py\\n","metadata":{"exit_code":0,"duration_seconds":0.0}}', "custom_tool_call_output"),
            item({"type": "custom_tool_call", "call_id": "p2", "name": "apply_patch", "input": patch}),
            output("p2", [{"type": "input_text", "text": "patch rejected"}], "custom_tool_call_output"),
        ]
        t = read(tmp_path, recs)
        assert [(u.name, u.input) for u in uses(t)] == [("apply_patch", {"input": patch})] * 2
        assert [r.is_error for r in results(t)] == [False, False]
        assert results(t)[1].content == "patch rejected"

    def test_local_shell_call_becomes_a_shell_call_with_command_array_and_workdir(self, tmp_path: Path) -> None:
        action = {"type": "exec", "command": ["bash", "-lc", "cat a.py"], "timeout_ms": 10000, "working_directory": "/repo/src", "env": None, "user": None}
        recs = [item({"type": "local_shell_call", "call_id": "s1", "status": "completed", "action": action}), output("s1", "print(1)")]
        t = read(tmp_path, recs)
        use = uses(t)[0]
        assert use.name == "local_shell"
        assert use.input == {"command": ["bash", "-lc", "cat a.py"], "timeout_ms": 10000, "workdir": "/repo/src"}
        assert tool_pairs(t.messages) == {"s1": (0, 1)}

    @pytest.mark.parametrize(
        ("out", "text", "is_error"),
        [
            ("plain text", "plain text", False),
            ([{"type": "input_text", "text": "caption"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}], "caption\n[image]", False),
            ({"content": "denied", "success": False}, "denied", True),
            ({"content": "fine", "success": True}, "fine", False),
            ('{"output":"boom\\n","metadata":{"exit_code":1,"duration_seconds":0.2}}', None, True),
            ('{"output":"ok\\n","metadata":{"exit_code":0,"duration_seconds":0.2}}', None, False),
            ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nNo such file", None, True),
            ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nfine", None, False),
            ('{"content":[{"type":"text","text":"nope"}],"isError":true}', None, True),
            ("Exit code: 1 is what the script prints", None, False),
            (json.dumps({"output": 'log: "metadata":{"exit_code":1}', "metadata": {"exit_code": 0}}, separators=(",", ":")), None, False),
            (None, "", False),
        ],
        ids=["string", "content-items", "success-false", "success-true", "json-exit-1", "json-exit-0", "freeform-exit-2",
             "freeform-exit-0", "mcp-is-error", "exit-words-in-text", "exit-words-in-json-output", "null"],
    )
    def test_output_payload_shapes(self, tmp_path: Path, out: Any, text: str | None, is_error: bool) -> None:
        t = read(tmp_path, [call("c1"), output("c1", out)])
        result = results(t)[0]
        # the text is what the model saw; only the error flag is derived
        assert result.content == (text if text is not None else out)
        assert result.is_error is is_error

    def test_reasoning_summary_raw_content_and_encrypted_only(self, tmp_path: Path) -> None:
        recs = [
            msg("user", "go"),
            item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Plan**"}], "encrypted_content": "gAAA"}),
            item({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "raw thought"}], "encrypted_content": None}),
            item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
            msg("assistant", "Done.", part="output_text", phase="final_answer", end_turn=True),
        ]
        t = read(tmp_path, recs)
        turn = t.messages[1]
        assert [type(b) for b in turn.content] == [ThinkingBlock, ThinkingBlock, TextBlock]
        assert [b.thinking for b in turn.content[:2]] == ["**Plan**", "raw thought"]  # type: ignore[union-attr]
        assert t.notes.skipped == {"reasoning:encrypted": 1}

    def test_tool_search_pairs_when_client_side_and_is_counted_otherwise(self, tmp_path: Path) -> None:
        recs = [
            item({"type": "tool_search_call", "call_id": "ts1", "execution": "client", "arguments": {"query": "calendar"}}),
            item({"type": "tool_search_output", "call_id": "ts1", "status": "completed", "execution": "client", "tools": [{"name": "cal"}]}),
            item({"type": "tool_search_call", "call_id": None, "execution": "server", "arguments": {"query": "x"}}),
            item({"type": "tool_search_output", "call_id": None, "status": "completed", "execution": "server", "tools": []}),
        ]
        t = read(tmp_path, recs)
        assert [(u.name, u.input) for u in uses(t)] == [("tool_search", {"query": "calendar"})]
        assert json.loads(results(t)[0].content) == [{"name": "cal"}]
        assert t.notes.skipped == {"item:tool_search_call": 1, "item:tool_search_output": 1}

    def test_items_without_a_block_are_counted_by_kind(self, tmp_path: Path) -> None:
        recs = [
            msg("user", "look it up"),
            item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "weather"}}),
            item({"type": "image_generation_call", "id": "ig_1", "status": "completed", "revised_prompt": "a cat", "result": "Zm9v"}),
            item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc", "parent": None, "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}}),
            item({"type": "brand_new_item", "x": 1}),
            msg("assistant", "It is sunny.", part="output_text"),
        ]
        t = read(tmp_path, recs)
        assert [m.role for m in t.messages] == ["user", "assistant"]
        assert t.notes.skipped == {
            "item:web_search_call": 1,
            "item:image_generation_call": 1,
            "item:ghost_snapshot": 1,
            "item:brand_new_item": 1,
        }

    @pytest.mark.parametrize("kind", ["compaction", "compaction_summary"])
    def test_an_inline_compaction_item_is_a_boundary_a_replay_undoes(self, tmp_path: Path, kind: str) -> None:
        # The Responses API's server-side compaction: an encrypted summary read in place of what came before.
        from lab.replayer.recorded import apply_recorded, find_recorded

        recs = [
            msg("user", "fix the parser"),
            msg("assistant", "Looking.", part="output_text"),
            item({"type": kind, "id": "cmp_1", "encrypted_content": "gAAA" * 10}),
            msg("user", "go on"),
            msg("assistant", "Done.", part="output_text"),
        ]
        t = read(tmp_path, recs)
        assert [m.tag for m in t.messages] == [None, None, "boundary", "summary", None, None]
        marker, summary = t.messages[2:4]
        assert marker.boundary is not None and marker.boundary.strategy == "openai_compaction"
        assert "40 characters" in summary.content[0].text and "item:" + kind not in t.notes.skipped
        found = find_recorded(t)
        assert [(c.agent, c.action) for c in found] == [("OpenAI Responses (server-side compaction)", "undone")]
        undone = apply_recorded(t, "undo")[0]
        assert [m.role for m in undone.messages] == ["user", "assistant", "user", "assistant"]

    def test_the_compaction_item_ending_a_replacement_history_is_counted_not_a_second_boundary(self, tmp_path: Path) -> None:
        history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]},
                   {"type": "compaction", "encrypted_content": "gAAA"}]
        recs = [msg("user", "fix the parser"), msg("assistant", "Looking.", part="output_text"),
                {"timestamp": "2026-01-01T00:00:00Z", "type": "compacted", "payload": {"message": "", "replacement_history": history}},
                msg("assistant", "Done.", part="output_text")]
        t = read(tmp_path, recs)
        assert sum(m.boundary is not None for m in t.messages) == 1 and t.notes.skipped.get("item:compaction") == 1


class TestInjectedContext:
    @pytest.mark.parametrize(
        "text",
        [ENV, AGENTS, "<user_instructions>\n\nBe terse.\n\n</user_instructions>", "<skill>\n<name>pdf</name>\nbody\n</skill>",
         "<user_shell_command>\n<command>ls</command>\n<result>a.py</result>\n</user_shell_command>",
         "<turn_aborted>\n  <reason>interrupted</reason>\n</turn_aborted>", "  <ENVIRONMENT_CONTEXT>\n</environment_context>\n"],
        ids=["environment", "agents-md", "user-instructions", "skill", "user-shell-command", "turn-aborted", "case-and-space"],
    )
    def test_codex_fragments_are_injected_context(self, text: str) -> None:
        assert is_injected_context(text)

    @pytest.mark.parametrize("text", ["fix the bug", "<skill> what does this tag do?", "# AGENTS.md instructions for me please"])
    def test_user_words_are_not(self, text: str) -> None:
        assert not is_injected_context(text)

    def test_injected_messages_are_system_and_the_first_request_is_the_users(self, tmp_path: Path) -> None:
        recs = [
            meta(instructions=AGENTS_BODY),
            msg("developer", "<permissions instructions>\nsandboxed\n</permissions instructions>"),
            msg("user", AGENTS),
            msg("user", ENV),
            msg("user", "why is the build red?"),
            event("user_message", message="why is the build red?", images=[]),
        ]
        t = read(tmp_path, recs)
        assert [m.role for m in t.messages] == ["system", "system", "system", "user"]
        assert first_user_request(t.messages) == "why is the build red?"
        # the header's instructions are what the AGENTS.md message injects: they appear once
        assert sum(message_text(m).count(AGENTS_BODY) for m in t.messages) == 1
        assert any("injected" in w for w in t.notes.warnings)

    def test_base_instructions_stay_the_first_system_message(self, tmp_path: Path) -> None:
        t = read(tmp_path, [meta(base_instructions={"text": "You are Codex."}), msg("user", AGENTS), msg("user", "hi")])
        assert [message_text(m) for m in t.messages[:1]] == ["You are Codex."]
        assert [m.role for m in t.messages] == ["system", "system", "user"]

    def test_a_message_mixing_context_and_words_is_split(self, tmp_path: Path) -> None:
        t = read(tmp_path, [msg("user", ENV, "and now the real question")])
        assert [(m.role, message_text(m)) for m in t.messages] == [("system", ENV), ("user", "and now the real question")]
        assert len({m.id for m in t.messages}) == 2

    def test_turn_aborted_note_mid_session_is_not_a_user_turn(self, tmp_path: Path) -> None:
        recs = [msg("user", "first"), call("c1"), output("c1", "aborted"), msg("user", "<turn_aborted>\n<reason>interrupted</reason>\n</turn_aborted>"), msg("user", "second")]
        t = read(tmp_path, recs)
        assert [m.role for m in t.messages] == ["user", "assistant", "user", "system", "user"]


class TestEvents:
    def test_event_duplicates_do_not_double_the_conversation(self, tmp_path: Path) -> None:
        recs = [
            msg("user", "hello"),
            event("user_message", message="hello", images=[]),
            item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": None}),
            event("agent_reasoning", text="think"),
            msg("assistant", "hi there", part="output_text"),
            event("agent_message", message="hi there"),
        ]
        t = read(tmp_path, recs)
        assert [m.role for m in t.messages] == ["user", "assistant"]
        assert sum(message_text(m).count("hi there") for m in t.messages) == 1
        assert t.notes.skipped == {"event_msg:user_message": 1, "event_msg:agent_reasoning": 1, "event_msg:agent_message": 1}

    def test_token_count_sets_usage_and_tolerates_missing_info(self, tmp_path: Path) -> None:
        usage = {"input_tokens": 1200, "cached_input_tokens": 1000, "output_tokens": 30, "reasoning_output_tokens": 10, "total_tokens": 1230}
        recs = [msg("user", "q"), event("token_count", info=None, rate_limits={}), msg("assistant", "a", part="output_text"),
                event("token_count", info={"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 272000})]
        t = read(tmp_path, recs)
        u = t.messages[1].usage
        assert u is not None and (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (200, 1000, 30)
        assert t.notes.skipped["event_msg:token_count"] == 2

    def test_aborts_errors_and_other_events_are_counted(self, tmp_path: Path) -> None:
        recs = [msg("user", "q"), event("turn_aborted", reason="interrupted"), event("error", message="stream disconnected"),
                event("context_compacted"), event("task_started", model_context_window=272000)]
        t = read(tmp_path, recs)
        assert t.notes.skipped == {"event_msg:turn_aborted": 1, "event_msg:error": 1, "event_msg:context_compacted": 1, "event_msg:task_started": 1}

    def test_thread_name_names_the_transcript(self, tmp_path: Path) -> None:
        t = read(tmp_path, [meta(), msg("user", "q"), event("thread_name_updated", thread_id="0199-sess", thread_name="Fix the CI")])
        assert t.meta.title == "Fix the CI"

    def test_rollback_drops_the_last_turns_as_codex_does_on_resume(self, tmp_path: Path) -> None:
        recs = [
            meta(), msg("user", ENV), msg("user", "turn one"), msg("assistant", "one done", part="output_text"),
            msg("user", ENV), msg("user", "turn two"), call("c9"),  # interrupted: c9 never answered
            event("thread_rolled_back", num_turns=1),
            msg("user", "turn two, again"), msg("assistant", "two done", part="output_text"),
        ]
        t = read(tmp_path, recs)
        texts = [message_text(m) for m in t.messages]
        assert texts == [ENV, "turn one", "one done", "turn two, again", "two done"]
        assert t.notes.unanswered_tool_uses == []  # the call went with its turn
        assert len(t.notes.dropped) == 1 and "removed 3 message(s)" in t.notes.dropped[0]
        assert len({m.id for m in t.messages}) == len(t.messages)

    def test_rollback_of_more_turns_than_exist_keeps_the_context_before_the_first(self, tmp_path: Path) -> None:
        recs = [msg("user", ENV), msg("user", "only turn"), call("c1"), output("c1"), event("thread_rolled_back", num_turns=5), call("c2"), output("c2")]
        t = read(tmp_path, recs)
        assert [m.role for m in t.messages] == ["system", "assistant", "user"]
        # a result after the rollback starts a new user message, not one the rollback removed
        assert tool_pairs(t.messages) == {"c2": (1, 2)}

    def test_a_result_after_a_rollback_never_joins_a_kept_message(self, tmp_path: Path) -> None:
        recs = [msg("user", "t1"), call("c1"), output("c1"), msg("user", "t2"), call("c2"), output("c2"), event("thread_rolled_back", num_turns=1), output("late")]
        t = read(tmp_path, recs)
        assert [[type(b).__name__ for b in m.content] for m in t.messages] == [["TextBlock"], ["ToolUseBlock"], ["ToolResultBlock"], ["ToolResultBlock"]]
        assert t.notes.orphan_tool_results == ["late"]

    def test_rollback_does_not_reach_behind_a_compaction(self, tmp_path: Path) -> None:
        recs = [msg("user", "before"), line("compacted", {"message": "summary"}), msg("user", "after"), event("thread_rolled_back", num_turns=3)]
        t = read(tmp_path, recs)
        assert [(m.role, m.tag) for m in t.messages] == [("user", None), ("system", "boundary"), ("user", "summary")]


class TestCompacted:
    def test_without_replacement_history_a_boundary_then_the_summary(self, tmp_path: Path) -> None:
        t = read(tmp_path, [msg("user", "work"), line("compacted", {"message": "We fixed a.py; b.py remains."}), msg("user", "go on")])
        assert [(m.role, m.tag) for m in t.messages] == [("user", None), ("system", "boundary"), ("user", "summary"), ("user", None)]
        assert t.messages[1].boundary is not None and t.messages[1].boundary.strategy == "codex_compact"
        assert message_text(t.messages[2]) == "We fixed a.py; b.py remains."

    def test_replacement_history_keeps_context_user_words_and_the_summary_apart(self, tmp_path: Path) -> None:
        summary = f"{SUMMARY_PREFIX}\nWe fixed a.py."
        history = [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>x</permissions instructions>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ENV}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix a.py"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]},
            {"type": "compaction", "encrypted_content": "gAAA"},
        ]
        t = read(tmp_path, [msg("user", "fix a.py"), line("compacted", {"message": summary, "replacement_history": history}), msg("user", "next")])
        assert [(m.role, m.tag) for m in t.messages] == [
            ("user", None), ("system", "boundary"), ("system", None), ("system", None), ("user", None), ("user", "summary"), ("user", None),
        ]
        assert t.notes.skipped == {"item:compaction": 1}

    def test_remote_compaction_summary_is_recognised_by_its_prefix(self, tmp_path: Path) -> None:
        history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"{SUMMARY_PREFIX}\nnotes"}]}]
        t = read(tmp_path, [line("compacted", {"message": "", "replacement_history": history})])
        assert [m.tag for m in t.messages] == ["boundary", "summary"]

    def test_empty_compaction_is_only_a_boundary(self, tmp_path: Path) -> None:
        t = read(tmp_path, [msg("user", "a"), line("compacted", {"message": ""})])
        assert [m.tag for m in t.messages] == [None, "boundary"]


class TestVersions:
    def test_a_fork_copies_its_parents_header_and_only_the_first_counts(self, tmp_path: Path) -> None:
        recs = [meta(id="child", forked_from_id="parent", instructions="child rules"), meta(id="parent", instructions="parent rules"), msg("user", "hi")]
        t = read(tmp_path, recs)
        assert t.meta.session_id == "child"
        assert [message_text(m) for m in t.messages if m.role == "system"] == ["child rules"]
        assert t.notes.skipped == {"session_meta": 1} and any("forked from session parent" in w for w in t.notes.warnings)

    def test_newer_record_types_are_counted(self, tmp_path: Path) -> None:
        recs = [meta(), line("world_state", {"agents_md": "x"}), line("inter_agent_communication_metadata", {"trigger_turn": True}),
                line("future_record", {}), msg("user", "q")]
        t = read(tmp_path, recs)
        assert t.notes.skipped == {"world_state": 1, "inter_agent_communication_metadata": 1, "record:future_record": 1}

    def test_model_switch_is_warned_about(self, tmp_path: Path) -> None:
        recs = [line("turn_context", {"cwd": "/r", "model": "gpt-5-codex"}), msg("user", "a"), line("turn_context", {"cwd": "/r", "model": "gpt-5.1-codex"})]
        t = read(tmp_path, recs)
        assert t.meta.model == "gpt-5-codex" and any("gpt-5-codex -> gpt-5.1-codex" in w for w in t.notes.warnings)

    def test_older_rollout_with_a_bare_header_and_no_instructions(self, tmp_path: Path) -> None:
        recs = [
            {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-07T17:24:21.123Z", "git": {"branch": "main"}},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ENV}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add a test"}]},
            {"record_type": "state", "previous_response_id": "resp_1"},
            {"type": "local_shell_call", "id": None, "call_id": "call_1", "status": "completed", "action": {"type": "exec", "command": ["ls"]}},
            {"type": "function_call_output", "call_id": "call_1", "output": '{"output":"a.py\\n","metadata":{"exit_code":0,"duration_seconds":0.0}}'},
            {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}},
        ]
        path = _write(tmp_path, recs)
        assert resp.sniff(read_file_head(path)) == 85 and detect(path) == "openai_responses"
        t = load(path)
        assert t.meta.session_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e" and t.meta.title == "Codex CLI rollout"
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
        assert tool_pairs(t.messages) == {"call_1": (2, 3)}
        assert t.notes.skipped == {"record_type:state": 1, "item:web_search_call": 1}

    def test_typescript_cli_rollout_document(self, tmp_path: Path) -> None:
        doc = {
            "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "ts-1", "instructions": "Prefer small diffs."},
            "items": [
                {"id": "msg_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix lint"}]},
                {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":["npm","run","lint"]}'},
                {"type": "function_call_output", "call_id": "call_1", "output": '{"output":"2 errors","metadata":{"exit_code":1,"duration_seconds":1.5}}'},
            ],
        }
        path = tmp_path / "rollout-2025-04-20-ts-1.json"
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        assert detect(path) == "openai_responses"
        t = load(path)
        assert t.meta.session_id == "ts-1" and [m.role for m in t.messages] == ["system", "user", "assistant", "user"]
        assert uses(t)[0].input == {"cmd": ["npm", "run", "lint"]} and results(t)[0].is_error

    def test_typescript_rollout_detected_from_the_head_alone(self, tmp_path: Path) -> None:
        items = [{"type": "function_call", "call_id": f"c{i}", "name": "shell", "arguments": "{}"} for i in range(3)]
        head = json.dumps({"session": {"id": "x", "timestamp": TS}, "items": items}, indent=2)
        from lab.formats.registry import FileHead

        assert resp.sniff(FileHead(path=Path("r.json"), head=head, shape="json", records=None, document=None)) == 90

    def test_read_rollout_is_importable_from_both_modules(self, tmp_path: Path) -> None:
        path = _write(tmp_path, [meta(), msg("user", "q")])
        assert resp.read_rollout(path) == read_rollout(path)


class TestNewestShapes:
    """Shapes of the newest codex-rs: ResponseItem with ids, phase and passthrough metadata, agent messages,
    optional call ids, remote compaction v2 (codex-rs/core/src/compact_remote_v2.rs) and subagent sessions."""

    def test_agent_message_item_is_a_user_turn_of_its_readable_text(self, tmp_path: Path) -> None:
        recs = [
            meta(), msg("user", "split the work"), msg("assistant", "spawning", part="output_text", phase="commentary"),
            line("inter_agent_communication_metadata", {"trigger_turn": True}),
            item({"type": "agent_message", "id": "amsg_1", "author": "/root/worker", "recipient": "/root",
                  "content": [{"type": "input_text", "text": "worker: tests pass"}]}),
            item({"type": "agent_message", "author": "/root/spy", "recipient": "/root",
                  "content": [{"type": "input_text", "text": "Message Type: MESSAGE\n"}, {"type": "encrypted_content", "encrypted_content": "gAAA"}]}),
            item({"type": "agent_message", "author": "/root/spy", "recipient": "/root", "content": [{"type": "encrypted_content", "encrypted_content": "gAAA"}]}),
        ]
        t = read(tmp_path, recs)
        assert [(m.role, message_text(m)) for m in t.messages] == [
            ("user", "split the work"), ("assistant", "spawning"), ("user", "worker: tests pass"), ("user", "Message Type: MESSAGE\n"),
        ]
        assert t.notes.skipped["agent_message:encrypted"] == 2 and t.notes.skipped["item:agent_message"] == 1
        assert t.notes.skipped["inter_agent_communication_metadata"] == 1
        assert any("other Codex agents" in w for w in t.notes.warnings)

    def test_inter_agent_communication_record_is_what_the_model_read(self, tmp_path: Path) -> None:
        comm = {"author": "/root", "recipient": "/root/worker", "other_recipients": [], "content": "run the tests", "trigger_turn": True}
        recs = [meta(source={"subagent": {"thread_spawn": {"parent_thread_id": "0199-parent", "depth": 1}}}),
                line("inter_agent_communication", comm), call("c1"), output("c1", "ok"), msg("assistant", "done", part="output_text")]
        t = read(tmp_path, recs)
        assert [(m.role, message_text(m)) for m in t.messages[:1]] == [("user", "run the tests")]
        assert first_user_request(t.messages) == "run the tests"
        assert tool_pairs(t.messages) == {"c1": (1, 2)}
        assert any("subagent session (spawned by thread 0199-parent)" in w for w in t.notes.warnings)
        _replays_cleanly(t)

    def test_a_rollback_counts_an_agent_message_as_a_turn_as_codex_does(self, tmp_path: Path) -> None:
        comm = {"author": "/root", "recipient": "/root/worker", "content": "second task", "trigger_turn": True}
        recs = [msg("user", "first task"), msg("assistant", "one", part="output_text"), line("inter_agent_communication", comm),
                msg("assistant", "two", part="output_text"), event("thread_rolled_back", num_turns=1)]
        t = read(tmp_path, recs)
        assert [message_text(m) for m in t.messages] == ["first task", "one"]

    def test_an_output_without_call_id_answers_nothing_and_is_counted(self, tmp_path: Path) -> None:
        recs = [msg("user", "q"), call("c1"),
                item({"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": "ok"}),
                item({"type": "function_call_output", "id": "fco_2", "output": "stray"}),
                item({"type": "custom_tool_call_output", "id": "ctco_1", "name": "apply_patch", "output": "stray"})]
        t = read(tmp_path, recs)
        assert [(r.tool_use_id, r.content) for r in results(t)] == [("c1", "ok")]
        assert t.notes.skipped == {"item:function_call_output:no call_id": 1, "item:custom_tool_call_output:no call_id": 1}
        assert not t.notes.orphan_tool_results

    def test_newest_item_fields_are_read(self, tmp_path: Path) -> None:
        meta_ = {"turn_id": "t1", "create_time": 1760000000.5}
        recs = [
            msg("user", "look", id="msg_1", internal_chat_message_metadata_passthrough=meta_),
            item({"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"}]}),
            item({"type": "function_call", "id": "fc_1", "name": "exec", "namespace": "mcp__box__", "arguments": "{\"cmd\":\"ls\"}",
                  "encrypted_function_args": ["x"], "call_id": "c1", "internal_chat_message_metadata_passthrough": meta_}),
            item({"type": "function_call_output", "id": "fco_1", "call_id": "c1", "name": "exec", "namespace": "mcp__box__",
                  "output": [{"type": "input_text", "text": "a.py"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "original"}]}),
            item({"type": "custom_tool_call", "id": "ctc_1", "call_id": "p1", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}),
            item({"type": "custom_tool_call_output", "call_id": "p1", "name": "apply_patch", "output": {"content": "bad patch", "success": False}}),
            item({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
            item({"type": "context_compaction", "encrypted_content": "gAAA"}),
            item({"type": "compaction_trigger"}),
            item({"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "late"}]}),
            item({"type": "configuration_update", "reasoning": {"effort": "high"}}),
            msg("assistant", "a.py it is", part="output_text", id="msg_2", phase="final_answer"),
        ]
        t = read(tmp_path, recs)
        assert [(u.id, u.name, u.input) for u in uses(t)] == [("c1", "mcp__box__exec", {"cmd": "ls"}), ("p1", "apply_patch", {"input": "*** Begin Patch\n*** End Patch"})]
        assert [(r.content, r.is_error) for r in results(t)] == [("a.py\n[image]", False), ("bad patch", True)]
        assert isinstance(t.messages[1].content[0], ImageBlock) and message_text(t.messages[-1]) == "a.py it is"
        assert t.notes.skipped == {"item:web_search_call": 1, "item:context_compaction": 1, "item:compaction_trigger": 1,
                                   "item:additional_tools": 1, "item:configuration_update": 1}
        _replays_cleanly(t)

    def test_remote_compaction_v2_is_a_boundary_a_replay_can_undo(self, tmp_path: Path) -> None:
        history = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix a.py"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and b.py"}]},
            {"type": "compaction", "encrypted_content": "gAAA"},
        ]
        recs = [meta(), msg("user", ENV), msg("user", "fix a.py"), call("c1"), output("c1", "x" * 400), msg("assistant", "a done", part="output_text"),
                msg("user", "and b.py"), call("c2"), output("c2", "y" * 400),
                line("compacted", {"message": "", "replacement_history": history, "window_id": "w2"}),
                event("context_compacted"), call("c3"), output("c3", "z"), msg("assistant", "b done", part="output_text")]
        t = read(tmp_path, recs)
        marker = next(m for m in t.messages if m.boundary is not None)
        assert marker.boundary is not None and marker.boundary.strategy == "codex_compact" and marker.boundary.replaced_messages == 2
        after = t.messages[t.messages.index(marker) + 1:]
        assert [message_text(m) for m in after[:2]] == ["fix a.py", "and b.py"] and t.notes.skipped["item:compaction"] == 1
        assert tool_pairs(t.messages)["c3"]
        _replays_cleanly(t)

    def test_token_count_gives_each_response_its_own_usage(self, tmp_path: Path) -> None:
        def usage(inp: int, cached: int, out: int) -> dict[str, Any]:
            last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": inp + out}
            return {"total_token_usage": last, "last_token_usage": last, "model_context_window": 258400}
        recs = [msg("user", "q"), call("c1"), event("token_count", info=usage(1000, 0, 20), rate_limits=None), output("c1"),
                msg("assistant", "a", part="output_text"), event("token_count", info=usage(1100, 1000, 5)),
                event("token_count", info=usage(1100, 1000, 5), rate_limits={"primary": {"used_percent": 3.0}})]
        t = read(tmp_path, recs)
        got = [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.output_tokens) for m in t.messages if m.role == "assistant" and m.usage]
        assert got == [(1000, 0, 20), (100, 1000, 5)]


def _replays_cleanly(t: Transcript) -> None:
    import lab

    report = lab.replay(t, "lab", window=32_000)
    assert report.invalid_requests == 0, [r.problems for r in report.rows if r.problems][:1]
    assert report.first_request_kept is True and all(r.first_request_kept for r in report.rows)


_VOCAB = st.sampled_from(
    ["session_meta", "response_item", "compacted", "turn_context", "event_msg", "message", "function_call", "function_call_output",
     "custom_tool_call", "custom_tool_call_output", "local_shell_call", "tool_search_call", "tool_search_output", "reasoning",
     "user", "assistant", "developer", "input_text", "output_text", "token_count", "thread_rolled_back", "user_message", ENV, AGENTS,
     "c1", "c2", "exec", "agent_message", "encrypted_content"]
)
_KEYS = st.sampled_from(
    ["type", "payload", "role", "content", "text", "call_id", "name", "arguments", "output", "input", "action", "command",
     "message", "replacement_history", "num_turns", "info", "instructions", "summary", "id", "timestamp", "tools",
     "author", "recipient", "source", "subagent"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 5) | _VOCAB,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=20,
)
_RECORD = st.one_of(
    st.builds(line, st.sampled_from(["response_item", "compacted", "event_msg", "session_meta", "turn_context", "inter_agent_communication"]), st.dictionaries(_KEYS, _JSON, max_size=5)),
    st.dictionaries(_KEYS, _JSON, max_size=5),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_RECORD, min_size=1, max_size=8))
def test_arbitrary_records_import_or_raise_transcript_error(records: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), records)
        try:
            t = read_rollout(path)
        except TranscriptError:
            return
        assert t == read_rollout(path)  # deterministic ids and content
        assert len({m.id for m in t.messages}) == len(t.messages)
        assert t.notes.records_read == len(records)
        answered = {b.tool_use_id for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
        used = {b.id for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
        # every result answers a call or is reported as an orphan; every unreported call is answered
        assert answered - used <= set(t.notes.orphan_tool_results)
        assert used - answered <= set(t.notes.unanswered_tool_uses)
        assert not any(isinstance(b, ImageBlock) for m in t.messages if m.role == "system" for b in m.content)


def test_the_session_working_directory_is_kept_for_path_resolution(tmp_path: Path) -> None:
    t = read(tmp_path, [meta(cwd="/work/repo"), msg("user", "hi")])
    assert t.meta.cwd == "/work/repo"
    assert read(tmp_path, [meta(cwd=None), msg("user", "hi")]).meta.cwd is None
