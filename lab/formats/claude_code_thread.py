"""One Claude Code thread's messages, rebuilt from its entries in conversation order.

Claude Code writes one ``assistant`` entry per content block, all sharing the
API message id, and may write the tool results between them (``A(use1)
U(result1) A(use2) U(result2)``). ``ThreadRows`` merges the entries of one API
message back into one assistant message, and the tool-result entries that
answer it into one user message, which is what the API saw. A message is
assembled as the dict of its ``Message`` fields (a row) and handed on as soon
as no later entry can change it.

``ToolIds`` collects the tool ids of a thread's final messages, to flag what
``tool_pairs`` would: results that answer nothing, calls nobody answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..core.messages import Boundary, ImportNotes, MessageTag

__all__ = ["Blocks", "Row", "SUBAGENT_TOOLS", "ThreadRows", "ToolIds", "all_results", "parse_ts"]

SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

Blocks = list[dict[str, Any]]
# A message being assembled: the dict of its ``Message`` fields. Until it is validated,
# ``timestamp`` holds the entry's raw value and ``usage`` the raw API usage object (only the first
# timestamp and the last usage of a merged message count), and ``id`` may collide with another's.
Row = dict[str, Any]


def _row(role: str, blocks: Blocks, entry_id: str, ts: Any, *, usage: Any = None, tag: MessageTag | None = None, boundary: Boundary | None = None) -> Row:
    return {"role": role, "content": blocks, "id": entry_id, "timestamp": ts, "usage": usage, "tag": tag, "boundary": boundary}


def all_results(blocks: Blocks) -> bool:
    for b in blocks:
        if b["type"] != "tool_result":
            return False
    return bool(blocks)


def parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        # Python 3.11 reads a trailing "Z" itself, and "Z" is valid nowhere else, so a value this
        # accepts parses to what the "+00:00" spelling below gives; anything else takes that path.
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class ThreadRows:
    # Rows a later entry may still change: the last row that is not plain tool results, and the
    # plain tool-result row after it (a later assistant entry of the same API message merges
    # across it). Every earlier row is final and has gone to ``sink``.
    open_rows: list[Row] = field(default_factory=list)
    # One per open row: the API message id of an assistant row, True for a plain user row of tool
    # results only (only ever extended with more results, so it stays one), None for anything else.
    links: list[str | bool | None] = field(default_factory=list)
    # Final rows of a thread whose messages are built at the end (sidechains).
    done: list[Row] = field(default_factory=list)
    sink: Callable[[Row], None] | None = None
    rows_made: int = 0
    root_text: str | None = None
    agent_id: str | None = None
    root_id: str = ""

    def _append(self, row: Row, link: str | bool | None) -> None:
        if link is not True and self.open_rows:
            # Nothing walks back past a row that is not plain tool results: the open rows are final.
            self.close()
        self.open_rows.append(row)
        self.links.append(link)
        self.rows_made += 1

    def close(self) -> None:
        """Hand every open row on as final."""
        sink = self.sink or self.done.append
        for row in self.open_rows:
            sink(row)
        self.open_rows.clear()
        self.links.clear()

    def add_assistant(self, blocks: Blocks, entry_id: str, api_id: str | None, ts: Any, usage: dict[str, Any] | None) -> None:
        if api_id:
            # Walk back over the tool results already written for this API message.
            links = self.links
            i = len(links) - 1
            while i >= 0 and links[i] is True:
                i -= 1
            if i >= 0 and links[i] == api_id:
                row = self.open_rows[i]
                row["content"].extend(blocks)
                if usage is not None:
                    row["usage"] = usage
                return
        self._append(_row("assistant", blocks, entry_id, ts, usage=usage), api_id)

    def add_user(self, blocks: Blocks, entry_id: str, ts: Any, tag: MessageTag | None = None) -> bool:
        """Add a user entry's blocks; returns whether they are plain tool results."""
        results_only = tag is None and all_results(blocks)
        if results_only and self.links and self.links[-1] is True:
            self.open_rows[-1]["content"].extend(blocks)
            return True
        self._append(_row("user", blocks, entry_id, ts, tag=tag), True if results_only else None)
        return results_only

    def add_boundary(self, entry_id: str, ts: Any, trigger: str, tokens_before: int) -> None:
        if self.open_rows and self.open_rows[-1]["boundary"] is not None:
            return
        kind: Literal["manual", "auto", "import"] = "manual" if trigger == "manual" else "auto" if trigger == "auto" else "import"
        boundary = Boundary(trigger=kind, strategy="claude_code_compact", timestamp=parse_ts(ts), tokens_before=tokens_before)
        text = {"type": "text", "text": f"[Conversation compacted by Claude Code ({trigger})]"}
        self._append(_row("system", [text], f"{entry_id}-boundary", ts, tag="boundary", boundary=boundary), None)


class ToolIds:
    """Tool ids seen in one thread's messages, in message order, to flag what ``tool_pairs`` would."""

    def __init__(self) -> None:
        self.uses: dict[str, None] = {}
        self.results: dict[str, None] = {}
        # (prompt, tool_use id) of subagent calls, in order.
        self.prompts: list[tuple[str, str]] = []

    def scan(self, blocks: Blocks) -> None:
        for b in blocks:
            kind = b["type"]
            if kind == "tool_use":
                self.uses[b["id"]] = None
                if b["name"] in SUBAGENT_TOOLS and isinstance(b["input"].get("prompt"), str):
                    self.prompts.append((b["input"]["prompt"].strip(), b["id"]))
            elif kind == "tool_result":
                self.results[b["tool_use_id"]] = None

    def flag(self, notes: ImportNotes, label: str) -> None:
        # The first sighting of an id decides its place in either list, as in tool_pairs.
        orphans = [i for i in self.results if i not in self.uses]
        notes.orphan_tool_results.extend(orphans)
        notes.unanswered_tool_uses.extend(i for i in self.uses if i not in self.results)
        if orphans:
            notes.warnings.append(f"{label}: {len(orphans)} tool result(s) answer no tool_use in the file")
