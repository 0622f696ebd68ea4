"""Would a provider accept this history? Strict checks on canonical messages.

Compaction must never turn a valid history into one the provider rejects with
a 400, so these rules are what the stages are tested against. They read the
canonical model, the way the exporters in ``lab.formats.export`` translate it,
and each rule names the documentation or the reported 400 it comes from:

Both (the head of the history)
  - something to send: Anthropic "messages: at least one message is required"
    (DevoxxGenie#567); OpenAI "Invalid 'messages': empty array" (CopilotKit#529).
    A history of system messages only is held to it for OpenAI too, though
    only the empty list is a reported refusal there.

Anthropic (``anthropic_problems``)
  - leading system messages become ``system``; no message is empty: "all
    messages must have non-empty content except for the optional final
    assistant message" (claude-code#4416; the final-assistant prefill
    exception is not taken: a replayed request ends with the user's turn);
  - no text block is empty or only whitespace: "text content blocks must
    contain non-whitespace text" (claude-code#23440);
  - ``tool_use`` only in assistant messages, ``tool_result`` only in user
    messages (Messages API tool-use guide: results go in a ``user`` message);
  - every ``tool_use`` is answered by a ``tool_result`` in the very next
    message: "tool_use ids were found without tool_result blocks immediately
    after" (claude-code#1237);
  - every ``tool_result`` answers a ``tool_use`` of the message right before
    it: "unexpected tool_use_id found in tool_result blocks ... must have a
    corresponding tool_use block in the previous message" (claude-code#13460);
  - tool ids are unique: "tool_use ids must be unique" (claude-code#28515).

OpenAI chat (``openai_problems``)
  - an assistant message needs text or a tool call: its ``content`` is
    "Required unless tool_calls or function_call is specified" (the SDK's
    ``ChatCompletionAssistantMessageParam``); blank text counts as text, and
    an empty user or system message is no fault (the API took an empty
    content array, openai-python#1812; the exporter drops such messages);
  - every tool call is answered by tool messages that directly follow the
    assistant message: "An assistant message with 'tool_calls' must be followed
    by tool messages responding to each 'tool_call_id'", so user text, another
    assistant message or a system message before the last answer is a fault
    (a system message there: zeph#3235); results split over consecutive
    result-only user messages are fine (they export as consecutive tool
    messages);
  - no tool message without an earlier, still open, tool call: "messages with
    role 'tool' must be a response to a preceding message with 'tool_calls'"
    (OpenManus#744);
  - tool ids are unique (no reported refusal; a repeated id makes the tool
    messages ambiguous, and the exporter makes ids unique).

Rules not held here, and why:
  - "the first non-system message is from the user": the Messages API
    reference no longer says so (it says consecutive same-role turns are
    combined; the anthropic SDK's ``messages`` docstring), api.anthropic.com
    took an assistant opening while Bedrock refused it
    (anthropic-sdk-typescript#622), and reports of "first message must use the
    \"user\" role" stop in 2024; Chat Completions never had the rule
    (chatbot-ui#1656: "OpenAI doesn't mind which comes first"). Holding it
    would count as invalid requests the first-party APIs take. The replay and the
    exporters still put a user turn first (``lab.core.repair``), so what the
    lab sends passes Bedrock too, and the tests hold repaired histories to it.
  - tool id format (Anthropic ``^[a-zA-Z0-9_-]+$``, OpenAI at most 40
    characters) and tool results first in a user message: every export
    rewrites ids (``lab.formats.tool_results``, with a warning) and orders the
    results, without changing which message holds what, so canonical ids are
    the source's and checking them here would count as refused a request that
    is never sent that way (``tests/formats/test_fuzz_export.py`` checks the
    exported ids). Blank text, which the exporter drops too, is kept as a rule
    for Anthropic because dropping it can empty and remove a whole message.

Boundary messages are the lab's own markers, never sent, and are ignored.
A real transcript can break these rules itself (an aborted turn's call with
no result, one content block per record, blank text): the checks here report
it; ``lab.core.repair`` mends it the way the agents do, and the replay and the
exporters send the repaired history (``replay(..., repair=False)`` shows what
the source itself would make invalid).

Every rule is a step over one sent message that reads only what came before
it (and, for Anthropic's "answered in the next message", the next message).
``anthropic_problems`` and ``openai_problems`` run the steps over a whole
history; ``Validator`` runs the same steps for a sequence of histories that
share prefixes (an agent's successive requests): it keeps each step's result
and state per message, rolls them back to the first message that changed,
and examines only the messages from there on, so a session of N requests
costs time linear in N and gets the same lists as the full checks.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence

from .messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, is_sent, shared_prefix

__all__ = ["anthropic_problems", "openai_problems", "is_valid_anthropic", "is_valid_openai", "Validator"]

_Sent = tuple[int, Message]


def _sendable(messages: Sequence[Message]) -> list[_Sent]:
    return [(i, m) for i, m in enumerate(messages) if is_sent(m)]


def _label(i: int, m: Message) -> str:
    return f"message {i} ({m.role}, id {m.id})"


def _uses(m: Message) -> list[str]:
    return [b.id for b in m.content if isinstance(b, ToolUseBlock)]


def _results(m: Message) -> list[str]:
    return [b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock)]


# -- the steps ----------------------------------------------------------------


def _head(first_convo: _Sent | None) -> list[str]:
    """The problem of the history as a whole, listed first: nothing to send."""
    return ["no user or assistant message to send"] if first_convo is None else []


def _common_step(i: int, m: Message, seen_uses: set[str], seen_results: set[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    """Rules read by both providers for one message.

    Returns (Anthropic's problems, OpenAI's problems, ids it added to each seen set); OpenAI's are the
    same list without the empty-content and blank-text ones, which only Anthropic refuses.
    """
    anthropic: list[str] = []
    openai: list[str] = []
    added_uses: list[str] = []
    added_results: list[str] = []
    if not m.content:
        anthropic.append(f"{_label(i, m)}: empty content")
    for b in m.content:
        both: list[str] = []
        if isinstance(b, TextBlock) and not b.text.strip():
            anthropic.append(f"{_label(i, m)}: empty text block")
        elif isinstance(b, ToolUseBlock):
            if m.role != "assistant":
                both.append(f"{_label(i, m)}: tool_use {b.id} outside an assistant message")
            if b.id in seen_uses:
                both.append(f"{_label(i, m)}: duplicate tool_use id {b.id}")
            else:
                seen_uses.add(b.id)
                added_uses.append(b.id)
        elif isinstance(b, ToolResultBlock):
            if m.role != "user":
                both.append(f"{_label(i, m)}: tool_result {b.tool_use_id} outside a user message")
            if b.tool_use_id in seen_results:
                both.append(f"{_label(i, m)}: duplicate tool_result for {b.tool_use_id}")
            else:
                seen_results.add(b.tool_use_id)
                added_results.append(b.tool_use_id)
        anthropic += both
        openai += both
    return anthropic, openai, added_uses, added_results


def _unanswered(i: int, m: Message, nxt: Message | None) -> list[str]:
    """Anthropic: tool_use blocks of ``m`` that the next sent message does not answer."""
    uses = _uses(m)
    if not uses:
        return []
    answered = set(_results(nxt)) if nxt is not None and nxt.role == "user" else set()
    return [f"{_label(i, m)}: tool_use {tool_id} is not answered by a tool_result in the next message" for tool_id in uses if tool_id not in answered]


def _unasked(i: int, m: Message, prev: Message | None) -> list[str]:
    """Anthropic: tool_result blocks of ``m`` that answer no tool_use of the previous sent message."""
    results = _results(m)
    if not results:
        return []
    asked = set(_uses(prev)) if prev is not None and prev.role == "assistant" else set()
    return [f"{_label(i, m)}: tool_result {tool_id} does not answer a tool_use in the previous message" for tool_id in results if tool_id not in asked]


class _Turn:
    """OpenAI: the tool calls of the latest assistant message still waiting for their tool messages."""

    __slots__ = ("open_calls", "caller")

    def __init__(self, open_calls: dict[str, int] | None = None, caller: _Sent | None = None) -> None:
        self.open_calls: dict[str, int] = open_calls if open_calls is not None else {}
        self.caller = caller

    def copy(self) -> _Turn:
        return _Turn(dict(self.open_calls), self.caller)

    def close(self, problems: list[str]) -> None:
        if self.caller is not None:
            for tool_id in self.open_calls:
                problems.append(f"{_label(*self.caller)}: tool call {tool_id} is not answered before the next message")
        self.open_calls.clear()

    def step(self, i: int, m: Message, problems: list[str]) -> None:
        if m.role == "system":
            # A system (or developer) message may stand anywhere but between a call and its tool messages.
            self.close(problems)
            return
        if m.role == "assistant":
            self.close(problems)
            uses = _uses(m)
            if not uses and not any(isinstance(b, TextBlock) for b in m.content):
                problems.append(f"{_label(i, m)}: assistant message with neither text nor tool calls")
            self.open_calls = {tool_id: i for tool_id in uses}
            self.caller = (i, m)
            return
        for tool_id in _results(m):
            if tool_id in self.open_calls:
                del self.open_calls[tool_id]
            else:
                problems.append(f"{_label(i, m)}: tool result {tool_id} has no preceding open tool call")
        if any(not isinstance(b, ToolResultBlock) for b in m.content):
            # User text ends the turn: the exporter puts it after the tool messages.
            self.close(problems)
            self.caller = None


def _common_problems(sent: list[_Sent]) -> tuple[list[str], list[str]]:
    """(Anthropic's, OpenAI's) problems of the rules both read, the head first."""
    head = _head(next(((i, m) for i, m in sent if m.role != "system"), None))
    anthropic, openai = list(head), list(head)
    seen_uses: set[str] = set()
    seen_results: set[str] = set()
    for i, m in sent:
        a, o, _, _ = _common_step(i, m, seen_uses, seen_results)
        anthropic += a
        openai += o
    return anthropic, openai


# -- whole histories -------------------------------------------------------------


def anthropic_problems(messages: Sequence[Message]) -> list[str]:
    """Every reason the Anthropic Messages API would reject this history (empty when none)."""
    sent = _sendable(messages)
    problems = _common_problems(sent)[0]
    for k, (i, m) in enumerate(sent):
        problems += _unanswered(i, m, sent[k + 1][1] if k + 1 < len(sent) else None)
        problems += _unasked(i, m, sent[k - 1][1] if k > 0 else None)
    return problems


def openai_problems(messages: Sequence[Message]) -> list[str]:
    """Every reason the OpenAI Chat Completions API would reject this history (empty when none)."""
    sent = _sendable(messages)
    problems = _common_problems(sent)[1]
    turn = _Turn()
    for i, m in sent:
        turn.step(i, m, problems)
    turn.close(problems)
    return problems


def is_valid_anthropic(messages: Sequence[Message]) -> bool:
    return not anthropic_problems(messages)


def is_valid_openai(messages: Sequence[Message]) -> bool:
    return not openai_problems(messages)


# -- successive histories ----------------------------------------------------------


class Validator:
    """Checks a sequence of histories that share prefixes, examining only what changed.

    ``check(messages)`` returns ``(anthropic_problems(messages), openai_problems(messages))``,
    the same lists in the same order. What it learnt from the previous history
    is kept for the longest prefix of messages the two share (the same objects,
    or equal ones: every rule reads message values only). Anthropic's rules
    look one message ahead, so the last message's look-ahead is settled only
    when the next one arrives.
    """

    def __init__(self) -> None:
        # Per sent message examined, in order (an "entry"), kept in compact form: a long session's validator
        # held several lists, a dict and an object per message, most of them empty. Ints go in arrays; what
        # is rarely there (look-back problems) is kept only for the entries that have it, with their entry
        # numbers beside it; the ids added are one flat list; an OpenAI turn that a message leaves as it
        # was is the same object.
        self._messages: list[Message] = []
        self._seen_uses: set[str] = set()
        self._seen_results: set[str] = set()
        self._at = array("q")  # each entry's position in the history (its message is ``_messages[at]``)
        # The ids the entries added to the seen sets, in order; *_end[k] is the length after entry k.
        self._used: list[str] = []
        self._used_end = array("q")
        self._answered: list[str] = []
        self._answered_end = array("q")
        self._unasked_at = array("q")  # entries with Anthropic look-back problems, waiting for their look-ahead...
        self._unasked: list[list[str]] = []  # ...and those problems
        self._turns: list[_Turn] = []  # the OpenAI turn after each entry
        # Problems in list order; *_end[k] is the length after entry k. Anthropic's list is complete
        # up to the entry before the last (the last one's look-ahead needs the next message).
        self._common: list[str] = []  # Anthropic's view of the rules both read
        self._common_end = array("q")
        self._common_openai: list[str] = []  # OpenAI's: the same without empty content and blank text
        self._common_openai_end = array("q")
        self._anthropic: list[str] = []
        self._anthropic_end = array("q")
        self._openai: list[str] = []
        self._openai_end = array("q")
        self._first_convo: int | None = None  # entry index

    def check(self, messages: Sequence[Message]) -> tuple[list[str], list[str]]:
        """``(anthropic_problems(messages), openai_problems(messages))``, examining only what changed."""
        seq = list(messages)
        same = shared_prefix(self._messages, seq)
        # The last kept sent message's look-ahead is always left open, so it sees the new next message.
        self._rollback(bisect_left(self._at, same))
        # Entries kept are at positions before ``same``: the same (or equal) messages in ``seq``.
        self._messages = seq
        for i in range(same, len(seq)):
            m = seq[i]
            if is_sent(m):
                self._add(i, m)
        return self._result()

    def _rollback(self, keep: int) -> None:
        """Forget every entry from ``keep`` on; the work is proportional to what is forgotten."""
        n = len(self._at)
        if keep >= n:
            return
        used = self._used_end[keep - 1] if keep else 0
        self._seen_uses.difference_update(self._used[used:])
        del self._used[used:]
        answered = self._answered_end[keep - 1] if keep else 0
        self._seen_results.difference_update(self._answered[answered:])
        del self._answered[answered:]
        j = bisect_left(self._unasked_at, keep)
        del self._unasked_at[j:], self._unasked[j:]
        for lst in (self._at, self._turns, self._used_end, self._answered_end, self._common_end, self._common_openai_end, self._openai_end):
            del lst[keep:]
        del self._common[self._common_end[-1] if keep else 0 :]
        del self._common_openai[self._common_openai_end[-1] if keep else 0 :]
        del self._openai[self._openai_end[-1] if keep else 0 :]
        # Anthropic's list holds entries up to keep - 2 in full: the look-ahead of entry keep - 1 goes.
        del self._anthropic_end[max(keep - 1, 0) :]
        del self._anthropic[self._anthropic_end[-1] if self._anthropic_end else 0 :]
        if self._first_convo is not None and self._first_convo >= keep:
            self._first_convo = None

    def _last_unasked(self) -> list[str]:
        """The look-back problems of the last entry (none for most)."""
        at = self._unasked_at
        return self._unasked[-1] if at and at[-1] == len(self._at) - 1 else []

    def _add(self, i: int, m: Message) -> None:
        k = len(self._at)
        prev = self._messages[self._at[-1]] if k else None
        if prev is not None:
            # The previous entry's look-ahead can be settled now.
            self._anthropic += _unanswered(self._at[-1], prev, m)
            self._anthropic += self._last_unasked()
            self._anthropic_end.append(len(self._anthropic))
        a_problems, o_problems, uses, results = _common_step(i, m, self._seen_uses, self._seen_results)
        self._common += a_problems
        self._common_end.append(len(self._common))
        self._common_openai += o_problems
        self._common_openai_end.append(len(self._common_openai))
        self._used += uses
        self._used_end.append(len(self._used))
        self._answered += results
        self._answered_end.append(len(self._answered))
        unasked = _unasked(i, m, prev)
        if unasked:
            self._unasked_at.append(k)
            self._unasked.append(unasked)
        before = self._turns[-1] if k else _Turn()
        turn = before.copy()
        turn.step(i, m, self._openai)
        self._openai_end.append(len(self._openai))
        # Turns are never changed once kept: a message that leaves the turn as it was shares the object.
        self._turns.append(before if k and turn.caller is before.caller and turn.open_calls == before.open_calls else turn)
        self._at.append(i)
        if self._first_convo is None and m.role != "system":
            self._first_convo = k

    def _result(self) -> tuple[list[str], list[str]]:
        first = self._first_convo
        head = _head((self._at[first], self._messages[self._at[first]]) if first is not None else None)
        anthropic = head + self._common + self._anthropic
        if self._at:
            anthropic += _unanswered(self._at[-1], self._messages[self._at[-1]], None) + self._last_unasked()
        openai = head + self._common_openai + self._openai
        if self._turns:
            tail: list[str] = []
            self._turns[-1].copy().close(tail)
            openai += tail
        return anthropic, openai
