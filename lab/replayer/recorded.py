"""Compactions the original agent recorded, and replaying as if it had never compacted.

A long real session usually contains its agent's own compactions: Claude
Code's ``compact_boundary`` and its "This session is being continued..."
summary, Codex's ``compacted`` item and its replacement history, OpenHands
condensations, or a boundary the lab itself wrote. The importers keep each as
a boundary marker (a ``system`` message with ``boundary`` set) followed by the
messages the compaction wrote: the summary (``tag="summary"``), a placeholder
turn, and for Codex the copies of kept messages (``Boundary.replaced_messages``).

Honoured, a marker makes the active-context stage drop everything before it
whatever the config says, so a comparison would rank configs on what the
original agent did. ``undo`` (the replay's default) removes each marker and
what its compaction wrote, leaving the raw history for the config alone to
compact. Where the raw history before a marker is not in the file (a session
file that starts with a continuation summary), the summary is the only trace
of that history: it stays as the first turn and the notes say so.
``keep`` replays the file as recorded.
"""

from __future__ import annotations

import re
from typing import Literal
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..core.messages import Message, Transcript, message_text
from ..core.stages.active import is_boundary
from ..errors import ConfigError

__all__ = ["RecordedMode", "RecordedCompaction", "find_recorded", "apply_recorded", "RECORDED_MODES"]

RecordedMode = Literal["undo", "keep"]
RECORDED_MODES: tuple[RecordedMode, ...] = ("undo", "keep")

# Which agent wrote a boundary, by the strategy its importer records.
_AGENTS = {
    "claude_code_compact": "Claude Code",
    "codex_compact": "Codex",
    "openai_compaction": "OpenAI Responses (server-side compaction)",
    "openhands_condensation": "OpenHands",
    "goose_compaction": "Goose",
    "opencode_compaction": "OpenCode",
    "continue_summary": "Continue",
    "continue_cli_compaction": "Continue (cn)",
    "copilot_summary": "GitHub Copilot",
    "copilot_cli_compaction": "GitHub Copilot CLI",
    "crush_summary": "Crush",
    "qwen_compression": "Qwen Code",
    "mini_swe_agent_compaction": "mini-swe-agent",
}
# The text Claude Code opens its continuation summary with; a session file may start with one and no marker.
_CONTINUATION = re.compile(r"^\s*This session is being continued from a previous conversation", re.I)


class RecordedCompaction(BaseModel):
    """One compaction found in the transcript, and what the replay did with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Index of the marker (or of the continuation summary) in the transcript as imported.
    index: int
    agent: str
    strategy: str
    # Messages the compaction wrote after the marker (summary, placeholder, replacement copies).
    written: int
    # Whether the raw history before it is in the file.
    raw_before: bool
    # "undone", "summary kept" (no raw history before it) or "kept" (mode keep).
    action: str

    def describe(self) -> str:
        where = f"message {self.index}"
        what = {
            "undone": "undone: replayed from the raw history",
            "summary kept": "its summary is kept as the first turn, because the history it replaced is not in the file",
            "kept": "honoured: the history before it is not sent",
        }[self.action]
        return f"{self.agent} compaction at {where} ({self.strategy}): {what}"


def _agent(strategy: str, source_format: str) -> str:
    if strategy in _AGENTS:
        return _AGENTS[strategy]
    if "condensation" in strategy:
        return "OpenHands"
    # The lab's own strategies (session_memory, full, llm, reactive...) in a lab or MiniCode file.
    return {"lab": "Compaction Lab", "minicode": "MiniCode"}.get(source_format, source_format or "unknown agent")


def _written_after(messages: Sequence[Message], i: int) -> int:
    """How many messages after the marker at ``i`` its compaction wrote."""
    marker = messages[i]
    declared = marker.boundary.replaced_messages if marker.boundary is not None else 0
    j = i + 1 + declared
    # The summary, then the placeholder turn a compaction adds so roles alternate.
    while j < len(messages) and messages[j].tag == "summary":
        j += 1
    if j < len(messages) and messages[j].tag == "placeholder" and messages[j].role == "assistant" and j > i + 1:
        j += 1
    return min(j, len(messages)) - i - 1


def _is_raw(m: Message) -> bool:
    """Whether ``m`` is conversation (not system prompt, a marker or what a compaction wrote)."""
    return m.role != "system" and m.tag not in ("summary", "placeholder")


def find_recorded(t: Transcript, mode: RecordedMode = "undo") -> list[RecordedCompaction]:
    """Every recorded compaction in ``t``, with what ``mode`` does with it."""
    msgs = t.messages
    out: list[RecordedCompaction] = []
    raw = False  # whether conversation came before the message at i
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if is_boundary(m):
            written = _written_after(msgs, i)
            strategy = m.boundary.strategy if m.boundary is not None else "boundary"
            action = "kept" if mode == "keep" else "undone" if raw else "summary kept"
            out.append(RecordedCompaction(index=i, agent=_agent(strategy, t.meta.source_format), strategy=strategy,
                                          written=written, raw_before=raw, action=action))
            i += 1 + written
            continue
        if not raw and m.role == "user" and _CONTINUATION.match(message_text(m)):
            # No marker, no history: the file is the continuation of a session compacted elsewhere.
            out.append(RecordedCompaction(index=i, agent="Claude Code", strategy="continuation_summary", written=0,
                                          raw_before=False, action="kept" if mode == "keep" else "summary kept"))
        raw = raw or _is_raw(m)
        i += 1
    return out


def apply_recorded(t: Transcript, mode: RecordedMode) -> tuple[Transcript, list[RecordedCompaction], list[str]]:
    """The transcript the replay plays under ``mode``, the compactions found, and notes for the report."""
    if mode not in RECORDED_MODES:
        raise ConfigError(f"recorded_compactions must be 'undo' or 'keep', got {mode!r}")
    found = find_recorded(t, mode)
    notes = [f"recorded compaction: {c.describe()}" for c in found]
    if mode == "keep" or not found:
        return t, found, notes
    drop: set[int] = set()
    for c in found:
        if c.strategy == "continuation_summary":
            continue
        drop.add(c.index)
        if c.action == "undone":
            drop.update(range(c.index + 1, c.index + 1 + c.written))
    messages = [m for k, m in enumerate(t.messages) if k not in drop]
    undone = sum(1 for c in found if c.action == "undone")
    if undone:
        notes.append(f"{undone} recorded compaction(s) undone: {len(drop)} message(s) the original agent's compactions wrote are not replayed")
    return t.model_copy(update={"messages": messages}), found, notes
