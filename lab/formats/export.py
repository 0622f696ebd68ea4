"""Canonical messages as provider request bodies: Anthropic Messages and OpenAI chat.

Both exporters skip boundary messages (the lab's markers, never sent) and
keep every tool call and every tool result, so a pair present in the source is
present in the request (a result without its call is kept as text, below).
They place results where the APIs want them, but invent nothing: an
unanswered call stays unanswered (``lab.core.validate`` reports it), with one
exception asked for by name: ``close_pending=True`` answers every tool call
that no message answers (a session cut off while its tools ran, a call the
agent abandoned) with an "interrupted" error result right after the call, so
the request is one the API takes. Without it such calls get a note saying the
request will be refused.

A history whose first non-system message is from the user keeps a user
opening: when blank-dropping empties it, ``(empty message)`` stands in for
it (Anthropic refuses a request opened by the assistant, both one with no
message; ``lab.core.validate`` holds OpenAI to the first rule too).

Text that is empty or only whitespace is dropped (the Anthropic API refuses
an empty text block, and both refuse a message left with no content, which is
then dropped as well).

Anthropic: leading system messages become ``system`` (their texts joined by a
blank line; the key is left out when there is none); a system message later
in the history becomes user text prefixed ``[system] ``; consecutive messages
of one role are merged, tool results first within a user message as the API
requires; thinking blocks are kept only with a signature (the API rejects
unsigned ones); an image without a URL becomes a text placeholder; an error
result with no content says "error" (the API refuses it empty); a final
assistant text loses its trailing whitespace (the API refuses that too).

OpenAI: system messages stay ``system`` wherever they are; tool results become
``tool`` messages placed right after the assistant message that made the call;
tool calls carry their input as a JSON string; thinking is dropped; images
become ``image_url`` parts (a placeholder URL when the source had none).

Tool results are placed where both APIs look for them before anything else
(``settle_tool_results``), since a transcript is often not in that shape (a log
cut at its start, a subagent's result, an importer that lost the call, results
logged late):

- a result whose call no earlier message holds (an orphan), or a second result
  for a call already answered, becomes text in the same message, saying what it
  was (the API refuses a result without its call);
- a result that is not in the user message right after its call moves there
  (a user message is created when the next one is not a user message);
- a tool call outside an assistant message becomes text (its results are then
  orphans);
- tool ids are rewritten where the provider would refuse them: Anthropic takes
  ``[A-Za-z0-9_-]+``, OpenAI at most 40 characters, and both unique (a repeated
  call id gets a suffix; its results follow the nearest call before them).

Each of these adds one counted note; ``export_warnings`` picks out the notes a
caller should show as warnings (these, and pending calls left open).

``notes``, when given, collects one line per thing that was dropped or
replaced.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..core.messages import (
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Transcript,
    is_sent,
)

__all__ = [
    "to_anthropic",
    "to_openai",
    "image_placeholder_url",
    "is_exported",
    "pending_tool_calls",
    "close_pending",
    "pending_note",
    "settle_tool_results",
    "export_warnings",
    "anthropic_tool_id",
    "openai_tool_id",
    "INTERRUPTED",
    "EMPTY_OPENING",
]

# Stands in for an image whose bytes the lab never kept.
_PLACEHOLDER_URL = "https://placeholder.invalid/lab-image-omitted"


def image_placeholder_url(image: ImageBlock) -> str:
    return image.url or f"{_PLACEHOLDER_URL}?media_type={image.media_type}&bytes={image.size_bytes}"


# What a pending tool call is answered with under ``close_pending``.
INTERRUPTED = "interrupted"

# Boundary markers stay in the lab's history but never reach a provider.
is_exported = is_sent


def _blank(text: str) -> bool:
    return not text.strip()


# Stands in for a user opening that blank-dropping emptied.
EMPTY_OPENING = "(empty message)"


def _opened_by_user(messages: Sequence[Message]) -> bool:
    return next((m.role for m in messages if m.role != "system"), None) == "user"


def pending_tool_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of the tool calls that no message answers, in order.

    Any of them, not only the last turn's, makes both APIs refuse the request; and a turn is what
    the exporter sends, which may be several messages (merged, or ending in one it drops as blank).
    """
    sent = [m for m in messages if is_exported(m)]
    answered = {b.tool_use_id for m in sent for b in m.content if isinstance(b, ToolResultBlock)}
    out: list[str] = []
    for m in sent:
        if m.role == "assistant":
            out += [b.id for b in m.content if isinstance(b, ToolUseBlock) and b.id not in answered and b.id not in out]
    return out


def close_pending(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` where every pending tool call has an "interrupted" error result.

    The results go into the user message right after their call (created when there is none),
    where both APIs look for them. Nothing pending: the same messages.
    """
    pending = set(pending_tool_calls(messages))
    out = list(messages)
    if not pending:
        return out
    callers = [i for i, m in enumerate(out) if m.role == "assistant" and is_exported(m)]
    # From the end, so that an inserted message does not move the callers still to do.
    for at in reversed(callers):
        ids = [b.id for b in out[at].content if isinstance(b, ToolUseBlock) and b.id in pending]
        if not ids:
            continue
        pending.difference_update(ids)
        results = tuple(ToolResultBlock(tool_use_id=tool_id, content=INTERRUPTED, is_error=True) for tool_id in ids)
        nxt = next((i for i in range(at + 1, len(out)) if is_exported(out[i])), None)
        if nxt is not None and out[nxt].role == "user":
            out[nxt] = out[nxt].model_copy(update={"content": results + tuple(out[nxt].content)})
        else:
            out.insert(at + 1, Message(role="user", id=f"{out[at].id}-interrupted", content=results))
    return out


def pending_note(pending: Sequence[str], closed: bool, *, option: str = "close_pending=True") -> str:
    """The note an export adds for these pending tool call ids; ``option`` names the way to close them."""
    ids = ", ".join(pending)
    if closed:
        return f"{len(pending)} pending tool call(s) answered as {INTERRUPTED!r} (is_error): {ids}"
    return (
        f"{len(pending)} tool call(s) without a result ({ids}): "
        f"the API refuses this request as it is; {option} answers them as interrupted"
    )


def _close_or_note(messages: list[Message], close: bool, notes: list[str] | None) -> list[Message]:
    pending = pending_tool_calls(messages)
    if not pending:
        return messages
    _note(notes, pending_note(pending, close))
    return close_pending(messages) if close else messages


# --- tool results where the APIs look for them ---------------------------------------------

_ANTHROPIC_BAD_ID = re.compile(r"[^A-Za-z0-9_-]")
_OPENAI_ID_MAX = 40


def anthropic_tool_id(tool_id: str) -> str:
    """A tool id the Anthropic API takes (``^[a-zA-Z0-9_-]+$``): other characters become ``_``."""
    return _ANTHROPIC_BAD_ID.sub("_", tool_id) or "toolu_lab"


def openai_tool_id(tool_id: str) -> str:
    """A tool call id Chat Completions takes (at most 40 characters)."""
    if not tool_id:
        return "call_lab"
    if len(tool_id) <= _OPENAI_ID_MAX:
        return tool_id
    # Long ids of one agent share their prefixes: a digest of the whole id keeps them apart.
    digest = hashlib.sha1(tool_id.encode()).hexdigest()[:8]
    return f"{tool_id[: _OPENAI_ID_MAX - 9]}_{digest}"


def _same_id(tool_id: str) -> str:
    return tool_id


def _unique_id(tool_id: str, used: set[str], rule: Callable[[str], str]) -> str:
    out, n = rule(tool_id), 2
    while out in used:
        out, n = rule(f"{tool_id}_{n}"), n + 1
    return out


def _result_text(head: str, block: ToolResultBlock) -> TextBlock:
    head = head.format(id=block.tool_use_id, error=", an error" if block.is_error else "")
    return TextBlock(text=f"{head}\n{block.content}" if block.content.strip() else head)


_ORPHAN = "[tool result for {id}, whose call is not in this transcript{error}]"
_REPEAT = "[another tool result for {id}, whose call was already answered{error}]"


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:5])
    return f"{shown}, ..." if len(ids) > 5 else shown


class _Settler:
    """One pass over sent messages: each block kept, rewritten or set aside to move; and what changed, for the notes."""

    def __init__(self, tool_id: Callable[[str], str]) -> None:
        self.tool_id = tool_id
        self.used: set[str] = set()
        self.current: dict[str, tuple[str, int]] = {}  # a call's id as written -> its id as sent, its message's index
        self.answered: set[str] = set()
        self.late: dict[int, list[ToolResultBlock]] = {}  # results to move, by the index of their call's message
        self.orphans: list[str] = []
        self.repeats: list[str] = []
        self.moved: list[str] = []
        self.strays: list[str] = []
        self.renamed: list[tuple[str, str]] = []

    def block(self, b: Block, i: int, m: Message) -> Block | None:
        """What stays in message ``i`` for ``b``; None when it moves."""
        if isinstance(b, ToolUseBlock):
            return self._call(b, i, m)
        if isinstance(b, ToolResultBlock):
            return self._result(b, i, m)
        return b

    def _call(self, b: ToolUseBlock, i: int, m: Message) -> Block:
        if m.role != "assistant":
            self.strays.append(b.id)
            call = json.dumps(b.input, ensure_ascii=False)
            return TextBlock(text=f"[tool call {b.name} ({b.id}) outside an assistant message, input {call}]")
        new = _unique_id(b.id, self.used, self.tool_id)
        self.used.add(new)
        self.current[b.id] = (new, i)
        if new == b.id:
            return b
        self.renamed.append((b.id, new))
        return b.model_copy(update={"id": new})

    def _result(self, b: ToolResultBlock, i: int, m: Message) -> Block | None:
        found = self.current.get(b.tool_use_id)
        if found is None:
            self.orphans.append(b.tool_use_id)
            return _result_text(_ORPHAN, b)
        new, at = found
        if new in self.answered:
            self.repeats.append(b.tool_use_id)
            return _result_text(_REPEAT, b)
        self.answered.add(new)
        if new != b.tool_use_id:
            b = b.model_copy(update={"tool_use_id": new})
        if i == at + 1 and m.role == "user":
            return b
        self.moved.append(new)
        self.late.setdefault(at, []).append(b)
        return None

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.orphans:
            out.append(
                f"{len(self.orphans)} tool result(s) whose call is not in this transcript sent as text "
                f"({_ids(self.orphans)}): the API refuses a result without its call"
            )
        if self.repeats:
            out.append(f"{len(self.repeats)} repeated tool result(s) for a call already answered sent as text ({_ids(self.repeats)})")
        if self.moved:
            out.append(
                f"{len(self.moved)} tool result(s) moved to the user message right after their call ({_ids(self.moved)}): "
                "the API wants them there"
            )
        if self.strays:
            out.append(f"{len(self.strays)} tool call(s) outside an assistant message sent as text ({_ids(self.strays)})")
        if self.renamed:
            pairs = [f"{a} -> {b}" for a, b in self.renamed]
            out.append(f"{len(self.renamed)} tool id(s) rewritten, repeated or not taken by the API ({_ids(pairs)})")
        return out


def settle_tool_results(
    messages: Sequence[Message], *, notes: list[str] | None = None, tool_id: Callable[[str], str] = _same_id
) -> list[Message]:
    """The sent ``messages`` with every tool result where both APIs look for it (see the module docstring).

    A result answers the nearest call with its id in an earlier message (or earlier in the same one).
    ``tool_id`` maps an id to one the provider takes; ids are kept unique. Pure: new messages, counted notes.
    """
    sent = [m for m in messages if is_exported(m)]
    pass_ = _Settler(tool_id)
    content = [[k for b in m.content if (k := pass_.block(b, i, m)) is not None] for i, m in enumerate(sent)]
    late = pass_.late
    out: list[Message] = []
    for i, m in enumerate(sent):
        blocks = content[i]
        if m.role == "user" and i - 1 in late:
            blocks = [*late.pop(i - 1), *blocks]
        # A message emptied only by moving its results goes; one that came empty is the exporter's to note.
        if blocks or not m.content:
            out.append(m if blocks == list(m.content) else m.model_copy(update={"content": tuple(blocks)}))
        if i in late and not (i + 1 < len(sent) and sent[i + 1].role == "user"):
            out.append(Message(role="user", id=f"{m.id}-results", content=tuple(late.pop(i))))
    for text in pass_.notes():
        _note(notes, text)
    return out


# Notes that say the request differs from the transcript in a way the API forced, or will be refused.
_WARNING_PARTS = (
    "without a result (",
    "whose call is not in this transcript sent as text",
    "repeated tool result(s)",
    "moved to the user message right after their call",
    "outside an assistant message sent as text",
    "tool id(s) rewritten",
)


def export_warnings(notes: Sequence[str]) -> list[str]:
    """The notes a caller should show as ``warning:`` lines (as the CLI does for pending calls)."""
    return [n for n in notes if any(part in n for part in _WARNING_PARTS)]


def _split_input(
    source: Transcript | Sequence[Message], tools: Sequence[ToolSpec] | None
) -> tuple[list[Message], list[ToolSpec]]:
    if isinstance(source, Transcript):
        return [m for m in source.messages if is_exported(m)], list(tools if tools is not None else source.tools)
    return [m for m in source if is_exported(m)], list(tools or [])


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def _anthropic_block(block: Block, msg: Message, notes: list[str] | None) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        if _blank(block.text):
            _note(notes, f"{msg.id}: empty or whitespace-only text block dropped")
            return None
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        if block.signature is None:
            _note(notes, f"{msg.id}: thinking block without signature dropped")
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if isinstance(block, ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
        if block.is_error:
            out["is_error"] = True
            if _blank(block.content):
                _note(notes, f"{msg.id}: empty error result for {block.tool_use_id} given the text 'error'")
                out["content"] = "error"
        return out
    if block.url:
        return {"type": "image", "source": {"type": "url", "url": block.url}}
    _note(notes, f"{msg.id}: image ({block.size_bytes} bytes) replaced by a text placeholder")
    return {"type": "text", "text": f"[image omitted: {block.media_type}, {block.size_bytes} bytes]"}


def _system_text(msg: Message) -> str:
    return "\n".join(b.text for b in msg.content if isinstance(b, TextBlock))


def _tools_anthropic(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema or {"type": "object", "properties": {}}}
        for t in tools
    ]


def to_anthropic(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = False,
) -> dict[str, Any]:
    """An Anthropic Messages request body: ``{"system"?, "messages", "tools"?}``."""
    messages, specs = _split_input(source, tools)
    messages = settle_tool_results(messages, notes=notes, tool_id=anthropic_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    system_parts: list[str] = []
    start = 0
    while start < len(messages) and messages[start].role == "system":
        text = _system_text(messages[start])
        if not _blank(text):
            system_parts.append(text)
        start += 1
    turns: list[dict[str, Any]] = []
    for msg in messages[start:]:
        role = msg.role
        if role == "system":
            role = "user"
            text = _system_text(msg)
            blocks: list[dict[str, Any]] = [] if _blank(text) else [{"type": "text", "text": f"[system] {text}"}]
        else:
            blocks = [d for d in (_anthropic_block(b, msg, notes) for b in msg.content) if d is not None]
        if not blocks:
            _note(notes, f"{msg.id}: nothing left to send, message dropped")
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if _opened_by_user(messages[start:]) and (not turns or turns[0]["role"] != "user"):
        _note(notes, f"the opening user message was empty: sent as {EMPTY_OPENING!r}")
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": EMPTY_OPENING}]})
    for turn in turns:
        if turn["role"] == "user":
            # The API wants a user message's tool results before anything else in it.
            turn["content"].sort(key=lambda d: d["type"] != "tool_result")
    if turns and turns[-1]["role"] == "assistant" and turns[-1]["content"][-1]["type"] == "text":
        last = turns[-1]["content"][-1]
        if last["text"] != last["text"].rstrip():
            _note(notes, "trailing whitespace of the final assistant text removed")
            turns[-1]["content"][-1] = {**last, "text": last["text"].rstrip()}
    body: dict[str, Any] = {}
    if system_parts:
        body["system"] = "\n\n".join(system_parts)
    body["messages"] = turns
    if specs:
        body["tools"] = _tools_anthropic(specs)
    return body


def _openai_user_content(blocks: list[Block]) -> str | list[dict[str, Any]] | None:
    texts = [b for b in blocks if isinstance(b, TextBlock) and not _blank(b.text)]
    images = [b for b in blocks if isinstance(b, ImageBlock)]
    if not images:
        return "\n\n".join(b.text for b in texts) if texts else None
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if isinstance(b, TextBlock) and not _blank(b.text):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": image_placeholder_url(b)}})
    return parts


def _note_blank_texts(msg: Message, notes: list[str] | None) -> None:
    blank = sum(1 for b in msg.content if isinstance(b, TextBlock) and _blank(b.text))
    if blank:
        _note(notes, f"{msg.id}: {blank} empty or whitespace-only text block(s) dropped")


def _tool_message(block: ToolResultBlock) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content}


def _tools_openai(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def _openai_assistant(msg: Message, notes: list[str] | None) -> dict[str, Any] | None:
    """An assistant message as its Chat Completions entry (text and tool calls); None when nothing is left."""
    text = "\n\n".join(b.text for b in msg.content if isinstance(b, TextBlock) and not _blank(b.text))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)},
        }
        for b in msg.content
        if isinstance(b, ToolUseBlock)
    ]
    _note_blank_texts(msg, notes)
    if any(isinstance(b, ThinkingBlock) for b in msg.content):
        _note(notes, f"{msg.id}: thinking dropped (chat completions has no thinking input)")
    if any(isinstance(b, ImageBlock) for b in msg.content):
        _note(notes, f"{msg.id}: image in an assistant message dropped")
    if not (text or calls):
        _note(notes, f"{msg.id}: nothing left to send, message dropped")
        return None
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = calls
    return entry


def to_openai(
    source: Transcript | Sequence[Message],
    tools: Sequence[ToolSpec] | None = None,
    *,
    notes: list[str] | None = None,
    close_pending: bool = False,
) -> dict[str, Any]:
    """An OpenAI Chat Completions request body: ``{"messages", "tools"?}``."""
    messages, specs = _split_input(source, tools)
    messages = settle_tool_results(messages, notes=notes, tool_id=openai_tool_id)
    messages = _close_or_note(messages, close_pending, notes)
    out: list[dict[str, Any]] = []
    # Settled: every result is in the user message right after its call, so its tool messages follow the call.
    for msg in messages:
        if msg.role == "system":
            if _blank(_system_text(msg)):
                _note(notes, f"{msg.id}: empty system message dropped")
            else:
                out.append({"role": "system", "content": _system_text(msg)})
            continue
        if msg.role == "assistant":
            entry = _openai_assistant(msg, notes)
            if entry is not None:
                out.append(entry)
            continue
        stay = list(msg.content)
        out.extend(_tool_message(b) for b in stay if isinstance(b, ToolResultBlock))
        if any(isinstance(b, ThinkingBlock) for b in stay):
            _note(notes, f"{msg.id}: thinking dropped")
        _note_blank_texts(msg, notes)
        content = _openai_user_content([b for b in stay if not isinstance(b, ToolResultBlock)])
        if content is not None:
            out.append({"role": "user", "content": content})
        elif not any(isinstance(b, ToolResultBlock) for b in msg.content):
            _note(notes, f"{msg.id}: nothing left to send, message dropped")
    first = next((k for k, m in enumerate(out) if m["role"] != "system"), len(out))
    if _opened_by_user(messages) and (first == len(out) or out[first]["role"] != "user"):
        _note(notes, f"the opening user message was empty: sent as {EMPTY_OPENING!r}")
        out.insert(first, {"role": "user", "content": EMPTY_OPENING})
    body: dict[str, Any] = {"messages": out}
    if specs:
        body["tools"] = _tools_openai(specs)
    return body
