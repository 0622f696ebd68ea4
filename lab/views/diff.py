"""The data behind the Diff page: one context before and after the pipeline, side by side.

Pure functions over ``lab.core`` messages; no Streamlit here, so every rule
is unit-tested without a page. ``diff_context(before, after)`` lines the two
contexts up by message id (stages keep a message's id when they rewrite it,
and give what they insert ids of their own), then compares each matched
message block by block. A tool_result's block is matched by its
``tool_use_id``, so a stub on the right sits beside the output it replaced on
the left.

Rows that share a tool call id are put in one group, so the page can draw a
tool_use and its tool_result in the same box: a pair is visibly kept, stubbed
or removed together.

For navigating, ``event_requests(rows)`` lists the requests where something
happened (stage events, a boundary, an overflow, a failure), each with a label
saying what, and ``page_layout`` orders one diff for reading: what the
compaction wrote (summary, boundary) first, each run of removed messages as one
folded block, then the rest in pages of a bounded height.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any, Literal
from collections.abc import Iterable, Sequence

from ..core.commands import PATH_KEYS, tool_action

from ..core.messages import (
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..replayer.report import Row

__all__ = [
    "RowStatus",
    "BlockStatus",
    "BlockView",
    "BlockChange",
    "DiffRow",
    "Section",
    "ContextDiff",
    "block_view",
    "render_block",
    "diff_context",
    "text_diff",
    "clip",
    "recall_note",
    "tool_input_text",
    "RequestEvents",
    "event_requests",
    "default_request",
    "step_request",
    "PageLayout",
    "page_layout",
    "section_lines",
    "paginate",
    "PAGE_LINES",
]

RowStatus = Literal["kept", "changed", "removed", "inserted"]
BlockStatus = Literal["same", "stub", "changed", "removed", "added"]

# Above this many characters the page shows the head of a block; the text diff has the rest.
CLIP_CHARS = 3000


@dataclass(frozen=True)
class BlockView:
    """One block as the page shows it: a label, and its content as plain text."""

    kind: str
    key: str
    label: str
    text: str
    tool_id: str | None = None
    compacted: str | None = None
    spill_path: str | None = None
    original_chars: int | None = None
    is_error: bool = False


@dataclass(frozen=True)
class BlockChange:
    """A block on both sides: ``before`` is None for an added block, ``after`` for a removed one."""

    key: str
    status: BlockStatus
    before: BlockView | None
    after: BlockView | None

    @property
    def label(self) -> str:
        view = self.after or self.before
        assert view is not None
        return view.label


@dataclass(frozen=True)
class DiffRow:
    """One message position: left only (removed), right only (inserted), or both."""

    index: int
    status: RowStatus
    before: Message | None
    after: Message | None
    blocks: tuple[BlockChange, ...]
    tool_ids: tuple[str, ...] = ()
    group: int | None = None

    @property
    def message(self) -> Message:
        m = self.after or self.before
        assert m is not None
        return m

    @property
    def kind(self) -> str:
        """What the row is: "message", or the tag of a message the pipeline inserted (summary, boundary, ...)."""
        m = self.message
        if m.boundary is not None:
            return "boundary"
        return m.tag or "message"

    @property
    def changes(self) -> tuple[BlockChange, ...]:
        return tuple(b for b in self.blocks if b.status != "same")


@dataclass(frozen=True)
class Section:
    """What the page draws as one unit: a tool-pair group, a lone row, or a run of rows folded away.

    A folded section is a run of unchanged rows, or (``removed``) a run of rows the pipeline removed.
    """

    rows: tuple[DiffRow, ...]
    group: int | None = None
    folded: bool = False
    removed: bool = False

    @property
    def tool_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for r in self.rows:
            seen.update(dict.fromkeys(r.tool_ids))
        return tuple(seen)


@dataclass(frozen=True)
class ContextDiff:
    rows: tuple[DiffRow, ...]
    counts: dict[str, int] = field(default_factory=dict)

    def changed_blocks(self) -> list[tuple[str, BlockChange]]:
        """Every block that differs, each with a label naming its message, for a picker."""
        out: list[tuple[str, BlockChange]] = []
        for r in self.rows:
            for b in r.changes:
                out.append((f"#{r.index} {r.message.role} {r.message.id} · {b.label} ({b.status})", b))
        return out

    def sections(self, only_changes: bool = False) -> list[Section]:
        """Rows grouped for drawing: consecutive rows of one tool group together.

        With ``only_changes``, runs of unchanged rows become one folded section,
        except that a group with any change is shown whole (the call with its result).
        """
        changed_groups = {r.group for r in self.rows if r.status != "kept" and r.group is not None}

        def shown(r: DiffRow) -> bool:
            return not only_changes or r.status != "kept" or r.group in changed_groups

        out: list[Section] = []
        run: list[DiffRow] = []
        folded: list[DiffRow] = []

        def flush_run() -> None:
            if run:
                out.append(Section(tuple(run), run[0].group))
                run.clear()

        def flush_folded() -> None:
            if folded:
                out.append(Section(tuple(folded), folded=True))
                folded.clear()

        for r in self.rows:
            if not shown(r):
                flush_run()
                folded.append(r)
                continue
            flush_folded()
            if run and (r.group is None or r.group != run[-1].group):
                flush_run()
            run.append(r)
        flush_run()
        flush_folded()
        return out


def render_block(block: Block) -> str:
    """A block's content as plain text: what the model reads, or a placeholder for an image."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thinking
    if isinstance(block, ToolUseBlock):
        return tool_input_text(block)
    if isinstance(block, ToolResultBlock):
        return block.content
    if isinstance(block, ImageBlock):
        where = f" {block.url}" if block.url else ""
        return f"[image {block.media_type}, {block.size_bytes} bytes{where}]"
    return ""  # pragma: no cover - the Block union is closed


def _value_text(key: str, value: Any) -> str:
    if isinstance(value, str):
        # A multi-line value (a heredoc, a file body, an edit's old text) keeps its real line breaks.
        return f"{key}:\n{value}" if "\n" in value else f"{key}: {value}"
    return f"{key}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}"


def tool_input_text(block: ToolUseBlock) -> str:
    """A tool call as a person reads it: the command it runs or the files it names, then its other inputs.

    A tool ``tool_action`` cannot read (no command, no path, no change) falls back to pretty JSON.
    """
    inputs = block.input if isinstance(block.input, dict) else {}
    action = tool_action(block)
    files = action.paths or tuple(w.path for w in action.writes)
    if not action.command and not files and not action.change:
        return f"{block.name}\n{json.dumps(inputs, ensure_ascii=False, indent=2, sort_keys=True)}"
    lines = [f"{block.name} ({action.kind})"]
    used: set[str] = set()
    if action.command:
        lines.append(f"$ {action.command}")
        used |= {"command", "cmd"}
    else:
        lines += [f"path: {p}" for p in files]
        used |= set(PATH_KEYS)
    if action.change:
        lines.append(f"change: {action.change}")
    lines += [_value_text(k, v) for k, v in inputs.items() if k not in used]
    return "\n".join(lines)


def _key(block: Block, ordinal: int) -> str:
    if isinstance(block, ToolUseBlock):
        return f"tool_use:{block.id}"
    if isinstance(block, ToolResultBlock):
        return f"tool_result:{block.tool_use_id}"
    return f"{block.type}:{ordinal}"


def block_view(block: Block, key: str | None = None) -> BlockView:
    text = render_block(block)
    if isinstance(block, ToolUseBlock):
        return BlockView("tool_use", key or _key(block, 0), f"tool_use {block.name} [{block.id}]", text, tool_id=block.id)
    if isinstance(block, ToolResultBlock):
        notes = [n for n in (block.compacted and f"stub: {block.compacted}", block.is_error and "error") if n]
        suffix = f" ({', '.join(notes)})" if notes else ""
        return BlockView(
            "tool_result",
            key or _key(block, 0),
            f"tool_result [{block.tool_use_id}]{suffix}",
            text,
            tool_id=block.tool_use_id,
            compacted=block.compacted,
            spill_path=block.spill_path,
            original_chars=block.original_chars,
            is_error=block.is_error,
        )
    return BlockView(block.type, key or _key(block, 0), block.type, text)


def _keyed(message: Message) -> list[tuple[str, Block]]:
    seen: dict[str, int] = {}
    out: list[tuple[str, Block]] = []
    for b in message.content:
        base = _key(b, seen.get(b.type, 0))
        seen[b.type] = seen.get(b.type, 0) + 1
        key = base
        n = 1
        # A malformed message may repeat a tool id; keep the keys unique anyway.
        while any(k == key for k, _ in out):
            n += 1
            key = f"{base}#{n}"
        out.append((key, b))
    return out


def _block_status(before: Block, after: Block) -> BlockStatus:
    if before == after:
        return "same"
    if isinstance(after, ToolResultBlock) and after.compacted is not None:
        return "stub"
    return "changed"


def _compare_blocks(before: Message | None, after: Message | None) -> tuple[BlockChange, ...]:
    left = _keyed(before) if before is not None else []
    right = _keyed(after) if after is not None else []
    right_map = dict(right)
    left_keys = {k for k, _ in left}
    out: list[BlockChange] = []
    for key, b in left:
        a = right_map.get(key)
        if a is None:
            out.append(BlockChange(key, "removed", block_view(b, key), None))
        else:
            out.append(BlockChange(key, _block_status(b, a), block_view(b, key), block_view(a, key)))
    for key, a in right:
        if key not in left_keys:
            out.append(BlockChange(key, "added", None, block_view(a, key)))
    return tuple(out)


def _tool_ids(message: Message | None) -> list[str]:
    if message is None:
        return []
    ids: list[str] = []
    for b in message.content:
        if isinstance(b, ToolUseBlock):
            ids.append(b.id)
        elif isinstance(b, ToolResultBlock):
            ids.append(b.tool_use_id)
    return ids


def _occurrence_keys(messages: Sequence[Message]) -> list[tuple[str, int]]:
    # (id, n-th time seen): an id repeated by a sloppy importer still lines up one to one.
    seen: dict[str, int] = {}
    keys = []
    for m in messages:
        n = seen.get(m.id, 0)
        seen[m.id] = n + 1
        keys.append((m.id, n))
    return keys


def _align(before: Sequence[Message], after: Sequence[Message]) -> list[tuple[Message | None, Message | None]]:
    """Pairs in display order: matched ids in order; between two matches, removed rows first, then inserted."""
    left_pos = {k: i for i, k in enumerate(_occurrence_keys(before))}
    pairs: list[tuple[Message | None, Message | None]] = []
    i = 0
    pending: list[Message] = []
    for key, a in zip(_occurrence_keys(after), after, strict=True):
        j = left_pos.get(key)
        if j is None or j < i:
            # New, or out of order (a stage never reorders; treat it as inserted rather than guess).
            pending.append(a)
            continue
        pairs += [(m, None) for m in before[i:j]]
        pairs += [(None, m) for m in pending]
        pending = []
        pairs.append((before[j], a))
        i = j + 1
    pairs += [(m, None) for m in before[i:]]
    pairs += [(None, m) for m in pending]
    return pairs


class _Groups:
    """Union-find over tool ids: every row touching one call lands in one group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for other in ids[1:]:
            self.parent[self.find(other)] = self.find(ids[0])


def diff_context(before: Sequence[Message], after: Sequence[Message]) -> ContextDiff:
    """Line up ``before`` (e.g. the raw history at request k) with ``after`` (what was sent)."""
    aligned = _align(before, after)
    groups = _Groups()
    row_ids: list[tuple[str, ...]] = []
    for b, a in aligned:
        ids = tuple(dict.fromkeys(_tool_ids(b) + _tool_ids(a)))
        row_ids.append(ids)
        if ids:
            groups.union(ids)
    numbers: dict[str, int] = {}
    rows: list[DiffRow] = []
    counts = dict.fromkeys(("kept", "changed", "removed", "inserted", "stubs", "blocks_changed"), 0)
    for index, ((b, a), ids) in enumerate(zip(aligned, row_ids, strict=True)):
        group = numbers.setdefault(groups.find(ids[0]), len(numbers) + 1) if ids else None
        blocks = _compare_blocks(b, a)
        if b is None:
            status: RowStatus = "inserted"
        elif a is None:
            status = "removed"
        else:
            status = "kept" if b == a else "changed"
        counts[status] += 1
        if status == "changed":
            counts["stubs"] += sum(1 for c in blocks if c.status == "stub")
            counts["blocks_changed"] += sum(1 for c in blocks if c.status != "same")
        rows.append(DiffRow(index, status, b, a, blocks, ids, group))
    return ContextDiff(tuple(rows), counts)


def text_diff(before: str, after: str, *, before_label: str = "before", after_label: str = "after", context: int = 3) -> str:
    """A unified diff of two texts, one string; empty when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        fromfile=before_label,
        tofile=after_label,
        n=context,
        lineterm="",
    )
    return "\n".join(lines)


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """The head of a long text with a note of how much was left out (for display only)."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit:,} more characters not shown]"


def recall_note(row: Row) -> tuple[str | None, list[str]]:
    """Needed-later recall at one request: a headline, and one plain-text line per mention the context lost.

    Each line reads "the response at k used X; this context no longer holds it", with the kind of X and what
    removed it. Lines are transcript text: the page draws them with st.text.
    """
    if row.needed_later_recall is None:
        return None, []
    head = (f"Needed-later recall {row.needed_later_recall:.0%}: the response at request {row.index} used "
            f"{row.needed_mentions} thing(s) seen earlier; {row.kept_mentions} in this context, "
            f"{row.recoverable_mentions} recoverable from spill files, {row.lost_recorded} lost to the recorded "
            f"compaction, {row.lost_config} lost to this config.")
    lines = [f"the response at {row.index} used {m.kind} {m.mention}; this context no longer holds it (lost to {m.lost_to})"
             for m in row.lost_mentions]
    listed = row.lost_recorded + row.lost_config
    if listed > len(lines):
        lines.append(f"... and {listed - len(lines)} more")
    return head, lines


# -- navigating: the requests where something happened -------------------------------------------

# Stages whose events mean a compaction rewrote the history (not just stubbed a result).
_COMPACTION_STAGES = ("summary", "recovery", "truncation")


@dataclass(frozen=True)
class RequestEvents:
    """One request where something happened, and a label saying what (the lab's own words)."""

    index: int
    label: str
    compaction: bool


def _event_words(e: dict[str, Any]) -> str:
    stage = str(e.get("stage") or "event")
    trigger = e.get("trigger")
    trigger = str(trigger).removeprefix(f"{stage}_").replace("_", " ") if trigger else ""
    word = f"{stage} ({trigger})" if trigger and trigger != stage else stage
    return word if e.get("success", True) else f"{word} ✗ failed"


def event_requests(rows: Sequence[Row]) -> list[RequestEvents]:
    """Every request with a stage event, a boundary, an overflow or a failure, in order."""
    out: list[RequestEvents] = []
    for row in rows:
        words = list(dict.fromkeys(_event_words(e) for e in row.events))
        if row.boundary_placed:
            words.append("boundary")
        if row.overflowed:
            words.append("overflowed")
        if row.failed:
            words.append("✗ request failed")
        if not words:
            continue
        compaction = row.boundary_placed or any(e.get("stage") in _COMPACTION_STAGES for e in row.events)
        out.append(RequestEvents(row.index, f"request {row.index}: {', '.join(words)}", compaction))
    return out


def default_request(events: Sequence[RequestEvents]) -> int:
    """Where the page opens when nothing is selected: the first compaction, else the first event, else 0."""
    first = next((e for e in events if e.compaction), None) or (events[0] if events else None)
    return first.index if first is not None else 0


def step_request(events: Sequence[RequestEvents], k: int, direction: int) -> int | None:
    """The previous (``direction`` < 0) or next request with events from ``k``; None when there is none."""
    if direction < 0:
        earlier = [e.index for e in events if e.index < k]
        return earlier[-1] if earlier else None
    return next((e.index for e in events if e.index > k), None)


# -- reading order and pages -------------------------------------------------------------------

# What a compaction writes into the context, drawn at the top of the page.
TOP_KINDS = ("summary", "boundary", "memory", "truncation_note")
# A page of the diff holds about five screens of text (a screen is about 45 lines of a code block).
PAGE_LINES = 220
# A drawn block is capped at this many lines (the page gives it a scrolling box).
BLOCK_LINES = 20
# Characters per line of one side of the diff, for the height estimate.
_LINE_CHARS = 70


@dataclass(frozen=True)
class PageLayout:
    """One diff in reading order: what the compaction wrote, then the sections, split into pages."""

    top: tuple[DiffRow, ...]
    pages: tuple[tuple[Section, ...], ...]


def _text_lines(text: str) -> int:
    return sum(max(1, -(-len(line) // _LINE_CHARS)) for line in text.splitlines() or [""])


def section_lines(section: Section) -> int:
    """An estimate of how many lines a section takes on the page (each block capped at BLOCK_LINES)."""
    if section.folded:
        return 2
    total = 2 if section.group is not None else 0
    for row in section.rows:
        sides = []
        for pick in ("before", "after"):
            views = [getattr(c, pick) for c in row.blocks if getattr(c, pick) is not None]
            sides.append(sum(1 + min(BLOCK_LINES, _text_lines(v.text)) for v in views) + 1)
        total += 1 + max(sides)
    return total


def paginate(sections: Sequence[Section], budget: int = PAGE_LINES) -> tuple[tuple[Section, ...], ...]:
    """Sections in pages of at most ``budget`` estimated lines (a section taller than that gets a page alone)."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    pages: list[tuple[Section, ...]] = []
    page: list[Section] = []
    used = 0
    for s in sections:
        lines = section_lines(s)
        if page and used + lines > budget:
            pages.append(tuple(page))
            page, used = [], 0
        page.append(s)
        used += lines
    if page:
        pages.append(tuple(page))
    return tuple(pages)


def _fold_removed(sections: Sequence[Section]) -> list[Section]:
    out: list[Section] = []
    run: list[DiffRow] = []

    def flush() -> None:
        if run:
            out.append(Section(tuple(run), folded=True, removed=True))
            run.clear()

    for s in sections:
        if not s.folded and all(r.status == "removed" for r in s.rows):
            run.extend(s.rows)
            continue
        flush()
        out.append(s)
    flush()
    return out


def page_layout(diff: ContextDiff, *, only_changes: bool, budget: int = PAGE_LINES) -> PageLayout:
    """The diff for reading: summary and boundary on top, removed runs folded, the rest paginated."""
    top = tuple(r for r in diff.rows if r.status == "inserted" and r.kind in TOP_KINDS)
    on_top = {r.index for r in top}
    rest = ContextDiff(tuple(r for r in diff.rows if r.index not in on_top), diff.counts)
    return PageLayout(top, paginate(_fold_removed(rest.sections(only_changes=only_changes)), budget))
