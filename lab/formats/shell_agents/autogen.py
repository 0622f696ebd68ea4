"""AutoGen (AgentChat 0.4+) saved state and message lists: what ``save_state()`` and ``TaskResult.messages`` hold.

Two families of typed messages, told apart by their ``type``:

* the model context (``autogen_core.models``), as an ``AssistantAgentState``'s
  ``llm_context.messages`` or a ``ChatCompletionContext`` state: what the
  model was sent. ``SystemMessage`` -> system; ``UserMessage`` -> user text (a
  list's strings, a marker per image); ``AssistantMessage`` -> its ``thought``
  as thinking, then its text or a tool_use per ``FunctionCall`` (``id``,
  ``name``, JSON-text ``arguments``); ``FunctionExecutionResultMessage`` -> a
  result per ``FunctionExecutionResult`` (``call_id``, ``is_error``).
* the chat's messages and events (``autogen_agentchat.messages``), as a
  ``TaskResult``'s ``messages`` or a group chat's ``message_thread``:
  ``TextMessage`` from ``user`` -> user text, from an agent -> its reply (with
  ``models_usage`` as usage); ``ToolCallRequestEvent`` / ``...ExecutionEvent``
  -> tool calls and results; ``ThoughtEvent`` -> thinking. Summaries shown to
  the user (``ToolCallSummaryMessage``), stop and handoff notices and other
  events are counted.

A team's state (``TeamState``: one state per agent) is read as the agent whose
model context is longest, with a warning naming the others; a team state that
holds no model context is read as its group chat's message thread.
Unknown message types are skipped and counted.

Detection: 96 for a state or list whose messages carry these ``type`` names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, opt_str, parse_arguments, text_block, token_count
from ..jsonio import read_json
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "MODEL_TYPES", "CHAT_TYPES", "from_document", "read", "sniff"]

NAME = "autogen"
MODEL_TYPES = frozenset({"SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"})
CHAT_TYPES = frozenset(
    {"TextMessage", "MultiModalMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage",
     "ThoughtEvent", "StopMessage", "HandoffMessage", "UserInputRequestedEvent", "MemoryQueryEvent",
     "ModelClientStreamingChunkEvent", "SelectSpeakerEvent", "CodeGenerationEvent", "CodeExecutionEvent", "StructuredMessage"}
)  # fmt: skip
_STATES = ("AssistantAgentState", "TeamState", "RoundRobinManagerState", "SelectorManagerState", "SwarmManagerState")


def _typed(value: Any) -> bool:
    return isinstance(value, dict) and (value.get("type") in MODEL_TYPES or value.get("type") in CHAT_TYPES)


def _media(item: Any) -> Block:
    return TextBlock(text="[image]") if isinstance(item, dict) else TextBlock(text=str(item))


class _Thread:
    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.model: str | None = None

    def message(self, m: Any, loc: Loc, key: str) -> None:
        if not isinstance(m, dict):
            self.notes.skip(f"record:{type(m).__name__}")
            return
        kind = m.get("type")
        content = m.get("content")
        if kind == "SystemMessage":
            self.b.add("system", text_block(content), key=key)
        elif kind in ("UserMessage", "MultiModalMessage") or (kind == "TextMessage" and m.get("source") == "user"):
            blocks = list[Block](text_block(content)) if isinstance(content, str) else [
                b for item in (content if isinstance(content, list) else []) for b in (text_block(item) if isinstance(item, str) else [_media(item)])
            ]
            if blocks:
                self.b.user_turn(blocks, key=key)
            else:
                self.notes.skip(f"{kind}:empty")
        elif kind in ("AssistantMessage", "TextMessage"):
            self.assistant(m, loc, key)
        elif kind == "ToolCallRequestEvent":
            self.calls(content, loc, key, _usage(m.get("models_usage")))
        elif kind in ("FunctionExecutionResultMessage", "ToolCallExecutionEvent"):
            self.results(content, loc, key)
        elif kind == "ThoughtEvent":
            thought = opt_str(content)
            if thought:
                self.b.add("assistant", [ThinkingBlock(thinking=thought)], key=key, merge=True)
        else:
            self.notes.skip(f"message:{kind if isinstance(kind, str) else 'untyped'}")

    def assistant(self, m: dict[str, Any], loc: Loc, key: str) -> None:
        content = m.get("content")
        blocks: list[Block] = [ThinkingBlock(thinking=t) for t in [opt_str(m.get("thought"))] if t]
        if isinstance(content, list):
            self.calls(content, loc, key, _usage(m.get("models_usage")), blocks)
            return
        blocks += text_block(content)
        if blocks:
            self.b.add("assistant", blocks, key=key, usage=_usage(m.get("models_usage")), merge=True)
        else:
            self.notes.skip("AssistantMessage:empty")

    def calls(self, content: Any, loc: Loc, key: str, usage: Usage | None, blocks: list[Block] | None = None) -> None:
        blocks = blocks or []
        if not isinstance(content, list):
            self.notes.skip("ToolCallRequestEvent:no call list")
            content = []
        for i, call in enumerate(content):
            if not isinstance(call, dict) or not opt_str(call.get("name")):
                self.notes.skip("FunctionCall:malformed")
                continue
            args = parse_arguments(call.get("arguments"), self.notes, loc.at("content").at(i).at("arguments"))
            blocks.append(self.b.use(opt_str(call.get("id")), call["name"], args, key=f"{key}.{i}"))
        if blocks:
            self.b.add("assistant", blocks, key=key, usage=usage, merge=True)

    def results(self, content: Any, loc: Loc, key: str) -> None:
        for i, r in enumerate(content if isinstance(content, list) else []):
            call_id = opt_str(r.get("call_id")) if isinstance(r, dict) else None
            if call_id is None:
                raise loc.at("content").at(i).error("a function result without a call_id", expected="a string 'call_id'")
            text = r.get("content")
            self.b.result(call_id, text if isinstance(text, str) else json.dumps(text, ensure_ascii=False), key=f"{key}.{i}", is_error=r.get("is_error") is True)


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    usage = Usage(input_tokens=token_count(value.get("prompt_tokens")), output_tokens=token_count(value.get("completion_tokens")))
    return usage if usage.total else None


def _context(state: dict[str, Any]) -> list[Any] | None:
    """An agent's model context: in its own state, or (in a team) its container's ``agent_state``."""
    inner = state.get("agent_state")
    if "llm_context" not in state and isinstance(inner, dict):
        state = inner
    llm = state.get("llm_context")
    messages = llm.get("messages") if isinstance(llm, dict) else None
    return messages if isinstance(messages, list) else None


def _pick(doc: dict[str, Any], notes: ImportNotes) -> tuple[list[Any], str]:
    """The messages to read from a state document, and the JSON path they are at."""
    own = _context(doc)
    if own is not None:
        return own, "$.llm_context.messages"
    agents = doc.get("agent_states")
    if isinstance(agents, dict):
        contexts = {name: _context(s) for name, s in agents.items() if isinstance(s, dict)}
        full = {name: msgs for name, msgs in contexts.items() if msgs}
        if full:
            name = max(full, key=lambda n: len(full[n]))
            others = [f"{n} ({len(m)} messages)" for n, m in full.items() if n != name]
            if others:
                notes.warnings.append(f"this team state holds the model context of {len(full)} agents; read {name!r}'s, the longest; others: {', '.join(others)}")
            nested = "" if "llm_context" in agents[name] else ".agent_state"
            return full[name], f"$.agent_states[{json.dumps(name)}]{nested}.llm_context.messages"
        for name, s in agents.items():
            thread = s.get("message_thread") if isinstance(s, dict) else None
            if isinstance(thread, list) and thread:
                return thread, f"$.agent_states[{json.dumps(name)}].message_thread"
    for key in ("messages", "message_thread"):
        if isinstance(doc.get(key), list):
            return doc[key], f"$.{key}"
    raise TranscriptError("no AutoGen messages found", where="$", expected="an agent or team state (llm_context.messages), or a list of AutoGen messages")


def _convert(messages: Iterable[tuple[Any, Loc]], notes: ImportNotes, file: str | None, title: str) -> Transcript:
    t = _Thread(notes)
    for n, (m, loc) in enumerate(messages):
        t.message(m, loc, f"m{n}")
    meta = TranscriptMeta(source_format=NAME, source_path=file, title=title)
    return Transcript(meta=meta, messages=t.b.finish(), notes=notes)


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """An agent or team state, a context state, a ``TaskResult``, or a list of messages."""
    notes = ImportNotes()
    if isinstance(doc, list):
        messages, path = doc, "$"
    elif isinstance(doc, dict):
        try:
            messages, path = _pick(doc, notes)
        except TranscriptError as e:
            raise TranscriptError(e.reason, file=file, where=e.where, expected=e.expected) from None
    else:
        raise TranscriptError("not an AutoGen state or message list", file=file, where="$", expected="a JSON object or list")
    notes.records_read = len(messages)
    base = Loc(file, path)
    kind = doc.get("type") if isinstance(doc, dict) else None
    title = f"AutoGen {kind}" if isinstance(kind, str) else "AutoGen messages"
    return _convert(((m, base.at(i)) for i, m in enumerate(messages)), notes, file, title)


def read(path: Path) -> Transcript:
    return from_document(read_json(path), file=str(path))


def _score(doc: Any) -> int:
    if isinstance(doc, list):
        return 96 if doc and _typed(doc[0]) else 0
    if not isinstance(doc, dict):
        return 0
    if doc.get("type") in _STATES:
        return 96
    for key in ("messages", "message_thread"):
        value = doc.get(key)
        if isinstance(value, list) and value and _typed(value[0]):
            return 96
    return 0


def sniff(probe: FileHead) -> int:
    doc = probe.document
    return _score(doc) if doc is not None else 0


FORMAT = Format(
    name=NAME,
    description="AutoGen AgentChat state (save_state: agent, team) and message lists (TaskResult.messages, model context)",
    sniff=sniff,
    read=read,
)
