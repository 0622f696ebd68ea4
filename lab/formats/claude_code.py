"""Claude Code session files: one JSON entry per line (or one JSON array of entries).

What the importer rebuilds from the entries:

- Claude Code writes one ``assistant`` entry per content block, all sharing the
  API message id, and may write the tool results between them (``A(use1)
  U(result1) A(use2) U(result2)``). Entries of one API message are merged back
  into one assistant message, and the tool-result entries that answer it into
  one user message, which is what the API saw.
- ``isSidechain`` entries (subagents) are kept apart in ``Transcript.sidechains``.
  A thread is keyed by the id of the main thread's ``Task``/``Agent`` tool_use
  whose prompt started it, else by its ``agentId``, else by its root entry's uuid.
- A compaction (``isCompactSummary`` user entry, and the newer ``system`` entry
  with ``subtype: compact_boundary``) becomes a boundary message followed by the
  summary as a user message tagged ``summary``.
- Record types the model has no place for (hook output in ``system``, queue
  operations, snapshots, titles, ...) and unknown types are skipped and counted
  by type in ``notes.skipped``; so are repeated uuids (``duplicate``).
- ``isMeta`` user entries (command caveats) were sent to the model, so they
  are kept; a warning counts them.
- Images become ``ImageBlock`` placeholders; inside a tool result, whose
  content is text, they become ``[image: media/type, N bytes]`` markers.

Import speed (a JSONL import should cost at most about twice ``json.loads`` of
its lines): entries are streamed; a message is assembled as the dict of its
fields, with blocks as the checked dicts ``block_dicts`` returns, and is
validated in one pydantic call (blocks included, in Rust) as soon as no later
entry can change it, while its data is still in the CPU cache. Timestamps and
usage are converted once per message, not once per entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationError

from ..core.messages import (
    Boundary,
    ImportNotes,
    Message,
    MessageTag,
    Transcript,
    TranscriptMeta,
)
from ..errors import TranscriptError
from .anthropic import block_dicts, usage_fields
from .jsonio import iter_jsonl, leading_char, read_json
from .registry import Format, Probe, register

__all__ = ["FORMAT", "ENTRY_TYPES", "read", "read_entries", "sniff"]

# Every record type Claude Code is known to write; only user and assistant are modelled.
ENTRY_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "queue-operation", "attachment", "last-prompt", "file-history-snapshot"}
)
_SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
_MAIN = ""
# Called once per message; the model's own validator skips the Python wrapper of model_validate.
_validate_message = Message.__pydantic_validator__.validate_python

Blocks = list[dict[str, Any]]
# A message being assembled: the dict of its ``Message`` fields. Until it is validated,
# ``timestamp`` holds the entry's raw value and ``usage`` the raw API usage object (only the first
# timestamp and the last usage of a merged message count), and ``id`` may collide with another's.
Row = dict[str, Any]


def _row(
    role: str, blocks: Blocks, entry_id: str, ts: Any, *, usage: Any = None, tag: MessageTag | None = None, boundary: Boundary | None = None
) -> Row:
    return {"role": role, "content": blocks, "id": entry_id, "timestamp": ts, "usage": usage, "tag": tag, "boundary": boundary}


def _all_results(blocks: Blocks) -> bool:
    for b in blocks:
        if b["type"] != "tool_result":
            return False
    return bool(blocks)


@dataclass
class _Thread:
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

    def add_user(self, blocks: Blocks, entry_id: str, ts: Any, tag: MessageTag | None = None) -> None:
        results_only = tag is None and _all_results(blocks)
        if results_only and self.links and self.links[-1] is True:
            self.open_rows[-1]["content"].extend(blocks)
            return
        self._append(_row("user", blocks, entry_id, ts, tag=tag), True if results_only else None)

    def add_boundary(self, entry_id: str, ts: Any, trigger: str, tokens_before: int) -> None:
        if self.open_rows and self.open_rows[-1]["boundary"] is not None:
            return
        kind = trigger if trigger in ("manual", "auto") else "import"
        boundary = Boundary(trigger=kind, strategy="claude_code_compact", timestamp=_ts(ts), tokens_before=tokens_before)  # type: ignore[arg-type]
        text = {"type": "text", "text": f"[Conversation compacted by Claude Code ({trigger})]"}
        self._append(_row("system", [text], f"{entry_id}-boundary", ts, tag="boundary", boundary=boundary), None)


def _ts(value: Any) -> datetime | None:
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


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


class _Pairs:
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
                if b["name"] in _SUBAGENT_TOOLS and isinstance(b["input"].get("prompt"), str):
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


class _Importer:
    def __init__(self, file: str) -> None:
        self.file = file
        self.notes = ImportNotes()
        self.threads: dict[str, _Thread] = {_MAIN: _Thread(sink=self._main_row)}
        self.entry_thread: dict[str, str] = {}
        self.meta = TranscriptMeta(source_format="claude_code", source_path=file)
        self.meta_entries = 0
        # Kept here, not in the pydantic notes, whose attribute assignment costs a Python call per entry.
        self.records_read = 0
        # Message ids in use: the main thread's, in order, then each sidechain's (built at the end).
        self.seen: set[str] = set()
        self.main: list[Message] = []
        self.main_pairs = _Pairs()

    def _message(self, row: Row, pairs: _Pairs) -> Message:
        """Validate a final row: its id made unique, its timestamp and usage converted."""
        base = mid = row["id"]
        n = 2
        while mid in self.seen:
            mid = f"{base}#{n}"
            n += 1
        self.seen.add(mid)
        row["id"] = mid
        row["timestamp"] = _ts(row["timestamp"])
        if row["usage"] is not None:
            row["usage"] = usage_fields(row["usage"])
        pairs.scan(row["content"])
        try:
            return _validate_message(row)  # type: ignore[no-any-return]
        except ValidationError as exc:
            # The values were checked while reading, so this is an importer bug; still say where.
            first = exc.errors()[0]
            raise TranscriptError(
                f"message {mid} failed validation: {first['msg']}", file=self.file, where=f"message {mid}", expected="a valid message"
            ) from exc

    def _main_row(self, row: Row) -> None:
        self.main.append(self._message(row, self.main_pairs))

    def _sidechain_key(self, entry: dict[str, Any], entry_id: str) -> str:
        agent = entry.get("agentId")
        if isinstance(agent, str) and agent:
            key = f"agent:{agent}"
            self.threads.setdefault(key, _Thread(agent_id=agent, root_id=entry_id))
            return key
        parent = entry.get("parentUuid")
        inherited = self.entry_thread.get(parent) if isinstance(parent, str) else None
        if inherited:
            return inherited
        key = f"root:{entry_id}"
        self.threads.setdefault(key, _Thread(root_id=entry_id))
        return key

    def add(self, entry: dict[str, Any], where: str) -> None:
        self.records_read += 1
        uuid = entry.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            uuid = None
        elif uuid in self.entry_thread:
            self.notes.skip("duplicate")
            return
        entry_id = uuid if uuid is not None else where.replace(" ", "")
        key = _MAIN if entry.get("isSidechain") is not True else self._sidechain_key(entry, entry_id)
        if uuid is not None:
            self.entry_thread[uuid] = key
        if self.meta.session_id is None and isinstance(entry.get("sessionId"), str):
            self.meta.session_id = entry["sessionId"]
        kind = entry.get("type")
        if kind != "user" and kind != "assistant":
            self._add_other(entry, kind, entry_id, key)
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            self.notes.skip(f"{kind}:no_message")
            return
        blocks = block_dicts(message.get("content"), self.notes, where)
        thread = self.threads[key]
        ts = entry.get("timestamp")
        if kind == "assistant":
            if self.meta.model is None:
                model = message.get("model")
                if isinstance(model, str) and model != "<synthetic>":
                    self.meta.model = model
            api_id = message.get("id")
            if blocks:
                usage = message.get("usage")
                thread.add_assistant(
                    blocks, entry_id, api_id if isinstance(api_id, str) else None, ts, usage if isinstance(usage, dict) else None
                )
            else:
                self.notes.skip("empty_message")
            return
        if key != _MAIN and not thread.rows_made and thread.root_text is None:
            thread.root_text = _text_of(message.get("content")).strip()
        if not blocks:
            self.notes.skip("empty_message")
            return
        if entry.get("isCompactSummary") is True:
            thread.add_boundary(entry_id, ts, "import", 0)
            thread.add_user(blocks, entry_id, ts, tag="summary")
            return
        if entry.get("isMeta") is True:
            self.meta_entries += 1
        thread.add_user(blocks, entry_id, ts)

    def _add_other(self, entry: dict[str, Any], kind: Any, entry_id: str, key: str) -> None:
        """Entries other than user and assistant: compaction boundaries; the rest are counted."""
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata") if isinstance(entry.get("compactMetadata"), dict) else {}
            pre = meta.get("preTokens")
            trigger = meta.get("trigger") if isinstance(meta.get("trigger"), str) else "import"
            self.threads[key].add_boundary(entry_id, entry.get("timestamp"), trigger, pre if isinstance(pre, int) and pre >= 0 else 0)
            return
        if kind == "summary" and self.meta.title is None and isinstance(entry.get("summary"), str):
            self.meta.title = entry["summary"]
        self.notes.skip(kind if isinstance(kind, str) and kind else "unknown")

    def _sidechain_names(self, prompts: list[tuple[str, str]]) -> dict[str, str]:
        """Final keys for the sidechain threads: the Task tool_use that started each, when found.

        ``prompts`` holds (prompt, tool_use id) of the main thread's subagent calls, in order.
        """
        used: set[str] = set()
        names: dict[str, str] = {}
        for key, thread in self.threads.items():
            if key == _MAIN:
                continue
            match = next((tid for text, tid in prompts if tid not in used and text and text == thread.root_text), None)
            if match is not None:
                used.add(match)
                names[key] = match
            else:
                names[key] = thread.agent_id or thread.root_id
        return names

    def finish(self) -> Transcript:
        if self.records_read == 0:
            raise TranscriptError("no entries", file=self.file, expected="Claude Code session entries")
        self.notes.records_read = self.records_read
        self.threads[_MAIN].close()
        self.main_pairs.flag(self.notes, "main thread")
        sidechains: dict[str, list[Message]] = {}
        for key, name in self._sidechain_names(self.main_pairs.prompts).items():
            thread = self.threads[key]
            thread.close()
            pairs = _Pairs()
            msgs = [self._message(row, pairs) for row in thread.done]
            if msgs:
                sidechains[name] = msgs
                pairs.flag(self.notes, f"sidechain {name}")
        if self.meta_entries:
            self.notes.warnings.append(f"kept {self.meta_entries} isMeta user entries (hidden in Claude Code's UI, sent to the model)")
        if not self.main and not sidechains:
            self.notes.warnings.append("no user or assistant entries")
        return Transcript(meta=self.meta, messages=self.main, sidechains=sidechains, notes=self.notes)


def _array_entries(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    doc = read_json(path)
    if not isinstance(doc, list):
        raise TranscriptError("top level is not an array", file=str(path), where="$", expected="an array of entries")
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise TranscriptError(f"entry is {type(entry).__name__}", file=str(path), where=f"$[{i}]", expected="an entry object")
        yield f"$[{i}]", entry


def read_entries(entries: Iterable[tuple[str, dict[str, Any]]], *, file: str = "<entries>") -> Transcript:
    """Build a transcript from ``(where, entry)`` pairs already parsed."""
    importer = _Importer(file)
    for where, entry in entries:
        importer.add(entry, where)
    return importer.finish()


def read(path: Path) -> Transcript:
    path = Path(path)
    if leading_char(path) == "[":
        return read_entries(_array_entries(path), file=str(path))
    # JSONL, the common and large case, feeds the importer straight from the line reader.
    importer = _Importer(str(path))
    add = importer.add
    for line_no, entry in iter_jsonl(path):
        add(entry, f"line {line_no}")
    return importer.finish()


def _entry_score(rec: Any) -> int:
    kind = rec.get("type") if isinstance(rec, dict) else None
    if not isinstance(kind, str) or kind not in ENTRY_TYPES:
        return 0
    if not any(k in rec for k in ("uuid", "parentUuid", "sessionId", "leafUuid")):
        return 0
    return 95 if isinstance(rec.get("message"), dict) else 85


def sniff(probe: Probe) -> int:
    records: list[Any] = []
    if isinstance(probe.document, list):
        records = probe.document[:20]
    elif probe.records:
        records = probe.records
    if records:
        return max(_entry_score(r) for r in records)
    head = probe.head
    if '"parentUuid"' in head and '"sessionId"' in head and '"type"' in head:
        return 70
    return 0


FORMAT = register(Format(name="claude_code", description="Claude Code session JSONL (~/.claude/projects/*/*.jsonl)", sniff=sniff, read=read))
