"""Stage 2, tool-result spill (MiniCode's tool budget, MewCode's L1).

A tool result over the threshold is written to the spill store and replaced
by a preview stub; with MewCode's per-message budget, the results of one
message that add up to too much are spilled largest-first until the rest fits.

Every decision is taken once per tool_use_id and frozen in the stage's state
(``SpillState.ledger``, MewCode's ``ContentReplacementState``): a spilled
result gets the byte-identical stub on every later request, a kept one stays
kept, so the provider's prompt-prefix cache stays valid. The stage never
writes the store: it asks the Compactor (``yield Write(...)``) and gets the
path back, or the error thrown in. A failed write records nothing and is
retried on the next request. The new ledger entries are returned with the
decision, so the Compactor keeps them only with the history they describe. A
stub that would not be shorter (in tokens) than the result is never used: the
result is kept, so the stage can never make a history longer.

Incrementally, the stage only looks at the messages after the settled prefix
(every result there was decided already) plus the messages whose spill write
failed, which are revisited on every request as a run from scratch would. Its
memo keeps what it needs from the prefix: every tool call (the tool name a
stub shows) and the positions of those failed messages.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from ...errors import StoreError
from ..events import Event
from ..incremental import Memo
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..names_index import index_line
from ..store import SpillStore
from .base import StageConfig
from .contract import Decision, Stub, View, Write

__all__ = [
    "SpillConfig",
    "SpillState",
    "SpillStage",
    "cleanup_spills",
    "stub_text",
    "minicode_stub",
    "mewcode_stub",
    "result_size",
    "safe_cut",
    "utf8_prefix",
]


class SpillConfig(StageConfig):
    unit: Literal["chars", "bytes"] = Field("chars", description="Measure result size in characters (MiniCode) or UTF-8 bytes (MewCode).")
    threshold: int = Field(4000, ge=100, le=10_000_000, description="Spill a single tool result larger than this (MiniCode 4000 chars; MewCode 50,000 bytes).")
    message_budget_enabled: bool = Field(False, description="Also spill largest-first when one message's results add up to more than the budget (MewCode).")
    message_budget: int = Field(200_000, ge=1000, le=100_000_000, description="Per-message total of tool results before largest-first spilling (MewCode 200,000 bytes).")
    preview_format: Literal["minicode", "mewcode"] = Field("minicode", description="Stub text: MiniCode's head/tail preview or MewCode's offload notice with its read-the-file instruction.")
    head_lines: int = Field(8, ge=0, le=200, description="MiniCode preview: lines kept from the start.")
    tail_lines: int = Field(3, ge=0, le=200, description="MiniCode preview: lines kept from the end (only when the result has more than head+tail+1 lines).")
    preview_chars: int = Field(500, ge=50, le=20_000, description="MiniCode preview: maximum characters, cut at a line or character boundary.")
    preview_shape: Literal["lab", "seed"] = Field("lab", description="MiniCode preview shape. 'seed': as MiniCode's design writes it: a header "
                                                  "(size, Tool:, Path:, a preview line), lines split as Python's splitlines does (so CRLF loses its CR), the "
                                                  "whole stub cut at preview_chars. 'lab': a one-line header, lines split at LF only, only the lines after "
                                                  "the header cut at preview_chars, at a line boundary when one is near, with a note saying so.")
    mewcode_preview_lines: int = Field(20, ge=1, le=500, description="MewCode preview: first N lines...")
    mewcode_preview_bytes: int = Field(2048, ge=64, le=100_000, description="...or first N bytes, whichever is shorter.")
    index_chars: int = Field(0, ge=0, le=20_000, description="Names index: list up to this many characters of the paths and code names the "
                             "output holds beyond its preview in the stub, so the agent knows what the file holds (0: off, as in both seeds).")
    retention_days: float = Field(30, ge=0, le=3650, description="Remove spilled sessions older than this many days (MewCode 30); 0 keeps them forever.")


STRATEGY = "tool_budget"
# Characters that attach to the one before them: cutting in front of one would split a grapheme.
_ZWJ = "\u200d"


def result_size(content: str, unit: str) -> int:
    return len(content.encode("utf-8", "surrogatepass")) if unit == "bytes" else len(content)


def _extends(ch: str) -> bool:
    cp = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ch == _ZWJ
        or 0xFE00 <= cp <= 0xFE0F
        or 0x1F3FB <= cp <= 0x1F3FF
        or 0xE0020 <= cp <= 0xE007F
        or 0xE0100 <= cp <= 0xE01EF
        or 0xDC00 <= cp <= 0xDFFF
    )


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def safe_cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, never inside a grapheme or a CRLF."""
    if len(text) <= limit:
        return text
    i = max(limit, 0)
    while i > 0:
        nxt, prev = text[i], text[i - 1]
        if _extends(nxt) or prev == _ZWJ or (prev == "\r" and nxt == "\n"):
            i -= 1
            continue
        if _regional(nxt) and _regional(prev):
            run = 0
            while i - run - 1 >= 0 and _regional(text[i - run - 1]):
                run += 1
            if run % 2:  # an odd run before the cut means the cut splits a flag
                i -= 1
                continue
        break
    return text[:i]


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits ``max_bytes``, cut on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    cut = max_bytes
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass")


def _lines(content: str) -> list[str]:
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def _file_name(path: str) -> str:
    return re.split(r"[\\/]", path)[-1]


def _readable_path(path: str) -> str:
    """The path a stub names: in full when it is a file on disk (``FolderStore``, ``lab serve``'s spill folder), so
    the agent's own read tool can bring the output back; the file name alone for a memory key (a replay's
    ``MemoryStore``), which no tool could read anyway."""
    return path if re.match(r"(?:/|[A-Za-z]:[\\/])", path) else _file_name(path)


def _seed_stub(content: str, tool: str, path: str, config: SpillConfig) -> str:
    """MiniCode's ``_generate_preview``: header, head lines, the omitted count and tail lines, all cut at ``preview_chars``.

    ``str.splitlines`` is the design's own split, so a CRLF output shows no CR.
    The tail is shown only when the output has more lines than head + tail + 1
    (the design's "> 12" for 8 and 3). The one departure: the cut never splits
    a grapheme (``safe_cut``), where the design's ``[:500]`` may.
    """
    lines = content.splitlines()
    head = lines[: config.head_lines]
    tail = lines[len(lines) - config.tail_lines :] if config.tail_lines and len(lines) > config.head_lines + config.tail_lines + 1 else []
    parts = [f"[Tool result persisted to disk - {len(content)} chars]", f"Tool: {tool}", f"Path: {_file_name(path)}", "--- Preview (first/last lines) ---", *head]
    if tail:
        parts += [f"... ({len(lines) - len(head) - len(tail)} lines omitted) ...", *tail]
    preview = safe_cut("\n".join(parts), config.preview_chars)
    return f"{preview}{_index(content, preview, config)}"


def minicode_stub(content: str, tool: str, path: str, config: SpillConfig) -> str:
    if config.preview_shape == "seed":
        return _seed_stub(content, tool, path, config)
    lines = _lines(content)
    head, tail = config.head_lines, config.tail_lines
    if len(lines) > head + tail + 1:
        parts = lines[:head] + [f"... ({len(lines) - head - tail} lines omitted) ..."]
        parts += lines[len(lines) - tail :] if tail else []
    else:
        parts = lines
    body = "\n".join(parts)
    if len(body) > config.preview_chars:
        cut = safe_cut(body, config.preview_chars)
        newline = cut.rfind("\n")
        # A line boundary is preferred unless it would throw away most of the preview.
        if newline >= config.preview_chars // 2:
            cut = cut[:newline]
        body = cut + "\n... (preview cut at " + str(config.preview_chars) + " chars)"
    header = f"[Tool result persisted: {len(content)} chars, tool {tool}, file {_readable_path(path)}]"
    return f"{header}\n{body}{_index(content, body, config)}"


def _index(content: str, preview: str, config: SpillConfig) -> str:
    line = index_line(content, preview, config.index_chars)
    return f"\n{line}" if line else ""


def mewcode_stub(content: str, path: str, config: SpillConfig) -> str:
    by_lines = "\n".join(_lines(content)[: config.mewcode_preview_lines])
    by_bytes = utf8_prefix(content, config.mewcode_preview_bytes)
    preview = by_lines if len(by_lines) <= len(by_bytes) else by_bytes
    size = result_size(content, "bytes")
    return (
        f"[content offloaded] original size: {size} bytes\n"
        f"[saved to] {path}\n"
        f"[head preview]\n{preview}\n\n"
        f"This is only the head of the output. The full content is saved at {path}; "
        "read that file with the file tool when you need it, and do not guess the rest from this preview."
        f"{_index(content, preview, config)}"
    )


def stub_text(content: str, tool: str, path: str, config: SpillConfig) -> str:
    """The stub a spilled result of ``tool`` stored at ``path`` gets, in the config's preview format."""
    if config.preview_format == "mewcode":
        return mewcode_stub(content, path, config)
    return minicode_stub(content, tool, path, config)


def cleanup_spills(store: SpillStore, config: SpillConfig, now: float | None = None) -> int:
    """Apply ``retention_days`` to ``store``; return the number of sessions removed."""
    if config.retention_days <= 0:
        return 0
    return store.cleanup(config.retention_days * 86_400, now)


@dataclass
class SpillState:
    """The frozen decisions (MewCode's ``ContentReplacementState``): tool_use_id -> the exact stub sent, or None
    for "kept" (``ledger``), and where each spilled result was stored (``paths``), so a frozen stub keeps its path."""

    ledger: dict[str, str | None] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)


class SpillStage:
    name = "spill"
    State = SpillState

    def __init__(self, config: SpillConfig | None = None) -> None:
        self.config = config or SpillConfig()

    def decide(self, view: View, config: SpillConfig, state: SpillState) -> Generator[Write, str, Decision]:
        """A generator: each result to spill is a ``Write`` the Compactor carries out, answering with the path."""
        messages = view.messages
        n = len(messages)
        if not config.enabled:
            return Decision()
        memo = view.note(self._note)
        run = _Run(self.name, config, view, state, memo.table("uses"))
        pending: list[int] = []
        for i in [*memo.marked("revisit"), *range(memo.start, n)]:
            failures = len(run.failed)
            yield from run.message(i, messages[i])
            if len(run.failed) > failures:
                pending.append(i)
        # Record last: the new history exists, so ledger and messages agree. Positions, ascending, of messages
        # with a result whose spill write failed are revisited on every call.
        frozen = SpillState(run.ledger, run.paths) if run.ledger or run.paths else None
        if not run.changes and not run.failed:
            return Decision(state=frozen, revisit=tuple(pending))
        return Decision(tuple(run.changes), run.events(), frozen, tuple(pending))

    @staticmethod
    def _note(memo: Memo, i: int, m: Message) -> None:
        # A pass of its own, before any result is decided: a result's call may come after it in a broken history.
        uses = memo.table("uses")
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                memo.set(uses, b.id, b)


class _Run:
    """One decision of the stage: what it decides is collected here and returned at the end."""

    def __init__(self, name: str, config: SpillConfig, view: View, state: SpillState, uses: dict[str, ToolUseBlock]) -> None:
        self.name = name
        self.config = config
        self.view = view
        self.state = state
        self.uses = uses
        self.ledger: dict[str, str | None] = {}
        self.paths: dict[str, str] = {}
        self.changes: list[Stub] = []
        # kind -> (tool_use ids, tokens freed); kinds: reapply, threshold, message_budget
        self.done: dict[str, tuple[list[str], int]] = {k: ([], 0) for k in ("reapply", "threshold", "message_budget")}
        self.failed: list[tuple[str, str]] = []

    def _decided(self, tid: str) -> tuple[bool, str | None]:
        for ledger in (self.ledger, self.state.ledger):
            if tid in ledger:
                return True, ledger[tid]
        return False, None

    def _path(self, tid: str) -> str | None:
        return self.paths.get(tid) or self.state.paths.get(tid)

    def _replace(self, i: int, j: int, block: ToolResultBlock, stub: str, path: str | None, kind: str) -> ToolResultBlock:
        self.changes.append(Stub(i, j, stub, "spill", path, claim=True))
        ids, freed = self.done[kind]
        ids.append(block.tool_use_id)
        count = self.view.counter.count_text
        self.done[kind] = (ids, freed + count(block.content) - count(stub))
        # What the block becomes, for the per-message budget's arithmetic.
        return block.model_copy(update={"content": stub, "compacted": "spill", "spill_path": path})

    def _spill(self, i: int, j: int, block: ToolResultBlock, kind: str) -> Generator[Write, str, ToolResultBlock | None]:
        tid = block.tool_use_id
        use = self.uses.get(tid)
        tool = use.name if use is not None else "unknown"
        header = {"tool": tool, "trigger": kind, "unit": self.config.unit, "created": self.view.now}
        try:
            path = yield Write(tid, block.content, header)
        except (StoreError, OSError) as e:
            self.failed.append((tid, str(e)))
            return None
        stub = stub_text(block.content, tool, path, self.config)
        count = self.view.counter.count_text
        if count(stub) >= count(block.content):
            # A preview as long as the result (tiny threshold, huge preview) would only add tokens: keep it.
            self.ledger[tid] = None
            return None
        new = self._replace(i, j, block, stub, path, kind)
        self.ledger[tid] = stub
        self.paths[tid] = path
        return new

    def message(self, i: int, m: Message) -> Generator[Write, str, None]:
        blocks = list(m.content)
        fresh: list[int] = []
        claims = self.view.claims
        for j, b in enumerate(blocks):
            if not isinstance(b, ToolResultBlock) or b.compacted is not None:
                continue
            if claims.get(b.tool_use_id) == "dedup":
                # Read dedup decided first (in the dispatcher); its frozen stub is applied by that stage.
                continue
            known, stub = self._decided(b.tool_use_id)
            if not known:
                fresh.append(j)
            elif stub is not None:
                blocks[j] = self._replace(i, j, b, stub, self._path(b.tool_use_id), "reapply")
        if not fresh:
            return
        unit, spilled, failed = self.config.unit, set(), set()
        for j in fresh:
            b = blocks[j]
            assert isinstance(b, ToolResultBlock)
            if result_size(b.content, unit) > self.config.threshold:
                new = yield from self._spill(i, j, b, "threshold")
                if new is None:
                    failed.add(j)
                else:
                    spilled.add(j)
                    blocks[j] = new
        if self.config.message_budget_enabled:
            yield from self._budget(i, blocks, fresh, spilled, failed)
        for j in fresh:
            tid = blocks[j].tool_use_id  # type: ignore[union-attr]
            if j not in spilled and j not in failed and tid not in self.ledger:
                self.ledger[tid] = None

    def _budget(self, i: int, blocks: list, fresh: list[int], spilled: set[int], failed: set[int]) -> Generator[Write, str, None]:
        unit = self.config.unit
        results = [b for b in blocks if isinstance(b, ToolResultBlock)]
        total = sum(result_size(b.content, unit) for b in results)
        # Errors are never spilled for the budget: the model needs them verbatim.
        candidates = [j for j in fresh if j not in spilled and j not in failed and not blocks[j].is_error]
        candidates.sort(key=lambda j: (-result_size(blocks[j].content, unit), j))
        for j in candidates:
            if total <= self.config.message_budget:
                break
            old = blocks[j]
            new = yield from self._spill(i, j, old, "message_budget")
            if new is None:
                failed.add(j)
                continue
            spilled.add(j)
            blocks[j] = new
            total -= result_size(old.content, unit) - result_size(new.content, unit)

    def events(self) -> tuple[Event, ...]:
        view = self.view
        running = view.tokens()
        events: list[Event] = []
        labels = {
            "reapply": ("ledger", "reapply", "re-applied {n} frozen stub(s) from the ledger"),
            "threshold": ("threshold", STRATEGY, "spilled {n} result(s) over {t} {u}"),
            "message_budget": ("message_budget", STRATEGY, "spilled {n} result(s) largest-first to fit the per-message budget of {b} {u}"),
        }
        for kind, (ids, freed) in self.done.items():
            if not ids:
                continue
            trigger, strategy, text = labels[kind]
            detail = text.format(n=len(ids), t=self.config.threshold, u=self.config.unit, b=self.config.message_budget)
            events.append(Event(self.name, trigger, running, running - freed, tuple(ids), strategy, True, detail))
            running -= freed
        if self.failed:
            reason = self.failed[0][1]
            events.append(
                Event(
                    self.name,
                    view.trigger,
                    running,
                    running,
                    tuple(t for t, _ in self.failed),
                    STRATEGY,
                    False,
                    f"spill write failed for {len(self.failed)} result(s) ({reason}); nothing recorded, retried on the next request",
                )
            )
        return tuple(events)
