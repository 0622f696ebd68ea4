"""Tool results where both provider APIs look for them, and tool calls left without one.

An exporter first puts every tool result where the APIs want it
(``settle_tool_results``), since a transcript is often not in that shape (a
log cut at its start, a subagent's result, an importer that lost the call,
results logged late):

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

A call no message answers (a session cut off while its tools ran) makes both
APIs refuse the request: ``pending_tool_calls`` finds them, ``close_pending``
answers each with an "interrupted" error result right after its call, and
``pending_note`` is the note an export adds either way.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence

from ..core.messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock, is_sent
from ..core.repair import ORPHAN, REPEAT, result_text, unique_id

__all__ = [
    "INTERRUPTED",
    "pending_tool_calls",
    "close_pending",
    "pending_note",
    "settle_tool_results",
    "export_warnings",
    "anthropic_tool_id",
    "openai_tool_id",
]

# What a pending tool call is answered with under ``close_pending``.
INTERRUPTED = "interrupted"


def pending_tool_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of the tool calls that no message answers, in order.

    Any of them, not only the last turn's, makes both APIs refuse the request; and a turn is what
    the exporter sends, which may be several messages (merged, or ending in one it drops as blank).
    """
    sent = [m for m in messages if is_sent(m)]
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
    callers = [i for i, m in enumerate(out) if m.role == "assistant" and is_sent(m)]
    # From the end, so that an inserted message does not move the callers still to do.
    for at in reversed(callers):
        ids = [b.id for b in out[at].content if isinstance(b, ToolUseBlock) and b.id in pending]
        if not ids:
            continue
        pending.difference_update(ids)
        results = tuple(ToolResultBlock(tool_use_id=tool_id, content=INTERRUPTED, is_error=True) for tool_id in ids)
        nxt = next((i for i in range(at + 1, len(out)) if is_sent(out[i])), None)
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
        new = unique_id(b.id, self.used, self.tool_id)
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
            return result_text(ORPHAN, b)
        new, at = found
        if new in self.answered:
            self.repeats.append(b.tool_use_id)
            return result_text(REPEAT, b)
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
    sent = [m for m in messages if is_sent(m)]
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
    if notes is not None:
        notes.extend(pass_.notes())
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
