"""Repair a history the providers would refuse, the way the agents themselves do.

Real logs break the providers' rules (``validate.py``) in a few recurring
ways: a turn aborted while its tools ran leaves calls with no result (Codex's
``turn_aborted``, Claude Code's interrupts); a log written one content block
per record splits one assistant reply into several messages, so a call is
followed by another assistant message instead of its result; a task event the
importer does not read leaves the history opening with the assistant; a
model writes a text block of spaces. Replaying or exporting such a history as
it is sends requests the API refuses, whatever the compaction config, and
compares configs on noise.

``repair(messages)`` returns a history both providers accept, and says once
per kind what it changed (``Repaired.notes``, with ``counts`` by kind):

- whitespace-only text blocks are dropped, and messages left with nothing
  (or sent with nothing) are dropped; an assistant message with neither text
  nor a tool call (thinking only) joins the assistant message next to it, or
  is dropped when it has none;
- a tool call in a user message, or a tool result in an assistant message,
  becomes text saying what it was;
- a run of consecutive messages of one role becomes one message when the
  API needs it: assistant records where a call is followed by more of the
  same reply, user records where results follow the first one (the call's
  results must all be in the very next message);
- a repeated tool call id gets a suffix, and the results after it follow it;
- every call is answered in the message right after it: its result is moved
  there when it came later, and a call whose result never came (an aborted or
  interrupted turn, a log cut while the tool ran) gets the result an agent
  sends for an aborted call, an error marked as the lab's (``SYNTHETIC``); so
  no request ever ends on an unanswered call;
- a result that answers no call (its call is not in the file, or came after
  it) or a second result for one call becomes text saying what it was;
- a history whose first message after the system prompt is the assistant's
  gets the task in front: a copy of the first user text in the file, or a
  placeholder turn when there is none (Bedrock refuses an assistant opening,
  see ``validate.py``).

A history that needs none of this is returned as the same list of the same
objects, so replays and their caches see exactly what they saw before.
Messages keep their ids; a merged run keeps its first message's id, and a
message the repair adds is named after the one it follows. Boundary markers
(never sent) stay where they are, and nothing is merged across one. The input
is never changed (messages are frozen; the list is copied), and repairing a
repaired history changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .identity import identity_key
from .lru import SharedLRU
from .messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock, is_sent

__all__ = ["Repaired", "repair", "opening_turn", "result_text", "unique_id", "SYNTHETIC", "NO_TASK", "ORPHAN", "REPEAT", "clear_cache"]

# The result given to a call whose result never came, as agents answer a call the user aborted.
SYNTHETIC = "[aborted by the user: no result was recorded for this tool call; synthetic result added by the lab]"
# The opening turn of a history that starts with the assistant and holds no user text.
NO_TASK = "[no task in this transcript: the session opens with the assistant; placeholder turn added by the lab]"

# What a result becomes when its call is not in the history, or was already answered (the exporters use them too).
ORPHAN = "[tool result for {id}, whose call is not in this transcript{error}]"
REPEAT = "[another tool result for {id}, whose call was already answered{error}]"

# The notes, one per kind, in the order the repairs run.
_NOTES = {
    "blank_text": "{n} whitespace-only text block(s) dropped (the API refuses blank text)",
    "empty_message": "{n} empty message(s) dropped (the API refuses a message with no content)",
    "stray_call": "{n} tool call(s) outside an assistant message sent as text",
    "stray_result": "{n} tool result(s) outside a user message sent as text",
    "merged": "{n} run(s) of consecutive same-role messages merged into one message each (a call's result must be in the very next message)",
    "thinking_only": "{n} assistant message(s) with only thinking (neither text nor a tool call) dropped",
    "renamed": "{n} repeated tool call id(s) given a suffix (ids must be unique)",
    "moved": "{n} tool result(s) moved to the message right after their call (the API wants them there)",
    "synthetic": "{n} tool call(s) had no result (aborted turns): answered with a synthetic 'aborted' result",
    "synthetic_end": "{n} tool call(s) at the end of the history had no result (the log stops there): answered with a synthetic 'aborted' result",
    "orphan": "{n} tool result(s) whose call is not in this transcript (or comes after it) sent as text",
    "repeat": "{n} repeated tool result(s) for a call already answered sent as text",
    "task_copied": "the history opened with the assistant: the first user text ({id}) copied in front as the task",
    "placeholder": "the history opened with the assistant and holds no user text: a placeholder user turn added in front",
}


@dataclass
class Repaired:
    """``repair``'s answer: the history, a note per kind of change, and how many of each."""

    messages: list[Message]
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.counts)


# Ids named in a note, at most.
_SHOWN = 5


class _Log:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.ids: dict[str, list[str]] = {}
        self.task_id = ""

    def add(self, kind: str, n: int = 1, *, tool_id: str | None = None) -> None:
        if n:
            self.counts[kind] = self.counts.get(kind, 0) + n
        if tool_id is not None:
            self.ids.setdefault(kind, []).append(tool_id)

    def notes(self) -> list[str]:
        out: list[str] = []
        for kind in _NOTES:
            if kind not in self.counts:
                continue
            line = _NOTES[kind].format(n=self.counts[kind], id=self.task_id)
            ids = self.ids.get(kind)
            if ids:
                line += f" ({', '.join(ids[:_SHOWN])}{', ...' if len(ids) > _SHOWN else ''})"
            out.append(line)
        return out


def _with(m: Message, blocks: Sequence[Block]) -> Message:
    blocks = tuple(blocks)
    return m if blocks == m.content else m.model_copy(update={"content": blocks})


def result_text(head: str, b: ToolResultBlock) -> TextBlock:
    """A tool result sent as text: ``head`` (``ORPHAN``, ``REPEAT`` or the like) with the result's content under it."""
    head = head.format(id=b.tool_use_id, error=", an error" if b.is_error else "")
    return TextBlock(text=f"{head}\n{b.content}" if b.content.strip() else head)


def unique_id(tool_id: str, used: set[str], rule: Callable[[str], str] = str) -> str:
    """``rule(tool_id)``, or with a suffix ``_2``, ``_3``... until it is not in ``used`` (the caller adds it);
    ``rule`` maps an id to one the provider takes (the exporters' id rules)."""
    out, n = rule(tool_id), 2
    while out in used:
        out, n = rule(f"{tool_id}_{n}"), n + 1
    return out


def _has_call(m: Message) -> bool:
    return any(isinstance(b, ToolUseBlock) for b in m.content)


def _has_result(m: Message) -> bool:
    return any(isinstance(b, ToolResultBlock) for b in m.content)


def _speaks(m: Message) -> bool:
    """Whether an assistant message has what chat completions needs: text or a tool call."""
    return any(isinstance(b, (TextBlock, ToolUseBlock)) for b in m.content)


# -- the passes; each returns its input list when it changes nothing -----------------------------------


def _clean(messages: list[Message], log: _Log) -> list[Message]:
    """Blank text and misfiled blocks out of sent messages, then empty sent messages out."""
    out: list[Message] = []
    changed = False
    for m in messages:
        if not is_sent(m):
            out.append(m)
            continue
        blocks: list[Block] = []
        for b in m.content:
            if isinstance(b, TextBlock) and not b.text.strip():
                log.add("blank_text")
            elif isinstance(b, ToolUseBlock) and m.role != "assistant":
                log.add("stray_call", tool_id=b.id)
                blocks.append(TextBlock(text=f"[tool call {b.name} ({b.id}) outside an assistant message, input {json.dumps(b.input, ensure_ascii=False)}]"))
            elif isinstance(b, ToolResultBlock) and m.role != "user":
                log.add("stray_result", tool_id=b.tool_use_id)
                blocks.append(result_text("[tool result for {id} outside a user message{error}]", b))
            else:
                blocks.append(b)
        if not blocks:
            log.add("empty_message")
            changed = True
            continue
        new = _with(m, blocks)
        changed = changed or new is not m
        out.append(new)
    return out if changed else messages


def _merge(run: list[Message]) -> Message:
    first = run[0]
    usage = next((m.usage for m in reversed(run) if m.usage is not None), None)
    content = tuple(b for m in run for b in m.content)
    return first.model_copy(update={"content": content, "usage": usage})


def _needs_merge(run: list[Message]) -> bool:
    if len(run) < 2:
        return False
    if run[0].role == "assistant":
        # A call followed by more of the reply, or a member chat completions refuses on its own.
        return any(_has_call(m) for m in run[:-1]) or not all(_speaks(m) for m in run)
    if run[0].role == "user":
        return any(_has_result(m) for m in run[1:])
    return False


def _runs(messages: list[Message], log: _Log) -> list[Message]:
    """Consecutive sent user (or assistant) messages merged where the APIs need one message."""
    out: list[Message] = []
    changed = False
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        j = i + 1
        if is_sent(m) and m.role != "system":
            while j < n and is_sent(messages[j]) and messages[j].role == m.role:
                j += 1
        run = messages[i:j]
        if _needs_merge(run):
            merged = _merge(run)
            log.add("merged")
            out.append(merged)
            changed = True
        else:
            out.extend(run)
        i = j
    # An assistant message that still says nothing chat completions takes (thinking only) has no neighbour to join.
    kept = [m for m in out if not (is_sent(m) and m.role == "assistant" and not _speaks(m))]
    if len(kept) != len(out):
        log.add("thinking_only", len(out) - len(kept))
        return kept
    return out if changed else messages


def _unique_ids(messages: list[Message], log: _Log) -> list[Message]:
    """A repeated call id gets a suffix; a result follows the nearest call before it with its id."""
    used: set[str] = set()
    current: dict[str, str] = {}
    out: list[Message] = []
    changed = False
    for m in messages:
        if not is_sent(m):
            out.append(m)
            continue
        blocks: list[Block] = []
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                new = unique_id(b.id, used)
                used.add(new)
                current[b.id] = new
                if new != b.id:
                    log.add("renamed", tool_id=f"{b.id} -> {new}")
                    b = b.model_copy(update={"id": new})
            elif isinstance(b, ToolResultBlock) and current.get(b.tool_use_id, b.tool_use_id) != b.tool_use_id:
                b = b.model_copy(update={"tool_use_id": current[b.tool_use_id]})
            blocks.append(b)
        new_m = _with(m, blocks)
        changed = changed or new_m is not m
        out.append(new_m)
    return out if changed else messages


@dataclass
class _Plan:
    """Where ``_pair`` takes results from and puts them, by message index."""

    taken: set[tuple[int, int]] = field(default_factory=set)  # result blocks (message, block) moved away
    extra: dict[int, list[Block]] = field(default_factory=dict)  # results put at the front of message i
    inserted: dict[int, Message] = field(default_factory=dict)  # a new user message right after message i
    expected: dict[int, set[str]] = field(default_factory=dict)  # the calls user message i answers


def _results_where(messages: list[Message]) -> dict[str, list[tuple[int, int]]]:
    """Where each result block is, (message index, block index) by call id, in order."""
    where: dict[str, list[tuple[int, int]]] = {}
    for i, m in enumerate(messages):
        if m.role == "user" and is_sent(m):
            for j, b in enumerate(m.content):
                if type(b) is ToolResultBlock:
                    where.setdefault(b.tool_use_id, []).append((i, j))
    return where


def _plan(messages: list[Message], log: _Log) -> _Plan:
    n = len(messages)
    plan = _Plan()
    where: dict[str, list[tuple[int, int]]] | None = None  # built when a call is not answered in place
    last = max((i for i, m in enumerate(messages) if is_sent(m)), default=-1)
    for i, m in enumerate(messages):
        if m.role != "assistant" or not is_sent(m):
            continue
        ids = [b.id for b in m.content if type(b) is ToolUseBlock]
        if not ids:
            continue
        # The answer never crosses a boundary marker: honoured, the marker would cut a call from its results.
        answer = i + 1 if i + 1 < n and messages[i + 1].role == "user" and is_sent(messages[i + 1]) else None
        here = {b.tool_use_id for b in messages[answer].content if type(b) is ToolResultBlock} if answer is not None else set()
        blocks: list[Block] = []
        for tool_id in ids:
            if tool_id in here:
                continue
            if where is None:
                where = _results_where(messages)
            spots = [s for s in where.get(tool_id, ()) if s[0] > i and s not in plan.taken]
            if spots:
                plan.taken.add(spots[0])
                blocks.append(messages[spots[0][0]].content[spots[0][1]])
                log.add("moved", tool_id=tool_id)
            else:
                blocks.append(ToolResultBlock(tool_use_id=tool_id, content=SYNTHETIC, is_error=True))
                log.add("synthetic" if i < last else "synthetic_end", tool_id=tool_id)
        if answer is not None:
            if blocks:
                plan.extra[answer] = blocks
            plan.expected[answer] = set(ids)
        elif blocks:
            plan.inserted[i] = Message(role="user", id=f"{m.id}-results", content=tuple(blocks), timestamp=m.timestamp)
    return plan


def _pair(messages: list[Message], log: _Log) -> list[Message]:
    """Every call answered in the very next sent message; every result there answers a call of the message before."""
    plan = _plan(messages, log)
    touched = {i for i, _ in plan.taken}
    out: list[Message] = []
    answered: set[str] = set()
    changed = bool(plan.inserted)
    for i, m in enumerate(messages):
        if not is_sent(m) or (m.role != "user" and i not in plan.inserted):
            out.append(m)
            continue
        if m.role != "user":
            out += (m, plan.inserted[i])
            continue
        extra = plan.extra.get(i)
        asked = plan.expected.get(i, set())
        if extra is None and i not in touched:
            # The usual case: results, if any, answer the calls right before, once each.
            ids = [b.tool_use_id for b in m.content if type(b) is ToolResultBlock]
            if all(t in asked and t not in answered for t in ids) and len(set(ids)) == len(ids):
                answered.update(ids)
                out.append(m)
                continue
        changed = True
        blocks: list[Block] = list(extra or ())
        answered.update(b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock))
        for j, b in enumerate(m.content):
            if (i, j) in plan.taken:
                continue
            if type(b) is ToolResultBlock:
                if b.tool_use_id in asked and b.tool_use_id not in answered:
                    answered.add(b.tool_use_id)
                else:
                    kind = "repeat" if b.tool_use_id in answered else "orphan"
                    log.add(kind, tool_id=b.tool_use_id)
                    b = result_text(REPEAT if kind == "repeat" else ORPHAN, b)
            blocks.append(b)
        if blocks:
            out.append(_with(m, blocks))
        else:
            log.add("empty_message")
    return out if changed else messages


def opening_turn(messages: Sequence[Message]) -> tuple[Message, str] | None:
    """The user turn to put in front of a history that opens with the assistant, and its note; None when none is needed.

    The task is a copy of the first user text in the history (its non-blank text blocks); a history with no
    user text gets a placeholder turn. Exporters use it too, so a request opens with the user everywhere.
    """
    first = next((m for m in messages if is_sent(m) and m.role != "system"), None)
    if first is None or first.role != "assistant":
        return None
    for m in messages:
        texts = tuple(b for b in m.content if isinstance(b, TextBlock) and b.text.strip()) if is_sent(m) and m.role == "user" else ()
        if texts:
            return (Message(role="user", id=f"{m.id}-task", content=texts, timestamp=first.timestamp),
                    _NOTES["task_copied"].format(id=m.id))
    return (Message(role="user", id=f"{first.id}-opening", content=(TextBlock(text=NO_TASK),), timestamp=first.timestamp),
            _NOTES["placeholder"])


def _opening(messages: list[Message], log: _Log) -> list[Message]:
    """A user turn in front of an assistant opening: the task when the file has one, else a placeholder."""
    found = opening_turn(messages)
    if found is None:
        return messages
    front, _ = found
    if front.id.endswith("-task"):
        log.task_id = front.id.removesuffix("-task")
        log.add("task_copied")
    else:
        log.add("placeholder")
    first = next(i for i, m in enumerate(messages) if is_sent(m) and m.role != "system")
    return [*messages[:first], front, *messages[first:]]


def _repair(messages: list[Message]) -> Repaired:
    log = _Log()
    out = messages
    # The opening first, while results whose call is missing are still results (not text to copy as the task).
    # Each pass may leave work for the ones before it (a blank opening dropped, a result moved away emptying a
    # message): a second round settles it, and a third finds nothing (idempotence is tested).
    for _ in range(3):
        before = out
        for step in (_opening, _clean, _runs, _unique_ids, _pair):
            out = step(out, log)
        if out is before:
            break
    return Repaired(out, log.notes(), dict(log.counts))


# Replays of one transcript (a compare's configs, a sweep's trials) repair the same message objects again:
# the same repaired objects keep the per-message caches and resumable traces keyed by identity working.
_MEMO: SharedLRU[Repaired] = SharedLRU(8)
# What the memo keeps for a history that needed nothing: the caller's own list is the answer, so the entry
# holds no second list of the same messages (it was 8 bytes a message, to the end of every replay).
_UNCHANGED = Repaired([])


def repair(messages: Sequence[Message]) -> Repaired:
    """``messages`` as a history both providers accept, and what was changed (see the module docstring).

    A history that needs nothing comes back as the same list (a list given) or a list of the same objects.
    """
    given = messages if isinstance(messages, list) else list(messages)
    # A digest of the ids, and the messages held alive in the one tuple retention's targets hold too (identity_key).
    key, held = identity_key(given)
    done = _MEMO.get(key, lambda: _kept(_repair(list(given))), holds=held)
    if not done.changed:
        return Repaired(given)
    return Repaired(list(done.messages), list(done.notes), dict(done.counts))


def _kept(done: Repaired) -> Repaired:
    return done if done.changed else _UNCHANGED


def clear_cache() -> None:
    _MEMO.clear()
