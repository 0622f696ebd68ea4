"""Transcripts written as one chat message per JSON line: the part both chat importers share.

Home-made agents often log their history as JSONL, one message a line, in the
shape of the API they call: OpenAI Chat Completions (``{"role", "content",
"tool_calls", "tool_call_id"}``) or Anthropic Messages (``{"role", "content":
[blocks]}``). ``openai_chat`` and ``anthropic`` convert the messages; this
module finds them in the lines and decides which of the two shapes a file is.

A line holds a message when it is one of:

* the message itself, ``{"role": ..., ...}`` (a ``type`` of ``message`` or of
  the role itself is allowed, as some loggers add one);
* a message wrapped one level, ``{"message": {"role": ...}, ...}``.

The role must be a chat role (system, developer, user, assistant, tool,
function), and the message must carry ``content``, ``tool_calls``,
``function_call`` or ``tool_call_id``: a wrapped event such as Managed Agents'
``{role, kind, time, raw}`` has a role and nothing a message holds. Records
with a ``raw``, ``parentUuid`` or ``parent_tool_use_id`` key or a dotted ``type``/``kind`` (event
names) belong to other formats and are never messages. A ``timestamp`` or ``created_at`` on the line (else on the
message) becomes the message's timestamp. Every other line (metadata, usage
records, events) is skipped and counted as ``record:<type>``. Blank lines are
ignored; a last line cut off mid-write (a log still being written) is a
warning once some record before it parsed; any other broken line is a
``TranscriptError`` naming its line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.messages import ImportNotes, Message, ToolResultBlock, ToolUseBlock
from ..errors import TranscriptError
from .history_builder import parse_timestamp
from .jsonio import gc_paused, is_jsonl, iter_log_lines

__all__ = [
    "MESSAGE_ROLES",
    "MessageLine",
    "message_of",
    "record_kind",
    "iter_messages",
    "collect_messages",
    "merge_turns",
    "joined_note",
    "is_message_lines",
    "line_scores",
]

MESSAGE_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_STAMP_KEYS = ("timestamp", "created_at")

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})
# Content parts only the Responses API writes: such lines belong to the Responses importer.
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image"})
_OPENAI_ROLES = frozenset({"tool", "function", "developer"})
# Keys of records that carry a whole conversation; lines holding them are not message lines.
_CONVERSATION_KEYS = frozenset({"messages", "request", "history", "input"})


@dataclass(frozen=True)
class MessageLine:
    line: int
    # JSON path of the message inside its line: "$" or "$.message".
    path: str
    message: dict[str, Any]
    timestamp: datetime | None

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.path == "$" else f"line {self.line}, {self.path}"


def _stamp(*sources: dict[str, Any]) -> Any:
    for source in sources:
        for key in _STAMP_KEYS:
            value = source.get(key)
            if value is not None and value != "":
                return value
    return None


# A message carries at least one of these; a record with a chat role and none of them is not one
# (an event wrapped as {role, kind, time, raw} keeps its payload elsewhere).
_MESSAGE_PAYLOAD = ("content", "tool_calls", "function_call", "tool_call_id")
# Keys of records that wrap another format's event or entry: never a bare message. ``raw``: Managed
# Agents events wrapped one per line; ``parentUuid``: Claude Code entries, whose chain (not the
# line order) decides which are the conversation; ``parent_tool_use_id``: Agent SDK records, whose
# blocks of one reply come one per line and whose subagent records are sidechains.
_FOREIGN_KEYS = ("raw", "parentUuid", "parent_tool_use_id")


def _is_message(message: dict[str, Any]) -> bool:
    role = message.get("role")
    # Only text is a role: a list or object would not even hash for the set lookup.
    return isinstance(role, str) and role in MESSAGE_ROLES and any(k in message for k in _MESSAGE_PAYLOAD)


def _dotted(value: Any) -> bool:
    # Event names such as "agent.message" or "session.status_idle" are namespaced with dots.
    return isinstance(value, str) and "." in value


def message_of(record: Any) -> tuple[str, dict[str, Any], Any] | None:
    """``(path, message, raw timestamp)`` when a JSONL record holds a chat message, else None.

    A message has a chat role and a payload (``content``, ``tool_calls``, ``function_call`` or
    ``tool_call_id``); records with a ``raw``, ``parentUuid`` or ``parent_tool_use_id`` key, or a dotted ``type`` or
    ``kind`` (event names), belong to other formats.
    """
    if not isinstance(record, dict) or any(k in record for k in _FOREIGN_KEYS):
        return None
    if _dotted(record.get("type")) or _dotted(record.get("kind")):
        return None
    role = record.get("role")
    if isinstance(role, str):
        kind = record.get("type")
        if _is_message(record) and (kind is None or kind == "message" or kind == role):
            return "$", record, _stamp(record)
        return None
    inner = record.get("message")
    if isinstance(inner, dict) and _is_message(inner):
        return "$.message", inner, _stamp(record, inner)
    return None


def record_kind(record: Any) -> str:
    """How a line that is not a message is counted: its type (or event/kind) name."""
    if not isinstance(record, dict):
        return "non_object"
    for key in ("type", "event", "kind", "record_type"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return "unknown"


def iter_messages(path: str | os.PathLike[str], notes: ImportNotes) -> Iterator[MessageLine]:
    """Stream the messages of a JSONL file, counting every line read and every line skipped.

    Raises ``TranscriptError`` for a broken line (with its number) and for a
    file without a single message.
    """
    file = str(path)
    found = 0
    for line_no, record in iter_log_lines(path, notes):
        hit = message_of(record)
        if hit is None:
            notes.skip(f"record:{record_kind(record)}")
            continue
        where, message, raw_stamp = hit
        found += 1
        yield MessageLine(line_no, where, message, parse_timestamp(raw_stamp))
    if not found:
        raise TranscriptError(
            "no chat messages found", file=file, expected="JSON lines holding {role, content} messages"
        )


def _source_id(message: dict[str, Any]) -> str | None:
    value = message.get("id")
    return value if isinstance(value, str) and value else None


def collect_messages(
    path: str | os.PathLike[str], notes: ImportNotes, convert: Callable[[MessageLine, int], Message | None], *, merge: bool = False
) -> tuple[list[Message], str | None]:
    """Convert every message line (``convert`` gets the line and its message index; None drops it).

    Returns the messages, ids made unique the way request bodies do it
    (``id#index`` for a repeat), and the first model a message names. With
    ``merge``, consecutive lines of one role are joined first (``merge_turns``)
    and a note says how many.
    """
    pieces: list[tuple[Message, str | None]] = []
    # The message index of each piece: a repeated id becomes ``id#index``.
    indexes: list[int] = []
    model: str | None = None
    with gc_paused():
        for index, line in enumerate(iter_messages(path, notes)):
            msg = convert(line, index)
            if model is None and isinstance(line.message.get("model"), str):
                model = line.message["model"]
            if msg is not None:
                pieces.append((msg, _source_id(line.message)))
                indexes.append(index)
        merged = [msg for msg, _ in pieces]
        if merge:
            merged, joined = merge_turns(pieces)
            if joined:
                notes.warnings.append(joined_note(joined, len(merged)))
                indexes = list(range(len(merged)))
        messages: list[Message] = []
        seen: set[str] = set()
        for index, msg in zip(indexes, merged, strict=True):
            if msg.id in seen:
                msg = msg.model_copy(update={"id": f"{msg.id}#{index}"})
            seen.add(msg.id)
            messages.append(msg)
    return messages, model


def _results_first(message: Message, calls: list[str]) -> Message:
    """A user message with its tool results first, in the order of the calls they answer.

    The Messages API wants a turn's tool results at the start of the next user message; a log
    written one block per record may put a note or a later result between them.
    """
    content = message.content
    results = [b for b in content if isinstance(b, ToolResultBlock)]
    if not results:
        return message
    rank = {tool_id: i for i, tool_id in enumerate(calls)}
    ordered = sorted(results, key=lambda b: rank.get(b.tool_use_id, len(rank)))
    rest = [b for b in content if not isinstance(b, ToolResultBlock)]
    blocks = (*ordered, *rest)
    return message if blocks == content else message.model_copy(update={"content": blocks})


def merge_turns(pieces: Iterable[tuple[Message, str | None]]) -> tuple[list[Message], int]:
    """Join consecutive messages of one role into one, and put tool results after the calls they answer.

    Each piece is a message and the id its record gave it (None when it had none). Consecutive
    pieces of one role join when neither has an id, or both have the same one (one API message
    written a block per record, as Claude Code does): a log written one block per record (a
    sanitised Claude Code export, a flat block export) would otherwise answer a tool call with
    another assistant message. Pieces with different ids stay apart, as their writer said.
    The first piece keeps its id and timestamp; usage comes from the last piece that has one.
    Returns the messages and how many pieces were joined into an earlier one.
    """
    out: list[Message] = []
    keys: list[str | None] = []
    joined = 0
    for message, key in pieces:
        if out and out[-1].role == message.role and keys[-1] == key and message.boundary is None and out[-1].boundary is None:
            prev = out[-1]
            update: dict[str, Any] = {"content": prev.content + message.content}
            if message.usage is not None:
                update["usage"] = message.usage
            out[-1] = prev.model_copy(update=update)
            joined += 1
            continue
        out.append(message)
        keys.append(key)
    if joined:
        for i in range(1, len(out)):
            if out[i].role == "user" and out[i - 1].role == "assistant":
                calls = [b.id for b in out[i - 1].content if isinstance(b, ToolUseBlock)]
                if calls:
                    out[i] = _results_first(out[i], calls)
    return out, joined


def joined_note(joined: int, messages: int) -> str:
    """The note ``merge_turns``'s work leaves: records joined into messages."""
    return (
        f"joined {joined} record(s) into the message before them ({messages} messages): consecutive records of one role "
        "without message ids are one message, with tool results after their calls"
    )


def is_message_lines(path: str | os.PathLike[str]) -> bool:
    """True when the file is JSONL: its first line a whole JSON object, and another line after it.

    ``jsonio.is_jsonl``: cheap on documents, and a first line of any length counts.
    """
    return is_jsonl(path)


# -- detection -------------------------------------------------------------------


def _traits(message: dict[str, Any]) -> set[str]:
    """Which API only could have written this message: "openai", "anthropic", or "foreign" for neither."""
    traits: set[str] = set()
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        first = calls[0]
        if isinstance(first, dict) and "function" not in first and first.get("type") != "custom":
            traits.add("foreign")  # MiniCode's flat {id, name, input} calls
        traits.add("openai")
    if message["role"] in _OPENAI_ROLES or "tool_call_id" in message or isinstance(message.get("function_call"), dict):
        traits.add("openai")
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if not isinstance(kind, str):
                continue  # a list or object as the type: no trait (and would not hash for the set lookups)
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and isinstance(part.get("source"), dict)):
                traits.add("anthropic")
            elif kind == "image_url":
                traits.add("openai")
            elif kind in _RESPONSES_PARTS:
                traits.add("foreign")
    return traits


def line_scores(records: list[Any] | None) -> dict[str, int]:
    """Confidence (0..100) of ``openai_chat`` and ``anthropic`` that these JSONL records are messages.

    Lines only Chat writes score 90 for Chat, lines with Anthropic blocks 90
    for Anthropic; plain user/assistant text fits both, and goes to Chat (55).
    Scores stay under the formats that own other JSONL (Claude Code 95, Codex
    95, Responses items 80) unless a line carries traits those never write.
    When most records are not messages the claim is weak (20): any format
    that knows the records better wins. Records carrying a whole conversation
    (``messages``, ``request``, ``history``, ``input``) make a log of requests
    or trajectories, never a message log: 0.
    """
    scores = {"openai_chat": 0, "anthropic": 0}
    if not records:
        return scores
    if any(isinstance(rec, dict) and _CONVERSATION_KEYS & rec.keys() for rec in records):
        return scores  # a log of whole conversations (request bodies, trajectories), not of messages
    messages = [hit[1] for hit in map(message_of, records) if hit is not None]
    if not messages:
        return scores
    traits: set[str] = set()
    for m in messages:
        traits |= _traits(m)
    if "foreign" in traits or {"openai", "anthropic"} <= traits:
        return scores
    weak = len(messages) * 2 < len(records)
    if "anthropic" in traits:
        scores["anthropic"] = 20 if weak else 90
    else:
        scores["openai_chat"] = 20 if weak else 90 if "openai" in traits else 55
    return scores

