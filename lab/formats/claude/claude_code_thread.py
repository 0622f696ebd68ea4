"""One Claude Code thread's messages, rebuilt from its entries in conversation order.

Claude Code writes one ``assistant`` entry per content block, all sharing the
API message id, and may write the tool results between them (``A(use1)
U(result1) A(use2) U(result2)``). ``ThreadRows`` merges the entries of one API
message back into one assistant message, and the tool-result entries that
answer it into one user message, which is what the API saw. A message is
assembled as the dict of its ``Message`` fields (a row), its content the list
of its block models (each built once, when its entry is read), and built into
its ``Message`` soon after no later entry can change it.

``ToolIds`` collects the tool ids of a thread's messages, in message order, to
flag what ``tool_pairs`` would: results that answer nothing, calls nobody
answered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ...core.messages import Block, Boundary, ImportNotes, MessageTag, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["Blocks", "Row", "SUBAGENT_TOOLS", "ThreadRows", "ToolIds", "all_results", "parse_ts"]

SUBAGENT_TOOLS = frozenset({"Task", "Agent"})

Blocks = list[Block]
# A message being assembled: the dict of its ``Message`` fields. Until it is built, ``content`` is
# a list, ``timestamp`` holds the entry's raw value and ``usage`` the entry's ``UsageCounts`` (only
# the first timestamp and the last usage of a merged message count), and ``id`` may collide with another's.
Row = dict[str, Any]
# Final rows built at a time: few enough that their values are still in the CPU's caches, enough
# that the call per batch is paid rarely.
_BATCH = 32
# The boundary marker's text block, built as validation builds it from its field dict.
_text_block = TextBlock.trusted_builder("type", "text")


def _row(role: str, blocks: Blocks, entry_id: str, ts: Any, *, usage: Any = None, tag: MessageTag | None = None, boundary: Boundary | None = None) -> Row:
    return {"role": role, "content": blocks, "id": entry_id, "timestamp": ts, "usage": usage, "tag": tag, "boundary": boundary}


def all_results(blocks: Blocks) -> bool:
    for b in blocks:
        if type(b) is not ToolResultBlock:
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


class ToolIds:
    """Tool ids of one thread's messages, in message order, to flag what ``tool_pairs`` would.

    The importer appends the ids of each entry's blocks as it reads them (the values are in
    the CPU's caches then; read back from the built blocks, they missed it on nearly every
    block), repeats and all. Entry order is message order but for one case: an assistant entry
    merged back across tool results that holds a tool_result itself; ``ThreadRows`` then clears
    ``ordered``, and the ids are read from the messages.

    ``flag`` deduplicates them at the end (``dict.fromkeys`` keeps each id's first sighting, as
    ``tool_pairs`` reads them), unless there is nothing to flag, which the ids seen so far tell
    cheaply: every result answered a call still open when it came (``clean``) and no call is left
    open. Then every result id is a call's and every call id a result's, whatever the order, and
    the session's ids, cold by the end of a large import, are not read again.
    """

    def __init__(self) -> None:
        self.uses: list[str] = []
        self.results: list[str] = []
        # (prompt, tool_use id) of subagent calls, in order.
        self.prompts: list[tuple[str, str]] = []
        self.ordered = True
        # Calls no result has answered yet (a handful at a time), each id mapped to itself: the string
        # object a result that answers it shares (``result``). And whether every result so far answered one.
        self.open: dict[str, str] = {}
        self.clean = True

    def use(self, tool_id: str, name: str, tool_input: dict[str, Any]) -> None:
        """A call, as read (a subagent call's prompt kept, to name the sidechain it started)."""
        self.uses.append(tool_id)
        self.open[tool_id] = tool_id
        if name in SUBAGENT_TOOLS:
            prompt = tool_input.get("prompt")
            if isinstance(prompt, str):
                self.prompts.append((prompt.strip(), tool_id))

    def result(self, tool_id: str) -> str:
        """A result, as read; returns the id to keep in its block: the call's own string when it answers an open call.

        Why: a call's id and its result's are equal strings decoded apart, some 60 bytes each; a result
        block that keeps the call's object lets its own copy go once the line is read.
        """
        shared = self.open.pop(tool_id, None)
        if shared is None:
            self.clean = False
            shared = tool_id
        self.results.append(shared)
        return shared

    def scan(self, blocks: Sequence[Block]) -> None:
        """Append the tool ids of built blocks (the importer's general reader, and messages read back)."""
        for b in blocks:
            if isinstance(b, ToolUseBlock):
                self.use(b.id, b.name, b.input)
            elif isinstance(b, ToolResultBlock):
                self.result(b.tool_use_id)

    def flag(self, notes: ImportNotes, label: str) -> None:
        if self.clean and not self.open:
            return
        # The first sighting of an id decides its place in either list, as in tool_pairs.
        uses = dict.fromkeys(self.uses)
        results = dict.fromkeys(self.results)
        orphans = [i for i in results if i not in uses]
        notes.orphan_tool_results.extend(orphans)
        notes.unanswered_tool_uses.extend(i for i in uses if i not in results)
        if orphans:
            notes.warnings.append(f"{label}: {len(orphans)} tool result(s) answer no tool_use in the file")


@dataclass
class ThreadRows:
    """The rows of one thread, in conversation order, handed on as they become final."""

    # Rows a later entry may still change: the last row that is not plain tool results, and the
    # plain tool-result row after it (a later assistant entry of the same API message merges
    # across it). Every earlier row is final: in ``done``, or built into ``messages`` already.
    open_rows: list[Row] = field(default_factory=list)
    # One per open row: the API message id of an assistant row, True for a plain user row of tool
    # results only (only ever extended with more results, so it stays one), None for anything else.
    links: list[str | bool | None] = field(default_factory=list)
    # Final rows not built yet.
    done: list[Row] = field(default_factory=list)
    # The thread's messages, built from its final rows by ``build(messages, rows)`` a batch at a time
    # as they become final: while their values are still in the CPU's caches, which was measurably
    # cheaper than building them at the end. Without ``build``, the final rows stay in ``done``.
    messages: list[Any] = field(default_factory=list)
    build: Callable[[list[Any], list[Row]], object] | None = None
    # The tool ids of the thread's blocks, appended by the importer as it reads them.
    ids: ToolIds = field(default_factory=ToolIds)
    rows_made: int = 0
    root_text: str | None = None
    agent_id: str | None = None
    root_id: str = ""
    # Messages the user sent mid-turn (``add_queued``) that came before the results of the calls they
    # follow: added once the next message starts, after those results, where the request had them.
    deferred: list[Row] = field(default_factory=list)

    def _append(self, row: Row, link: str | bool | None) -> None:
        if link is not True and self.open_rows:
            # Nothing walks back past a row that is not plain tool results: the open rows are final.
            self.close()
        self.open_rows.append(row)
        self.links.append(link)
        self.rows_made += 1

    def close(self) -> None:
        """Hand every open row on as final."""
        done = self.done
        done.extend(self.open_rows)
        self.open_rows.clear()
        self.links.clear()
        if self.build is not None and len(done) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        """Build the final rows into ``messages`` (``close`` does, a batch at a time)."""
        if self.build is not None and self.done:
            self.build(self.messages, self.done)
            self.done.clear()

    def release(self) -> None:
        """Add the deferred mid-turn messages (see ``add_queued``): the next message starts, or the thread ends."""
        if self.deferred:
            rows = self.deferred
            self.deferred = []
            for row in rows:
                self._append(row, None)

    def add_queued(self, blocks: Blocks, entry_id: str, ts: Any, tag: MessageTag | None) -> None:
        """A message the user sent while the agent worked (a ``queued_command`` attachment).

        Claude Code adds it to the request after the tool results of the turn it came in, so one
        written while a call of the open assistant message is unanswered waits for those results.
        """
        row = _row("user", blocks, entry_id, ts, tag=tag)
        if self.open_rows and self.open_rows[-1]["role"] == "assistant" and any(type(b) is ToolUseBlock for b in self.open_rows[-1]["content"]):
            self.deferred.append(row)
            return
        self.release()
        self._append(row, None)

    def add_assistant(self, blocks: Blocks, entry_id: str, api_id: str | None, ts: Any, usage: Any) -> None:
        links = self.links
        if api_id:
            # Walk back over the tool results already written for this API message.
            i = len(links) - 1
            while i >= 0 and links[i] is True:
                i -= 1
            if i >= 0 and links[i] == api_id:
                row = self.open_rows[i]
                row["content"].extend(blocks)
                if i < len(links) - 1 and any(type(b) is ToolResultBlock for b in blocks):
                    # Results put before the later results of the rows walked over: see ToolIds.
                    self.ids.ordered = False
                if usage is not None:
                    row["usage"] = usage
                return
        if self.deferred:
            self.release()
        self._append(_row("assistant", blocks, entry_id, ts, usage=usage), api_id)

    def add_user(self, blocks: Blocks, entry_id: str, ts: Any, tag: MessageTag | None = None) -> bool:
        """Add a user entry's blocks; returns whether they are plain tool results."""
        results_only = tag is None and all_results(blocks)
        if results_only and self.links and self.links[-1] is True:
            self.open_rows[-1]["content"].extend(blocks)
            return True
        if self.deferred and not results_only:
            self.release()
        self._append(_row("user", blocks, entry_id, ts, tag=tag), True if results_only else None)
        return results_only

    def add_boundary(self, entry_id: str, ts: Any, trigger: str, tokens_before: int, *, preserved: tuple[str | None, str | None] = (None, None)) -> None:
        self.release()
        if self.open_rows and self.open_rows[-1]["boundary"] is not None:
            return
        kind: Literal["manual", "auto", "import"] = "manual" if trigger == "manual" else "auto" if trigger == "auto" else "import"
        first, last = preserved
        boundary = Boundary(
            trigger=kind, strategy="claude_code_compact", timestamp=parse_ts(ts), tokens_before=tokens_before, preserved_first_id=first, preserved_last_id=last
        )
        text = _text_block({"type": "text", "text": f"[Conversation compacted by Claude Code ({trigger})]"})
        self._append(_row("system", [text], f"{entry_id}-boundary", ts, tag="boundary", boundary=boundary), None)
