"""Text-command agents (SWE-agent parsers, mini-swe-agent text mode): commands become tool calls, observations tool results."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.core.stats import transcript_stats
from lab.errors import TranscriptError
from lab.formats.openai import openai_chat
from lab.formats import text_commands
from lab.formats.export import to_anthropic, to_openai
from tests.conftest import corpus_path

PYDICOM = corpus_path("openai-chat/swe-agent-pydicom-1458.traj")

SWE_SYSTEM = (
    "SETTING: You are an autonomous programmer.\n\nCOMMANDS:\n"
    "open:\n  docstring: opens the file at the given path\n  signature: open <path> [<line_number>]\n\n"
    "edit:\n  docstring: replaces lines <start_line> through <end_line>\n  signature: edit <start_line>:<end_line>\n\n"
    "submit:\n  docstring: submits your current code\n  signature: submit\n"
)


# -- raw message builders (the source shapes, not canonical messages) --------------------


def _swe_action(thought: str, action: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": f"{thought}\n\n```\n{action}\n```", "thought": thought, "action": action + "\n", "agent": "primary", **extra}


def _obs(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, "agent": "primary", **extra}


def _swe_history(*, message_type: bool = False) -> list[dict[str, Any]]:
    """Old style (no message_type) or SWE-agent 1.x style (message_type on every entry, tool_calls None)."""
    kind = (lambda t: {"message_type": t}) if message_type else (lambda t: {})
    calls = {"tool_calls": None} if message_type else {}
    return [
        {"role": "system", "content": SWE_SYSTEM, "agent": "primary", **kind("system_prompt")},
        {"role": "user", "content": "DEMO ...", "agent": "primary", "is_demo": True, **kind("demonstration")},
        _obs("ISSUE: pixel representation should be optional", **kind("observation")),
        _swe_action("Let me open the handler.", "open pydicom/handler.py 293", **kind("action"), **calls),
        _obs("[File: pydicom/handler.py (372 lines total)]\n293: required = [", **kind("observation")),
        _swe_action("Fix the list.", "edit 293:293\n    required = []\nend_of_edit", **kind("action"), **calls),
        _obs("File updated.", **kind("observation")),
        _swe_action("Run the reproduction.", "python reproduce.py", **kind("action"), **calls),
        _obs("Traceback (most recent call last): ...", **kind("observation")),
        _swe_action("Done.", "submit", **kind("action"), **calls),
    ]


def _mini(content: str, role: str = "assistant", **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def _bash(thought: str, command: str, fence: str = "bash") -> dict[str, Any]:
    return _mini(f"THOUGHT: {thought}\n\n```{fence}\n{command}\n```")


def _rc(code: int | str, output: str) -> dict[str, Any]:
    return _mini(f"<returncode>{code}</returncode>\n<output>\n{output}</output>", role="user")


def _mini_history() -> list[dict[str, Any]]:
    return [
        _mini("You are a helpful assistant that can interact with a computer.", role="system"),
        _mini("Please solve this issue: the sum is wrong", role="user"),
        _bash("List the files.", "ls -la"),
        _rc(0, "a.py\nb.py\n"),
        _bash("Run the tests.", "python -m pytest -q"),
        _rc(1, "1 failed\n"),
        _mini("I will run two commands.\n```bash\nls\n```\n```bash\npwd\n```"),
        _mini("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.", role="user"),
        _bash("Submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"),
        _mini("diff --git a/a.py b/a.py", role="exit"),
    ]


def _import(messages: list[dict[str, Any]]) -> Transcript:
    return openai_chat.from_messages(messages)


def _blocks(t: Transcript, kind: type) -> list[Any]:
    return [b for m in t.messages for b in m.content if isinstance(b, kind)]


def _assert_pairs_valid(messages: list[Message]) -> None:
    """Each result answers a call made in the message right before it; only a trailing call may go unanswered."""
    for tool_id, (use, result) in tool_pairs(messages).items():
        assert use is not None, f"{tool_id}: a result without its call"
        if result is None:
            assert use == len(messages) - 1, f"{tool_id}: unanswered call in mid-history"
        else:
            assert result == use + 1 and messages[use].role == "assistant" and messages[result].role == "user"


# -- SWE-agent ------------------------------------------------------------------------------


class TestSweAgent:
    @pytest.mark.parametrize("message_type", [False, True], ids=["action-fields", "message_type"])
    def test_actions_become_named_tool_calls_answered_by_observations(self, message_type: bool) -> None:
        t = _import(_swe_history(message_type=message_type))
        uses = _blocks(t, ToolUseBlock)
        # documented commands keep their name, like SWE-agent's own function calling; the rest run in bash
        assert [(u.name, u.input) for u in uses] == [
            ("open", {"command": "open pydicom/handler.py 293"}),
            ("edit", {"command": "edit 293:293\n    required = []\nend_of_edit"}),
            ("bash", {"command": "python reproduce.py"}),
            ("submit", {"command": "submit"}),
        ]
        assert [u.id for u in uses] == ["call_m3", "call_m5", "call_m7", "call_m9"]
        results = _blocks(t, ToolResultBlock)
        assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [
            ("call_m3", "[File: pydicom/handler.py (372 lines total)]\n293: required = [", False),
            ("call_m5", "File updated.", False),
            ("call_m7", "Traceback (most recent call last): ...", False),
        ]
        assert t.notes.unanswered_tool_uses == ["call_m9"]
        assert not t.notes.skipped

    def test_demonstration_is_sent_so_it_stays_as_text(self) -> None:
        # SWE-agent puts the demonstration in its history and sends it with every request.
        history = _swe_history(message_type=True)
        demo_action = _swe_action("Demo step.", "ls", is_demo=True, **{"message_type": "action"})
        history[2:2] = [demo_action, _obs("demo output", is_demo=True)]
        t = _import(history)
        assert t.messages[1].content == (TextBlock(text="DEMO ..."),)
        # the demonstration's own command was never run here: text, not a call
        assert t.messages[2].content == (TextBlock(text=demo_action["content"]),) and t.messages[3].content == (TextBlock(text="demo output"),)
        assert [u.input["command"] for u in _blocks(t, ToolUseBlock)][0] == "open pydicom/handler.py 293"
        assert any(w.startswith("3 demonstration entries kept") for w in t.notes.warnings)
        _assert_pairs_valid(t.messages)

    def test_reply_keeps_its_thought_as_text_and_the_issue_stays_a_user_message(self) -> None:
        t = _import(_swe_history(message_type=True))
        assert [m.role for m in t.messages] == ["system", "user", "user"] + ["assistant", "user"] * 3 + ["assistant"]
        assert t.messages[2].content == (TextBlock(text="ISSUE: pixel representation should be optional"),)
        assert [type(b) for b in t.messages[3].content] == [TextBlock, ToolUseBlock]
        assert t.messages[3].content[0] == TextBlock(text="Let me open the handler.")

    def test_without_command_docs_the_first_word_names_the_tool(self) -> None:
        history = _swe_history()[2:]
        history[3] = _swe_action("Run it.", "./run.sh --fast")
        t = _import(history)
        assert [u.name for u in _blocks(t, ToolUseBlock)] == ["open", "bash", "python", "submit"]

    def test_thought_missing_is_the_reply_without_its_last_fenced_block(self) -> None:
        reply = "Look first.\n```\nnot this\n```\nThen act.\n```\nls -F\n```\n"
        t = _import([_obs("task"), {"role": "assistant", "content": reply, "action": "ls -F"}, _obs("a b c")])
        assert t.messages[1].content[0] == TextBlock(text="Look first.\n```\nnot this\n```\nThen act.")

    def test_whole_reply_as_action_leaves_no_duplicate_text(self) -> None:
        t = _import([_obs("task"), {"role": "assistant", "content": "ls -F", "thought": "ls -F", "action": "ls -F"}, _obs("a")])
        assert [type(b) for b in t.messages[1].content] == [ToolUseBlock]

    def test_action_not_answered_in_mid_history_stays_text(self) -> None:
        reply = _swe_action("First.", "ls")
        history = [_obs("task"), reply, _swe_action("Second.", "pwd"), _obs("/repo")]
        t = _import(history)
        assert [u.input["command"] for u in _blocks(t, ToolUseBlock)] == ["pwd"]
        assert t.messages[1].content == (TextBlock(text=reply["content"]),)
        _assert_pairs_valid(t.messages)

    def test_empty_action_is_not_a_command(self) -> None:
        history = [_obs("task"), {"role": "assistant", "content": "thinking", "thought": "thinking", "action": "  "}, _obs("go on")]
        assert text_commands.plan(history) is None
        assert not _blocks(_import(history), ToolUseBlock)


# -- mini-swe-agent -------------------------------------------------------------------------


class TestMiniSweAgent:
    def test_bash_blocks_become_bash_calls_and_returncodes_set_errors(self) -> None:
        t = _import(_mini_history())
        uses = _blocks(t, ToolUseBlock)
        assert [(u.id, u.name, u.input["command"]) for u in uses] == [
            ("call_m2", "bash", "ls -la"),
            ("call_m4", "bash", "python -m pytest -q"),
            ("call_m8", "bash", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"),
        ]
        results = _blocks(t, ToolResultBlock)
        assert [(r.tool_use_id, r.is_error) for r in results] == [("call_m2", False), ("call_m4", True)]
        assert results[0].content == "<returncode>0</returncode>\n<output>\na.py\nb.py\n</output>"
        assert t.messages[2].content[0] == TextBlock(text="THOUGHT: List the files.")
        # the final submit is answered only by the skipped exit entry, as in tool-call trajectories
        assert t.notes.unanswered_tool_uses == ["call_m8"] and t.notes.skipped == {"role:exit": 1}

    def test_format_errors_stay_plain_text(self) -> None:
        history = _mini_history()
        t = _import(history)
        texts = {b.text for b in _blocks(t, TextBlock)}
        assert history[6]["content"] in texts and history[7]["content"] in texts

    @pytest.mark.parametrize(
        ("answer", "is_error"),
        [
            (_rc("0", "ok"), False),
            (_rc("127", "sh: nope: not found"), True),
            (_rc("-1", ""), True),
            (_mini("<exception>Command timed out</exception>\n<returncode>-1</returncode>\n<output>\n</output>", role="user"), True),
            (_mini("<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n</warning>\n<output_head>x</output_head>", role="user"), False),
            (_mini("plain text", role="user", extra={"returncode": 2}), True),
        ],
        ids=["zero", "not-found", "minus-one", "exception-first", "warning", "extra-returncode"],
    )
    def test_answer_shapes(self, answer: dict[str, Any], is_error: bool) -> None:
        t = _import([_mini("task", role="user"), _bash("go", "do-it"), answer])
        (result,) = _blocks(t, ToolResultBlock)
        assert result.is_error is is_error and result.content == answer["content"]

    def test_timeout_notice_answers_its_command_as_an_error(self) -> None:
        timeout = _mini("The last command <command>sleep 999</command> timed out and has been killed.\nThe output of the command was:\n <output>\n\n</output>", role="user")
        t = _import([_mini("task", role="user"), _bash("wait", "sleep 999"), timeout, _bash("list", "ls"), _rc(0, "a")])
        assert [(r.tool_use_id, r.is_error) for r in _blocks(t, ToolResultBlock)] == [("call_m1", True), ("call_m3", False)]

    def test_mini_swe_agent_2_fence(self) -> None:
        history = [_mini("task", role="user"), _bash("look", "ls", fence="mswea_bash_command"), _rc(0, "a.py")]
        t = _import(history)
        assert [u.input["command"] for u in _blocks(t, ToolUseBlock)] == ["ls"]

    def test_mini_swe_agent_2_xml_tag(self) -> None:
        # swebench_xml.yaml: action_regex <mswea_bash_command>(.*?)</mswea_bash_command>
        reply = _mini("THOUGHT: look around\n\n<mswea_bash_command>ls -la</mswea_bash_command>", extra={"actions": [{"command": "ls -la"}]})
        t = _import([_mini("task", role="user"), reply, _rc(0, "a.py")])
        assert [(u.name, u.input) for u in _blocks(t, ToolUseBlock)] == [("bash", {"command": "ls -la"})]
        assert t.messages[1].content[0] == TextBlock(text="THOUGHT: look around")
        assert [r.is_error for r in _blocks(t, ToolResultBlock)] == [False]

    def test_any_other_action_regex_uses_the_parsed_action(self) -> None:
        # A config's own action_regex: mini-swe-agent 2 still records the one command it parsed in extra.actions.
        reply = _mini("THOUGHT: list\n[[RUN]] ls -la [[/RUN]]", extra={"actions": [{"command": "ls -la"}], "cost": 0.001})
        t = _import([_mini("task", role="user"), reply, _rc(2, "no such dir")])
        assert [u.input["command"] for u in _blocks(t, ToolUseBlock)] == ["ls -la"]
        assert t.messages[1].content[0] == TextBlock(text="THOUGHT: list\n[[RUN]]  [[/RUN]]")
        assert [r.is_error for r in _blocks(t, ToolResultBlock)] == [True]

    def test_two_tagged_blocks_stay_text_even_with_a_parsed_action(self) -> None:
        reply = _mini("<mswea_bash_command>ls</mswea_bash_command> <mswea_bash_command>pwd</mswea_bash_command>", extra={"actions": [{"command": "ls"}]})
        assert text_commands.plan([_mini("task", role="user"), reply, _rc(0, "a")]) is None

    def test_a_reply_saved_as_text_parts(self) -> None:
        reply = {"role": "assistant", "content": [{"type": "text", "text": "THOUGHT: look\n\n```mswea_bash_command\nls\n```"}]}
        t = _import([_mini("task", role="user"), reply, _rc(0, "a.py")])
        assert [u.input["command"] for u in _blocks(t, ToolUseBlock)] == ["ls"]
        assert t.messages[1].content[0] == TextBlock(text="THOUGHT: look")

    def test_bash_blocks_without_any_returncode_answer_stay_text(self) -> None:
        history = [_mini("task", role="user"), _bash("look", "ls"), _mini("Observation: a.py", role="user")]
        assert text_commands.plan(history) is None
        t = _import(history)
        assert not _blocks(t, ToolUseBlock) and not t.notes.warnings


# -- what is left alone, and the notes ------------------------------------------------------


class TestUntouched:
    def test_native_tool_calls_anywhere_leave_the_history_as_it_was(self) -> None:
        call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
        history = _swe_history()
        history[3] = {**history[3], "tool_calls": [call]}
        history[4] = {"role": "tool", "tool_call_id": "c1", "content": "listing"}
        assert text_commands.plan(history) is None
        t = _import(history)
        assert [u.id for u in _blocks(t, ToolUseBlock)] == ["c1"]
        # the other actions stay in their replies' text, as before text commands were modelled
        assert _blocks(t, TextBlock)[-1].text == history[-1]["content"]
        assert not any("as text" in w for w in t.notes.warnings)

    def test_plain_chat_is_not_a_text_command_history(self) -> None:
        history = [_mini("hi", role="user"), _mini("```bash\nls\n```"), _mini("thanks", role="user")]
        assert text_commands.plan(history) is None

    def test_source_messages_are_not_mutated(self) -> None:
        history = _swe_history() + _mini_history()
        before = copy.deepcopy(history)
        _import(history)
        assert history == before

    def test_import_is_deterministic(self) -> None:
        assert _import(_mini_history()) == _import(_mini_history())


class TestWarning:
    def test_one_warning_says_the_shape_was_changed(self) -> None:
        t = _import(_swe_history())
        (warning,) = [w for w in t.notes.warnings if "modelled as tool calls" in w]
        assert warning.startswith("SWE-agent ran its commands as text")
        assert "4 commands (1 bash, 1 edit, 1 open, 1 submit)" in warning and "3 messages answering them" in warning
        assert "differ in shape from what the agent sent" in warning

    def test_mini_warning_names_the_agent(self) -> None:
        (warning,) = _import(_mini_history()).notes.warnings
        assert warning.startswith("mini-swe-agent ran its commands as text") and "3 commands (3 bash)" in warning


# -- pairing validity -----------------------------------------------------------------------


@st.composite
def _swe_turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A SWE-agent history where any action may lack its observation and stray user messages may appear."""
    history: list[dict[str, Any]] = [{"role": "system", "content": SWE_SYSTEM}, _obs("task")]
    for k in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["answered", "answered", "unanswered", "chat"]))
        if kind == "chat":
            history.append({"role": "assistant", "content": f"just talking {k}"})
            history.append(_obs(f"reply {k}"))
        else:
            history.append(_swe_action(f"step {k}", draw(st.sampled_from(["ls", "open a.py", "edit 1:1\nx\nend_of_edit", "submit"]))))
            if kind == "answered":
                history.append(_obs(f"output {k}"))
    return history


class TestPairing:
    @settings(max_examples=60, deadline=None)
    @given(_swe_turns())
    def test_every_result_follows_its_call_and_exports_keep_the_pairs(self, history: list[dict[str, Any]]) -> None:
        t = _import(history)
        _assert_pairs_valid(t.messages)
        assert not t.notes.orphan_tool_results
        answered = {k for k, (use, res) in tool_pairs(t.messages).items() if res is not None}
        # close_pending=False: the pairs the file holds, not the results the export adds for calls left open.
        body = to_anthropic(t.messages, [], close_pending=False)
        assert {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"} == answered
        chat = to_openai(t.messages, [], close_pending=False)
        assert {m["tool_call_id"] for m in chat["messages"] if m["role"] == "tool"} == answered

    @pytest.mark.parametrize("build", [_swe_history, _mini_history], ids=["swe-agent", "mini-swe-agent"])
    def test_shapes_pair_validly(self, build: Any) -> None:
        t = _import(build())
        _assert_pairs_valid(t.messages)
        assert len(t.notes.unanswered_tool_uses) == 1


_KEYS = st.sampled_from(["role", "content", "action", "thought", "message_type", "is_demo", "extra", "returncode", "tool_calls"])
_VALUES = st.sampled_from(["user", "assistant", "system", "observation", "action", "ls", "```bash\nls\n```", "<returncode>1</returncode>", "", " "])
_ENTRY = st.dictionaries(_KEYS, st.one_of(_VALUES, st.booleans(), st.none(), st.integers(-2, 2), st.lists(_VALUES, max_size=2)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(_ENTRY, max_size=8))
def test_damaged_text_command_histories_raise_only_transcript_error(history: list[dict[str, Any]]) -> None:
    try:
        t = _import(history)
    except TranscriptError:
        return
    _assert_pairs_valid(t.messages)


# -- the corpus -----------------------------------------------------------------------------


@pytest.mark.corpus("openai-chat/swe-agent-pydicom-1458.traj")
class TestPydicomCorpus:
    @pytest.fixture(scope="class")
    def transcript(self) -> Transcript:
        return openai_chat.read(PYDICOM)

    def test_commands_are_tool_calls_and_observations_tool_results(self, transcript: Transcript) -> None:
        raw = [m for m in json.loads(Path(PYDICOM).read_text(encoding="utf-8"))["history"] if not m.get("is_demo")]
        actions = [m["action"].strip() for m in raw if m["role"] == "assistant"]
        uses = _blocks(transcript, ToolUseBlock)
        assert [u.input["command"] for u in uses] == actions and len(uses) == 12
        assert {u.name for u in uses} == {"create", "edit", "bash", "find_file", "open", "submit"}
        # every action but the final submit is answered by the observation after it
        assert len(_blocks(transcript, ToolResultBlock)) == 11
        assert transcript.notes.unanswered_tool_uses == ["call_m25"]
        _assert_pairs_valid(transcript.messages)

    def test_tool_output_is_a_real_share_of_the_tokens(self, transcript: Transcript) -> None:
        stats = transcript_stats(transcript, ["chars/3.5"])
        assert stats.tool_calls == 12
        # the demonstration (sent with every request, so kept) is a large share of its own
        assert stats.tool_output_share["chars/3.5"] > 0.3

    def test_notes_carry_the_warning(self, transcript: Transcript) -> None:
        assert any(w.startswith("SWE-agent ran its commands as text") for w in transcript.notes.warnings)
