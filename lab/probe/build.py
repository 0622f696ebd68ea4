"""Probes from a recorded session: fixed questions, with reference answers taken from the session by rules.

Factory.ai's evaluation of context compression asks four kinds of question
after compression, each needing history that compression may have dropped.
The lab asks the same four at request ``k``; their reference answers come
from the raw history before ``k`` and, for continuation, from the recorded
future (what the agent actually did at ``k``), never from a model:

    recall        the first failed tool call before k (what ran, the line saying
                  what went wrong) and its fix: the files changed after it up to
                  the first later success of the same call
    artifact      every file changed before k, each with how (``lab.core.commands``
                  reads structured edits, patches and shell writes alike); failed
                  edits changed nothing and are left out
    continuation  the recorded response at k: what the agent said and which tool
                  calls it made
    decision      the user's latest instruction before k and what the agent said
                  it would do about it (its decision sentences, else its first reply)

A kind whose rule finds nothing (no error yet, no file changed) gives no
probe: a question with an empty reference would grade the model on a guess.
Every function here is pure: the same messages always give the same probes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from collections.abc import Sequence

from ..core.commands import Outcome, ToolAction, result_outcome, tool_action
from ..core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..core.summarizers.rules import message_plain_text, user_texts
from ..core.summarizers.sections import call_label, decision_sentences
from ..errors import ConfigError

__all__ = ["ProbeKind", "PROBE_KINDS", "QUESTIONS", "Probe", "Call", "tool_calls", "build_probes",
           "recall_probe", "artifact_probe", "continuation_probe", "decision_probe"]

ProbeKind = Literal["recall", "artifact", "continuation", "decision"]
PROBE_KINDS: tuple[ProbeKind, ...] = ("recall", "artifact", "continuation", "decision")

# Fixed text: the same question at every request of every session, so scores compare across configs.
QUESTIONS: dict[ProbeKind, str] = {
    "recall": "What was the first error we ran into in this session (which command or tool call failed, and with what message), and how was it fixed?",
    "artifact": "Which files have we changed so far in this session, and how did we change each one?",
    "continuation": "What should we do next? Name the concrete next step: the command to run, the file to read or change, or what to tell the user.",
    "decision": "What is the user's latest instruction, and what did we decide to do about it, and why?",
}

# Bounds on a reference, so that a long session's reference stays a readable answer.
MAX_FILES = 30
CHANGES_PER_FILE = 5
FIX_CHANGES = 5
TEXT_CHARS = 300
INSTRUCTION_CHARS = 1000
DECISIONS = 5


@dataclass(frozen=True)
class Probe:
    """One question at request ``at``, with the answer the session itself gives and the facts that answer holds."""

    kind: ProbeKind
    at: int
    question: str
    reference: str
    facts: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.kind}@{self.at}"


@dataclass(frozen=True)
class Call:
    """One tool call in history order, with its result's outcome (None: no result yet)."""

    index: int
    block: ToolUseBlock
    action: ToolAction
    outcome: Outcome | None
    label: str = field(default="")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def tool_calls(messages: Sequence[Message]) -> list[Call]:
    """Every tool call of the assistant messages, in order, paired with its result by id."""
    results = {b.tool_use_id: b for m in messages if m.role == "user" for b in m.content if isinstance(b, ToolResultBlock)}
    calls: list[Call] = []
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                action = tool_action(b)
                result = results.get(b.id)
                outcome = result_outcome(result.content, result.is_error, action) if result is not None else None
                calls.append(Call(i, b, action, outcome, call_label(b, action)))
    return calls


def _changes(call: Call) -> list[str]:
    return [f"{w.path}: {w.what}" for w in call.action.writes]


def recall_probe(raw: Sequence[Message], k: int) -> Probe | None:
    """The first failed call before ``k`` and what fixed it (see the module docstring)."""
    calls = tool_calls(raw)
    first = next((i for i, c in enumerate(calls) if c.outcome is not None and not c.outcome.ok), None)
    if first is None:
        return None
    failed = calls[first]
    assert failed.outcome is not None
    error = _one_line(failed.outcome.error or "failed", TEXT_CHARS)
    lines = [f"The first error: {failed.label} failed with: {error}"]
    changes: list[str] = []
    passed: Call | None = None
    for c in calls[first + 1:]:
        if c.label == failed.label and c.outcome is not None and c.outcome.ok:
            passed = c
            break
        if c.action.writes and (c.outcome is None or c.outcome.ok):
            changes += _changes(c)
    if passed is None and changes:
        # It never passed again before k: the first change after it is the attempted fix.
        changes = changes[:1]
    changes = changes[-FIX_CHANGES:]
    if changes:
        lines.append("The fix: " + "; ".join(changes) + ".")
    if passed is not None:
        lines.append(f"Afterwards {passed.label} succeeded.")
    elif not changes:
        lines.append("No fix was made before this point.")
    else:
        lines.append(f"{failed.label} had not been run successfully again before this point.")
    facts = (error, *(c.split(": ", 1)[0] for c in changes))
    return Probe("recall", k, QUESTIONS["recall"], "\n".join(lines), tuple(dict.fromkeys(facts)))


def artifact_probe(raw: Sequence[Message], k: int) -> Probe | None:
    """Every file changed before ``k``, in the order first changed, each with its latest changes."""
    changed: dict[str, list[str]] = {}
    for c in tool_calls(raw):
        if c.outcome is not None and not c.outcome.ok:
            continue  # a failed edit changed nothing
        for w in c.action.writes:
            whats = changed.setdefault(w.path, [])
            if not whats or whats[-1] != w.what:
                whats.append(w.what)
    if not changed:
        return None
    paths = list(changed)[:MAX_FILES]
    lines = ["Files changed so far:"] + [f"- {p}: {'; '.join(changed[p][-CHANGES_PER_FILE:])}" for p in paths]
    if len(changed) > MAX_FILES:
        lines.append(f"- ... and {len(changed) - MAX_FILES} more files")
    return Probe("artifact", k, QUESTIONS["artifact"], "\n".join(lines), tuple(paths))


def continuation_probe(future: Sequence[Message], k: int) -> Probe | None:
    """What the agent actually did at ``k``: its recorded response's text and tool calls."""
    said = next((t for m in future if m.role == "assistant" for b in m.content
                 if isinstance(b, TextBlock) and (t := b.text.strip())), None)
    lines = ["What the agent actually did next:"]
    facts: list[str] = []
    if said:
        lines.append(f"- it said: {_one_line(said, TEXT_CHARS)}")
    for c in tool_calls(future):
        change = f" ({c.action.change})" if c.action.change else ""
        lines.append(f"- {c.label}{change}")
        facts.append(c.label)
    if len(lines) == 1:
        return None
    return Probe("continuation", k, QUESTIONS["continuation"], "\n".join(lines), tuple(dict.fromkeys(facts)))


def decision_probe(raw: Sequence[Message], k: int) -> Probe | None:
    """The user's latest instruction before ``k`` and what the agent said it would do about it."""
    texts = user_texts(raw)
    if not texts:
        return None
    latest = texts[-1]
    source = latest.id.split("#", 1)[0]
    at = next((i for i, m in enumerate(raw) if m.id == source), len(raw))
    after = [m for m in raw[at + 1:] if m.role == "assistant" and m.tag is None]
    decided: dict[str, None] = {}
    for m in after:
        for sentence in decision_sentences(message_plain_text(m)):
            decided.pop(sentence, None)
            decided[sentence] = None
    lines = [f"The user's latest instruction: {_one_line(latest.text, INSTRUCTION_CHARS)}"]
    if decided:
        lines.append("What the agent decided: " + " ".join(list(decided)[-DECISIONS:]))
    else:
        reply = next((t for m in after if (t := message_plain_text(m).strip())), None)
        calls = tool_calls(raw[at + 1:])
        if reply:
            lines.append(f"What the agent said about it: {_one_line(reply, TEXT_CHARS)}")
        elif calls:
            lines.append(f"The agent stated no decision; its first action was {calls[0].label}.")
        else:
            lines.append("The agent had not answered it yet.")
    return Probe("decision", k, QUESTIONS["decision"], "\n".join(lines), (_one_line(latest.text, 120),))


def build_probes(raw: Sequence[Message], future: Sequence[Message], k: int, kinds: Sequence[ProbeKind] = PROBE_KINDS) -> list[Probe]:
    """The probes at request ``k``: ``raw`` is the history before it, ``future`` its recorded response."""
    unknown = [x for x in kinds if x not in PROBE_KINDS]
    if unknown:
        raise ConfigError(f"unknown probe kind {unknown[0]!r}; choose from {', '.join(PROBE_KINDS)}")
    made = {
        "recall": lambda: recall_probe(raw, k),
        "artifact": lambda: artifact_probe(raw, k),
        "continuation": lambda: continuation_probe(future, k),
        "decision": lambda: decision_probe(raw, k),
    }
    return [p for kind in PROBE_KINDS if kind in kinds and (p := made[kind]()) is not None]
