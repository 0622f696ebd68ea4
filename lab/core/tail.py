"""Choosing the verbatim tail a compaction keeps, and keeping the result a valid request.

Every summary and truncation keeps the newest messages word for word. Where the
cut falls decides what survives, and a careless cut breaks the request: a
tool_result whose tool_use was summarised away is rejected with a 400 by both
providers. So the cut is chosen in three steps:

1. ``select_tail`` applies a design's size rule (MiniCode or MewCode);
2. ``adjust_for_pairs`` moves it back until no tool_use/tool_result pair is
   split, matching blocks by id (MiniCode searched for the text "tool_use"
   and could split real pairs);
3. ``repair_roles`` inserts minimal placeholder turns where the rewrite made
   two turns of the same role meet, without ever separating a call from its
   result.

``truncate_keep`` is MiniCode's recovery truncation built from the same parts.

MiniCode's own count-based cuts (the full compact's ``len(non_system) // 3``
tail, the recovery truncation's share) count the entries of its message list:
every tool result is an entry of its own, and its summaries and notes are
system messages. ``seed_message_count`` measures a lab message in those
entries, so a ``"minicode_messages"`` unit cuts where MiniCode's code would;
the ``"turns"`` unit is the lab's own (one per user or assistant turn the
agent wrote).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..errors import ConfigError
from .ids import id_key
from .messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from .tokens.base import TokenCounter

__all__ = [
    "TailPolicy",
    "TailUnit",
    "PLACEHOLDER_ID_PREFIX",
    "seed_message_count",
    "count_units",
    "newest_units_start",
    "ASSISTANT_PLACEHOLDER",
    "USER_PLACEHOLDER",
    "LEAD_USER_PLACEHOLDER",
    "leading_system_messages",
    "select_tail",
    "third_tail_start",
    "is_turn",
    "adjust_for_pairs",
    "repair_roles",
    "truncate_keep",
]

TailPolicy = Literal["minicode", "mewcode"]
# How a count-based cut measures history: the lab's conversation turns, or the entries of MiniCode's own message list.
TailUnit = Literal["turns", "minicode_messages"]

# Ids of the placeholder turns ``repair_roles`` writes; an importer's tagged harness lines have other ids.
PLACEHOLDER_ID_PREFIX = "placeholder-"
# The lab's messages MiniCode writes as system messages (summaries, memory, truncation notes), or never as messages.
_SEED_SYSTEM_TAGS = frozenset(("summary", "memory", "truncation_note", "boundary"))

# MewCode's wording; the same turn serves after MiniCode-style summaries.
ASSISTANT_PLACEHOLDER = "(Summary and recovery context loaded. Please continue.)"
# Between two assistant turns: as short as possible, it carries no meaning.
USER_PLACEHOLDER = "(continue)"
# When a rewrite leaves an assistant turn first, the model should know why.
LEAD_USER_PLACEHOLDER = "(Earlier conversation was compacted. Please continue.)"


def leading_system_messages(messages: Sequence[Message]) -> int:
    """How many messages at the start have the system role, boundary markers included.

    The tail helpers keep all of them in the head: a marker is never part of a
    verbatim tail. ``stages.active.system_prompt_length`` is the other count,
    which stops at the first marker because what follows it is the active context.
    """
    n = 0
    for m in messages:
        if m.role != "system":
            break
        n += 1
    return n


def select_tail(
    messages: Sequence[Message],
    counter: TokenCounter,
    policy: TailPolicy,
    min_tokens: int,
    max_tokens: int,
    min_messages: int,
) -> int:
    """Index in ``messages`` where the verbatim tail starts.

    Leading system messages are never part of the tail (they are kept anyway),
    so the result is at least ``leading_system_messages(messages)``; it equals
    ``len(messages)`` only when there is nothing after them.

    ``"minicode"`` (6a): scan back from the end, adding a message while the
    tail stays within ``max_tokens``; once adding would pass it, stop as soon
    as both minimums (``min_tokens`` and ``min_messages``) are covered. The
    minimums win over the maximum, so a huge last message is still kept.
    MiniCode's own loop ignores ``min_tokens``; here it is a floor.

    ``"mewcode"``: walk back until BOTH ``>= min_tokens`` AND ``>= min_messages``
    ("keep the wider"), with no maximum.
    """
    if policy not in ("minicode", "mewcode"):
        raise ConfigError(f"unknown tail policy {policy!r}; use 'minicode' or 'mewcode'")
    if min_messages < 0 or min_tokens < 0 or max_tokens < 0:
        raise ConfigError(
            f"tail limits must be >= 0, got min_tokens={min_tokens}, max_tokens={max_tokens}, min_messages={min_messages}"
        )
    first = leading_system_messages(messages)
    start = len(messages)
    tokens = 0
    count = 0
    for i in range(len(messages) - 1, first - 1, -1):
        covered = tokens >= min_tokens and count >= min_messages
        t = counter.count_message(messages[i])
        if policy == "mewcode":
            if covered:
                break
        elif covered and tokens + t > max_tokens:
            break
        tokens += t
        # Inner system markers (old boundaries, notes) are not conversation turns.
        if messages[i].role != "system":
            count += 1
        start = i
    return start


def is_turn(message: Message) -> bool:
    """A conversation turn: a user or assistant message the agent's history holds, not one the pipeline wrote."""
    return message.role != "system" and message.tag is None


def third_tail_start(messages: Sequence[Message], max_messages: int, unit: TailUnit = "turns") -> int:
    """Index in ``messages`` where MiniCode's full-compact tail starts: the newest ``min(n // 3, max_messages)`` units.

    With ``unit="turns"`` (the lab's count), ``n`` counts the conversation
    turns: not system messages, and not the messages the lab or an importer
    tagged (summary, placeholder, truncation note, harness lines). With
    ``"minicode_messages"``, ``n`` is ``len(non_system)`` of MiniCode's own
    list (``seed_message_count``). The published MiniCode code
    (``AutoCompactDispatcher._run_full_compact``) keeps
    ``min(len(non_system) // 3, config.min_keep_messages)`` messages, by count
    only: unlike session memory it has no token bounds, which is why it can
    still summarise when the whole context is smaller than the session-memory
    tail. The caller moves the cut with ``adjust_for_pairs``; a result of
    ``len(messages)`` means an empty tail.
    """
    if max_messages < 0:
        raise ConfigError(f"max_messages must be >= 0, got {max_messages}")
    first = leading_system_messages(messages)
    if unit != "turns":
        keep = min(count_units(messages[first:], unit) // 3, max_messages)
        return newest_units_start(messages, keep, unit)
    turns = [i for i in range(first, len(messages)) if is_turn(messages[i])]
    keep = min(len(turns) // 3, max_messages)
    return turns[-keep] if keep else len(messages)


def seed_message_count(message: Message) -> int:
    """How many entries of MiniCode's own message list ``message`` is.

    System messages, and the lab's summaries, memory and truncation notes
    (system messages in MiniCode), are 0: MiniCode's ``non_system`` leaves them
    out. So are the placeholder turns the lab inserts to keep roles
    alternating, which MiniCode never writes. A harness line an importer
    tagged (a local command's output, a notice) is in the source's history and
    counts, as MiniCode would count it. A user message counts one entry per
    tool result and one per run of other blocks between them, as
    ``lab.formats.shell_agents.minicode.to_minicode`` writes it; any other message is one.
    """
    if message.role == "system" or message.tag in _SEED_SYSTEM_TAGS:
        return 0
    if message.tag == "placeholder" and message.id.startswith(PLACEHOLDER_ID_PREFIX):
        return 0
    if message.role != "user":
        return 1
    n = 0
    in_run = False
    for b in message.content:
        if isinstance(b, ToolResultBlock):
            n += 1
            in_run = False
        elif not in_run:
            n += 1
            in_run = True
    return max(n, 1)


def _unit_size(message: Message, unit: TailUnit) -> int:
    if unit == "turns":
        return 1 if is_turn(message) else 0
    if unit == "minicode_messages":
        return seed_message_count(message)
    raise ConfigError(f"unknown tail unit {unit!r}; use 'turns' or 'minicode_messages'")


def count_units(messages: Sequence[Message], unit: TailUnit) -> int:
    """The size of ``messages`` in ``unit``: turns, or entries of MiniCode's message list."""
    return sum(_unit_size(m, unit) for m in messages)


def newest_units_start(messages: Sequence[Message], keep: int, unit: TailUnit) -> int:
    """Index where a tail holding the newest ``keep`` units (at least) starts; ``len(messages)`` when ``keep`` is 0.

    The cut falls on the message holding the ``keep``-th unit from the end, so
    a user message whose results are only partly within the count is kept
    whole (the pair guard would pull in their call and its other results
    anyway). A ``keep`` covering every unit keeps everything after the leading
    system messages, the messages worth 0 units included.
    """
    first = leading_system_messages(messages)
    if keep <= 0:
        return len(messages)
    if keep >= count_units(messages[first:], unit):
        return first
    covered = 0
    for i in range(len(messages) - 1, first - 1, -1):
        covered += _unit_size(messages[i], unit)
        if covered >= keep:
            return i
    return first


class _PairScan:
    """What ``tool_pairs`` says about the ids near a cut, scanning back from the end only as far as needed.

    A cut sits near the end of a long history, and a call sits just before its
    result, so a full ``tool_pairs`` pass over the history is mostly wasted.
    Scanning backwards, the first sighting of an id is its last occurrence,
    which is the index ``tool_pairs`` keeps.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.done = len(messages)  # messages[done:] are scanned
        self.uses: dict[str, int] = {}
        self.results: dict[str, int] = {}

    def scan_to(self, index: int) -> None:
        while self.done > index:
            self.done -= 1
            i = self.done
            for b in self.messages[i].content:
                if isinstance(b, ToolUseBlock):
                    self.uses.setdefault(b.id, i)
                elif isinstance(b, ToolResultBlock):
                    self.results.setdefault(b.tool_use_id, i)

    def use_of(self, tool_id: str) -> int | None:
        """Index of the message holding the (last) tool_use with this id, or None when there is none."""
        while tool_id not in self.uses and self.done > 0:
            self.scan_to(self.done - 1)
        return self.uses.get(tool_id)

    def unclosed_start(self, start: int) -> int:
        """The earliest tool_use index whose result sits at or after ``start``."""
        self.scan_to(start)
        best = start
        # Every id whose last result is at or after start was seen in the scanned part.
        for tool_id, result_at in list(self.results.items()):
            if result_at >= start:
                use_at = self.use_of(tool_id)
                if use_at is not None and use_at < start:
                    best = min(best, use_at)
        return best

    def orphan_results_only(self, message: Message) -> bool:
        """A user message that holds only tool_results whose tool_use exists nowhere."""
        blocks = message.content
        if message.role != "user" or not blocks:
            return False
        return all(isinstance(b, ToolResultBlock) and self.use_of(b.tool_use_id) is None for b in blocks)


def adjust_for_pairs(messages: Sequence[Message], start: int) -> int:
    """Move the cut back so that no tool_use/tool_result pair straddles it.

    Pairs are matched by ids (as ``tool_pairs`` matches them). When the tail would hold a
    result whose call lies before the cut, the cut moves back to the assistant
    message that made the call; that message may pull in more results of even
    older calls, so this repeats until the tail is closed. As MewCode's second
    guard, a tail that starts with results of calls that exist nowhere (an
    orphan left by the source) starts after them instead.
    """
    n = len(messages)
    start = max(0, min(start, n))
    scan = _PairScan(messages)
    # Each pass only moves the cut back, so this ends within n passes.
    for _ in range(n + 1):
        moved = scan.unclosed_start(start)
        if moved == start:
            break
        start = moved
    while start < n and scan.orphan_results_only(messages[start]):
        start += 1
    return start


def _placeholder(role: Literal["user", "assistant"], text: str, prev: Message | None, nxt: Message) -> Message:
    # Derived from the neighbours' ids, so a replay inserts the very same turn.
    key = id_key(role, prev.id if prev is not None else "<start>", nxt.id)
    stamp = prev.timestamp if prev is not None and prev.timestamp is not None else nxt.timestamp
    return Message(role=role, content=(TextBlock(text=text),), id=f"{PLACEHOLDER_ID_PREFIX}{key}", timestamp=stamp, tag="placeholder")


def _has(message: Message, kind: type) -> bool:
    return any(isinstance(b, kind) for b in message.content)


def repair_roles(messages: Sequence[Message]) -> list[Message]:
    """Insert placeholder turns so user and assistant turns alternate.

    System messages (the prompt, boundary markers) are transparent: providers
    never see them as turns. The first turn must be a user turn; two user turns
    meeting get the assistant placeholder between them; two assistant turns
    meeting get a minimal user turn. A placeholder is never put in front of a
    message holding tool_results, nor after an assistant turn holding
    tool_uses: that would separate a call from its result, which is worse than
    two same-role turns (Anthropic merges those, OpenAI accepts them).
    Messages are returned as the same objects; the function is idempotent.
    """
    out: list[Message] = []
    prev: Message | None = None
    for m in messages:
        if m.role == "system":
            out.append(m)
            continue
        if prev is None:
            if m.role == "assistant":
                out.append(_placeholder("user", LEAD_USER_PLACEHOLDER, None, m))
        elif prev.role == m.role:
            if m.role == "user" and not _has(m, ToolResultBlock):
                out.append(_placeholder("assistant", ASSISTANT_PLACEHOLDER, prev, m))
            elif m.role == "assistant" and not _has(prev, ToolUseBlock):
                out.append(_placeholder("user", USER_PLACEHOLDER, prev, m))
        out.append(m)
        prev = m
    return out


def truncate_keep(
    messages: Sequence[Message],
    keep_ratio: float,
    floor_ratio: float,
    min_messages: int,
    counter: TokenCounter | None = None,
) -> list[Message]:
    """MiniCode's recovery truncation: leading system messages + the newest share of the rest.

    Keeps ``max(min_messages, int(len(rest) * max(keep_ratio, floor_ratio)))``
    messages of the rest, moves the cut back so no pair is split, and repairs
    roles. The caller (reactive recovery) adds its truncation note. When
    nothing would be dropped the input messages come back unchanged (same
    objects, new list). ``counter`` is accepted for symmetry with the other
    tail helpers; MiniCode's rule counts messages, not tokens.
    """
    del counter  # the rule is by message count; see the docstring
    if not 0.0 <= keep_ratio <= 1.0 or not 0.0 <= floor_ratio <= 1.0:
        raise ConfigError(f"keep ratios must be within 0..1, got keep_ratio={keep_ratio}, floor_ratio={floor_ratio}")
    if min_messages < 1:
        raise ConfigError(f"min_messages must be >= 1, got {min_messages}")
    first = leading_system_messages(messages)
    head, body = list(messages[:first]), list(messages[first:])
    keep = max(min_messages, int(len(body) * max(keep_ratio, floor_ratio)))
    if keep >= len(body):
        return list(messages)
    start = adjust_for_pairs(body, len(body) - keep)
    return head + repair_roles(body[start:])
