"""AutoGen AgentChat saved state and message lists (``lab.formats.shell_agents.autogen``), from fixtures of ``save_state()``'s shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, message_text
from lab.core.validate import anthropic_problems
from lab.errors import TranscriptError
from lab.formats.shell_agents import autogen
from lab.formats import detect, load

FIXTURES = Path(__file__).parent / "fixtures" / "autogen"
AGENT = FIXTURES / "agent_state.json"
TEAM = FIXTURES / "team_state.json"


@pytest.mark.parametrize("path", [AGENT, TEAM], ids=["agent", "team"])
def test_detected(path: Path) -> None:
    assert detect(path) == "autogen"


def test_an_agent_s_model_context(tmp_path: Path) -> None:
    t = load(AGENT)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    first = t.messages[2]
    assert [type(b) for b in first.content] == [ThinkingBlock, ToolUseBlock]
    assert (first.content[1].id, first.content[1].name, first.content[1].input) == ("call_a1", "ci_status", {"branch": "main"})
    results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(r.tool_use_id, r.is_error) for r in results] == [("call_a1", False), ("call_a2", True)]
    # The user's words after a result join its turn, and an image is a marker.
    assert "[image]" in message_text(t.messages[5]) and "Here is the dashboard:" in message_text(t.messages[5])
    assert anthropic_problems(t.messages) == [] and t.meta.title == "AutoGen AssistantAgentState"


def test_a_team_state_reads_the_group_chat_thread_when_no_agent_kept_a_context() -> None:
    t = load(TEAM)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert t.messages[1].usage is not None and t.messages[1].usage.input_tokens == 310
    assert message_text(t.messages[-1]).endswith("TERMINATE") and t.notes.skipped == {"message:ToolCallSummaryMessage": 1}


def test_a_team_of_agents_with_contexts_reads_the_longest_and_names_the_others(tmp_path: Path) -> None:
    agent = json.loads(AGENT.read_text(encoding="utf-8"))
    short = {"type": "AssistantAgentState", "llm_context": {"messages": agent["llm_context"]["messages"][:2]}}
    # Each agent of a team is kept in a container state, its own state under "agent_state".
    team = {"type": "TeamState", "agent_states": {
        "reviewer": {"type": "ChatAgentContainerState", "agent_state": short, "message_buffer": []},
        "coder": {"type": "ChatAgentContainerState", "agent_state": agent, "message_buffer": []},
    }}
    path = tmp_path / "team.json"
    path.write_text(json.dumps(team), encoding="utf-8")
    t = load(path)
    assert len(t.messages) == 7 and any("read 'coder'" in w and "reviewer (2 messages)" in w for w in t.notes.warnings)


def test_a_bare_message_list_and_unknown_types(tmp_path: Path) -> None:
    messages = json.loads(AGENT.read_text(encoding="utf-8"))["llm_context"]["messages"] + [{"type": "BrandNewEvent", "content": "x"}]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    t = load(path)
    assert detect(path) == "autogen" and t.notes.skipped == {"message:BrandNewEvent": 1}
    assert isinstance(t.messages[-1].content[0], TextBlock)


def test_a_result_without_a_call_id_names_where(tmp_path: Path) -> None:
    agent = json.loads(AGENT.read_text(encoding="utf-8"))
    del agent["llm_context"]["messages"][3]["content"][0]["call_id"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(agent), encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"\$\.llm_context\.messages\[3\]\.content\[0\].*without a call_id"):
        autogen.read(path)
