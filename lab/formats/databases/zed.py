"""Zed's Agent Panel threads (zed-industries/zed): its ``threads.db`` SQLite file.

Zed keeps every agent thread in ``<data dir>/threads/threads.db``
(``~/.local/share/zed/threads/threads.db`` on Linux,
``~/Library/Application Support/Zed/threads/threads.db`` on macOS), table
``threads`` (``crates/agent/src/db.rs``): ``id`` (the session id), ``summary``
(the title), ``updated_at`` (RFC 3339), ``data_type`` (``"zstd"`` or
``"json"``) and ``data`` (the thread as JSON, zstd-compressed for
``"zstd"``); later columns ``parent_id`` (a subagent's parent thread),
``folder_paths`` (the worktrees, one per line) and ``created_at``.

The JSON has two shapes, told apart by its ``version``:

* agent (``crates/agent/src/legacy_thread.rs``): ``"0.2.0"``, ``"0.1.0"`` or
  none. ``{summary, updated_at, messages, request_token_usage: [usage by
  message index], cumulative_token_usage, detailed_summary_state, model:
  {provider, model}}``; a message ``{id, role, segments, tool_uses,
  tool_results, context, is_hidden}``, a segment ``{type: "text", text}``,
  ``{type: "thinking", text, signature?}`` or ``{type: "RedactedThinking",
  data}``; a message without ``version`` has ``text`` instead of segments. A
  tool result ``{tool_use_id, is_error, content, output}`` sits on the
  assistant message whose call it answers (0.2.0) or on the user message after
  it (0.1.0, no version).
* agent2 / ACP (``DbThread`` of ``db.rs``, ``crates/agent/src/thread.rs``):
  ``"0.3.0"``. ``{title, messages, updated_at, detailed_summary,
  request_token_usage: {user message id: usage}, cumulative_token_usage,
  model}``; a message is serde's externally tagged enum: ``{"User": {id,
  content: [{"Text": s} | {"Mention": {uri, content}} | {"Image": {source,
  size}}]}}``, ``{"Agent": {content: [{"Text": s} | {"Thinking": {text,
  signature}} | {"RedactedThinking": s} | {"ToolUse": {id, name, input,
  raw_input}}], tool_results: {id: {tool_use_id, tool_name, is_error, content,
  output}}}}`` or ``"Resume"``. A newer version is read by this shape, with a
  warning.

Mapping (what Zed sends the model, ``Message::to_request``):

* user -> user text; a mention -> ``@name`` where it stands and, when it
  carries content (a file, symbol, selection, fetched page...), one text
  block with it after the user's words, as Zed appends attached context; an
  agent-1 message's ``context`` (its attached files) -> a text block ahead of
  its words; images -> image placeholders. ``Resume`` -> "Continue where you
  left off", the words Zed sends for it.
* assistant -> text, thinking blocks (``signature`` kept), tool calls
  (``input``, else the ``raw_input`` text parsed). Tool results follow their
  call: errors flagged, text content as text (Zed sends
  "<Tool returned an empty string>" for an empty one), image parts as
  ``[image: ...]`` markers. Zed leaves a call without a result out of the
  request: mid-thread it is dropped with a warning (counted
  ``tool_use:no result``); at the end it is left unanswered, with a warning.
* usage: agent-1's ``request_token_usage[i]`` on the assistant message ``i``;
  agent2's per user message on the turn's last assistant message
  (``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``). ``cumulative_token_usage`` is a warning.
* meta: the row's ``id``, the title (``title`` / ``summary``, else the row's
  ``summary``), ``model.model``, the first ``folder_paths`` line as cwd.
  Messages carry no times.
* Not a compaction: Zed's detailed summary ("new thread from summary") starts
  another thread; one present is named in a warning, never a boundary.
* Counted in ``notes.skipped``, never content: redacted thinking, system
  messages (Zed's upgrade drops them), unknown roles, segments, content and
  message kinds, empty messages.

Rows: a ``data_type`` other than json/zstd, a damaged zstd blob, data
larger than ``MAX_DECOMPRESSED`` once decompressed (a zip-bomb row cannot
eat memory), data that is not JSON or no thread object is a damaged
thread: passed over (counted ``thread:<why>``) when choosing the default,
a ``TranscriptError`` naming it when asked for by id.

Sessions: ``read_db(path, session_id=None)`` reads one thread; without an
id, the most recently updated one with messages that is no subagent's (no
``parent_id``; any, when all are), with a warning naming how many the file
holds and how to pick another. ``list_sessions(path)`` lists them all
(newest first, empty and damaged ones too); the same through
``lab.formats.sessions(path)`` / ``load(path, session=ID)`` and
``python -m lab sessions PATH``.

Safety: opened read-only exactly as ``goose_db`` opens its file
(``sqlite_store``: ``mode=ro``, ``immutable`` when no ``-wal`` / ``-journal``
exists); only SELECTs run.

Detection: 100 for a SQLite file with a ``threads`` table holding Zed's
columns; 0 otherwise (``goose_db``'s 40 still answers for other SQLite
files).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from ...core.messages import Block, ImageBlock, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from .. import session_pick
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, as_dict, opt_str, parse_arguments, parse_timestamp, token_count
from ..jsonio import check_file, gc_paused
from ..registry import Format, SessionInfo
from .sqlite_store import SqliteStore, column_names, schema_sniff, select, table_names

__all__ = ["FORMAT", "NAME", "MAX_DECOMPRESSED", "AGENT2_VERSION", "STORE", "from_thread", "list_sessions", "read_db", "sniff"]

NAME = "zed"
# Far above any real thread (Zed keeps whole tool outputs, still megabytes), far below what would hurt.
MAX_DECOMPRESSED = 512 * 1024 * 1024
# DbThread::VERSION; agent-1's SerializedThread versions are below it.
AGENT2_VERSION = "0.3.0"
_LEGACY_VERSIONS = ("0.1.0", "0.2.0")
_TABLE = "threads"
_REQUIRED = ("id", "summary", "updated_at", "data_type", "data")
_OPTIONAL = ("parent_id", "folder_paths", "created_at")
_EXPECTED = "Zed's threads.db (table threads: id, summary, updated_at, data_type, data)"
_HOW = "pick one with --session ID or lab.formats.databases.zed.read_db(path, session_id=...) (all ids: `python -m lab sessions PATH`)"
# What Zed sends in place of a Resume message and of an empty tool result (thread.rs).
_RESUME = "Continue where you left off"
_EMPTY_RESULT = "<Tool returned an empty string>"
_CHUNK = 1 << 20



class _Damaged(Exception):
    """A row whose data cannot be read as a thread; ``why`` is the counted reason."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


# -- the database --------------------------------------------------------------------------------



def _optional_columns(conn: sqlite3.Connection, file: str) -> tuple[str, ...]:
    if _TABLE not in table_names(conn):
        raise TranscriptError("a SQLite database, but not Zed's threads database: no table threads", file=file, expected=_EXPECTED)
    columns = column_names(conn, _TABLE)
    lacking = [c for c in _REQUIRED if c not in columns]
    if lacking:
        raise TranscriptError(f"a threads table of an unknown schema: no column {', '.join(lacking)}", file=file, expected=_EXPECTED)
    return tuple(c for c in _OPTIONAL if c in columns)


@dataclass
class _Row:
    rowid: int
    id: str
    summary: str | None
    updated_at: str | None
    parent_id: str | None
    folder_paths: str | None


def _rows(conn: sqlite3.Connection, optional: tuple[str, ...]) -> list[_Row]:
    """Every thread row (not its data), newest update first (ties: the later row first)."""
    # Column names come from the fixed lists above, never from the file.
    cols = "".join(f', "{c}"' for c in optional)
    out: list[_Row] = []
    for row in select(conn, f'SELECT rowid, "id", "summary", "updated_at"{cols} FROM {_TABLE}'):
        rec = dict(zip(("rowid", "id", "summary", "updated_at", *optional), row, strict=True))
        if rec["id"] is None:
            continue
        out.append(
            _Row(
                rowid=int(rec["rowid"]),
                id=str(rec["id"]),
                summary=opt_str(rec["summary"]),
                updated_at=opt_str(rec["updated_at"]),
                parent_id=opt_str(rec.get("parent_id")),
                folder_paths=opt_str(rec.get("folder_paths")),
            )
        )
    floor = datetime.min.replace(tzinfo=UTC)
    out.sort(key=lambda r: (parse_timestamp(r.updated_at) or floor, r.rowid), reverse=True)
    return out


def _data(conn: sqlite3.Connection, rowid: int) -> tuple[Any, Any]:
    row = select(conn, f'SELECT "data_type", "data" FROM {_TABLE} WHERE rowid = ?', (rowid,)).fetchone()
    return (row[0], row[1]) if row else (None, None)


# -- one row's data ------------------------------------------------------------------------------


def _unzstd(blob: bytes, limit: int) -> bytearray:
    out = bytearray()
    try:
        # Read in bounded chunks: a small blob can claim gigabytes, and is refused once past the limit.
        reader = zstandard.ZstdDecompressor().stream_reader(blob, read_across_frames=True)
        while chunk := reader.read(_CHUNK):
            out += chunk
            if len(out) > limit:
                raise _Damaged(f"data (more than {limit} bytes once decompressed)")
    except zstandard.ZstdError:
        raise _Damaged("data (damaged zstd)") from None
    # Handed to the JSON parser as it is: a copy would double the peak for a large thread.
    return out


def _decode(data_type: Any, data: Any, limit: int | None = None) -> dict[str, Any]:
    """A row's ``data`` as the thread object; ``_Damaged`` (its reason) when it is none. ``limit``: ``MAX_DECOMPRESSED``."""
    limit = MAX_DECOMPRESSED if limit is None else limit
    if data_type == "zstd":
        if not isinstance(data, bytes):
            raise _Damaged("data (zstd row without a blob)")
        raw: bytes | bytearray = _unzstd(data, limit)
    elif data_type == "json":
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        if not isinstance(raw, bytes):
            raise _Damaged("data (json row without text)")
        if len(raw) > limit:
            raise _Damaged(f"data (more than {limit} bytes)")
    else:
        raise _Damaged(f"data_type {str(data_type)[:20]!r} (unknown)")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise _Damaged("data (not JSON)") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise _Damaged("data (no thread object with messages)")
    return doc


# -- the thread as a transcript -------------------------------------------------------------------


def _usage(raw: Any) -> Usage | None:
    u = as_dict(raw)
    usage = Usage(
        input_tokens=token_count(u.get("input_tokens")),
        output_tokens=token_count(u.get("output_tokens")),
        cache_read_tokens=token_count(u.get("cache_read_input_tokens")),
        cache_write_tokens=token_count(u.get("cache_creation_input_tokens")),
    )
    return usage if usage.total else None


def _image(raw: Any) -> ImageBlock:
    # LanguageModelImage: {source: base64 PNG, size}; Zed sends it as a PNG data URL.
    source = as_dict(raw).get("source")
    return ImageBlock(media_type="image/png", size_bytes=len(source) * 3 // 4 if isinstance(source, str) else 0, source="base64")


def _variant(item: Any) -> tuple[str | None, Any]:
    """A serde externally tagged enum value: ``{"Kind": value}`` -> (kind, value); a unit variant is its name."""
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict) and len(item) == 1:
        ((kind, value),) = item.items()
        return str(kind), value
    return None, item


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _result_ids(results: list[Any]) -> set[str]:
    return {r["tool_use_id"] for r in results if isinstance(r, dict) and isinstance(r.get("tool_use_id"), str)}


def _mention_label(uri: Any) -> str:
    """What a MentionUri names: a file's path, a symbol's name, a URL ("Kind" when nothing better)."""
    if isinstance(uri, str):
        return uri
    kind, value = _variant(uri)
    v = as_dict(value)
    for key in ("name", "abs_path", "path", "url", "file_path", "base_ref"):
        text = opt_str(v.get(key))
        if text is not None:
            return text
    return kind or "mention"


class _Thread:
    """One thread's messages, turned into the history Zed sends."""

    def __init__(self, thread_id: str, notes: ImportNotes, file: str | None) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.loc = Loc(file, f"threads[id={thread_id}].messages")

    # -- tool results ----------------------------------------------------------------------------
    def _result_text(self, content: Any) -> str:
        """LanguageModelToolResultContent (or the list newer Zed keeps) as the text the model saw."""
        parts = content if isinstance(content, list) else [content]
        texts: list[str] = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
                continue
            d = {str(k).lower(): v for k, v in as_dict(part).items()}
            if isinstance(d.get("text"), str):
                texts.append(d["text"])
            elif "image" in d or "source" in d:
                image = _image(d.get("image", d))
                texts.append(f"[image: {image.media_type}, {image.size_bytes} bytes]")
            elif part is not None:
                self.notes.skip("tool_result:content (unknown type)")
        return "".join(texts)

    def _results(self, results: list[Any], key: str) -> None:
        for n, raw in enumerate(results):
            r = as_dict(raw)
            tid = opt_str(r.get("tool_use_id"))
            if tid is None:
                self.notes.skip("tool_result:no tool_use_id")
                continue
            text = self._result_text(r.get("content")) or _EMPTY_RESULT
            self.b.result(tid, text, key=f"{key}.r{n}", is_error=r.get("is_error") is True)

    def _use(self, source_id: Any, name: Any, args: Any, at: Loc, key: str, answered: set[str], last: bool) -> Block | None:
        """The call as a block; None for one without a result that a later message follows (Zed never sends it)."""
        tool = opt_str(name)
        sid = opt_str(source_id)
        if (sid is None or sid not in answered) and not last:
            self.notes.skip("tool_use:no result")
            self.notes.warnings.append(f"{at.where}: tool call {sid!r} ({tool}) has no result: left out, as Zed leaves it out of its requests")
            return None
        if tool is None:
            self.notes.warnings.append(f"{at.where}: a tool call without a name: kept as {UNNAMED_TOOL!r}")
            tool = UNNAMED_TOOL
        return self.b.use(sid, tool, parse_arguments(args, self.notes, at.at("input")), key=key)

    def _assistant(self, blocks: list[Block], key: str, usage: Usage | None) -> None:
        if blocks:
            self.b.add("assistant", blocks, key=key, usage=usage)
        else:
            # Zed sends no empty assistant message; its usage, if any, belongs to no message that was sent.
            self.notes.skip("message:empty")

    def _user(self, blocks: list[Block], key: str) -> None:
        if blocks:
            self.b.user_turn(blocks, key=key)
        else:
            self.notes.skip("message:empty")

    # -- agent-1 (legacy_thread.rs) -------------------------------------------------------------------
    def _segments(self, msg: dict[str, Any]) -> list[Block]:
        if "segments" not in msg and isinstance(msg.get("text"), str):
            # Before versions: one text per message.
            return [TextBlock(text=msg["text"])] if msg["text"].strip() else []
        blocks: list[Block] = []
        segments = msg.get("segments")
        for seg in segments if isinstance(segments, list) else []:
            s = as_dict(seg)
            kind = opt_str(s.get("type"))
            self.notes.records_read += 1
            if kind == "text" and isinstance(s.get("text"), str):
                if s["text"].strip():
                    blocks.append(TextBlock(text=s["text"]))
            elif kind == "thinking" and isinstance(s.get("text"), str):
                blocks.append(ThinkingBlock(thinking=s["text"], signature=opt_str(s.get("signature"))))
            elif kind == "RedactedThinking":
                self.notes.skip("segment:RedactedThinking (redacted thinking)")
            else:
                self.notes.skip(f"segment:{(kind or 'unknown')[:40]} (unknown type)")
        return blocks

    def legacy(self, doc: dict[str, Any]) -> None:
        messages = [as_dict(m) for m in doc["messages"]]
        usages = _list(doc.get("request_token_usage"))
        for ix, msg in enumerate(messages):
            at = self.loc.at(ix)
            key = f"m{ix}"
            self.notes.records_read += 1
            role = msg.get("role")
            results = _list(msg.get("tool_results"))
            if role == "user":
                # 0.1.0 keeps results on the user message after their call: they come before its words.
                self._results(results, key)
                context = msg.get("context")
                head: list[Block] = [TextBlock(text=context)] if isinstance(context, str) and context.strip() else []
                blocks = head + self._segments(msg)
                if blocks or not results:
                    self._user(blocks, key)
            elif role == "assistant":
                after = messages[ix + 1] if ix + 1 < len(messages) else {}
                answered = _result_ids(results) | (_result_ids(_list(after.get("tool_results"))) if after.get("role") == "user" else set())
                blocks = self._segments(msg)
                for n, u in enumerate(_list(msg.get("tool_uses"))):
                    use = as_dict(u)
                    block = self._use(use.get("id"), use.get("name"), use.get("input"), at.at("tool_uses").at(n), f"{key}.{n}", answered, ix == len(messages) - 1)
                    blocks += [block] if block is not None else []
                self._assistant(blocks, key, _usage(usages[ix]) if ix < len(usages) else None)
                self._results(results, key)
            elif role == "system":
                self.notes.skip("message:system (not sent)")
            else:
                self.notes.skip(f"role:{str(role)[:40]} (unknown role)")

    # -- agent2 (db.rs DbThread) ------------------------------------------------------------------------
    def _user_content(self, content: Any) -> list[Block]:
        blocks: list[Block] = []
        context: list[Block] = []
        for item in content if isinstance(content, list) else []:
            kind, value = _variant(item)
            self.notes.records_read += 1
            if kind == "Text" and isinstance(value, str):
                if value.strip():
                    blocks.append(TextBlock(text=value))
            elif kind == "Mention":
                m = as_dict(value)
                label = _mention_label(m.get("uri"))
                blocks.append(TextBlock(text=f"@{label}"))
                text = m.get("content")
                if isinstance(text, str) and text.strip():
                    context.append(TextBlock(text=f"{label}\n\n{text}\n"))
            elif kind == "Image":
                blocks.append(_image(value))
            else:
                self.notes.skip(f"content:{(kind or type(item).__name__)[:40]} (unknown type)")
        return blocks + context

    def _agent_content(self, content: Any, at: Loc, key: str, answered: set[str], last: bool) -> list[Block]:
        blocks: list[Block] = []
        for n, item in enumerate(content if isinstance(content, list) else []):
            kind, value = _variant(item)
            self.notes.records_read += 1
            if kind == "Text" and isinstance(value, str):
                if value.strip():
                    blocks.append(TextBlock(text=value))
            elif kind == "Thinking" and isinstance(as_dict(value).get("text"), str):
                blocks.append(ThinkingBlock(thinking=value["text"], signature=opt_str(value.get("signature"))))
            elif kind == "RedactedThinking":
                self.notes.skip("content:RedactedThinking (redacted thinking)")
            elif kind == "ToolUse":
                use = as_dict(value)
                # raw_input is the model's text, kept for when input (its parse) is missing.
                args = use.get("input") if use.get("input") is not None else use.get("raw_input")
                block = self._use(use.get("id"), use.get("name"), args, at.at(n), f"{key}.{n}", answered, last)
                blocks += [block] if block is not None else []
            else:
                self.notes.skip(f"content:{(kind or type(item).__name__)[:40]} (unknown type)")
        return blocks

    def agent2(self, doc: dict[str, Any]) -> None:
        usages = as_dict(doc.get("request_token_usage"))
        # A turn's usage is its latest request's: it goes on the turn's last assistant message, if it has one.
        turn_usage: Usage | None = None
        answered_turn = False
        messages = doc["messages"]
        for ix, raw in enumerate(messages):
            kind, value = _variant(raw)
            key = f"m{ix}"
            self.notes.records_read += 1
            if kind == "User" and turn_usage is not None and answered_turn:
                self.b.set_last_usage(turn_usage)
            if kind == "User":
                user = as_dict(value)
                turn_usage, answered_turn = _usage(usages.get(user["id"])) if isinstance(user.get("id"), str) else None, False
                self._user(self._user_content(user.get("content")), key)
            elif kind == "Resume":
                # Zed keys usage by the user message that started the turn; a resume goes on with it.
                self._user([TextBlock(text=_RESUME)], key)
            elif kind == "Agent":
                agent = as_dict(value)
                at = self.loc.at(ix).at("Agent")
                raw_results = agent.get("tool_results")
                # The map's key is the call id; a value that lost its own tool_use_id still answers it.
                results = (
                    [{"tool_use_id": str(k), **v} if isinstance(v, dict) and not opt_str(v.get("tool_use_id")) else v for k, v in raw_results.items()]
                    if isinstance(raw_results, dict)
                    else _list(raw_results)
                )
                answered = _result_ids(results)
                blocks = self._agent_content(agent.get("content"), at.at("content"), key, answered, ix == len(messages) - 1)
                self._assistant(blocks, key, None)
                answered_turn = answered_turn or bool(blocks)
                self._results(results, key)
            else:
                self.notes.skip(f"message:{(kind or type(raw).__name__)[:40]} (unknown type)")
        if turn_usage is not None and answered_turn:
            self.b.set_last_usage(turn_usage)

    def finish(self) -> list[Any]:
        for canonical, name in self.b.pending():
            self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no result: the thread ends with it unanswered")
        return self.b.finish()


def _is_agent2(doc: dict[str, Any]) -> bool:
    version = doc.get("version")
    if version == AGENT2_VERSION:
        return True
    if version in _LEGACY_VERSIONS:
        return False
    # No or an unknown version: the messages say which (agent2's are tagged enums, agent-1's have a role).
    head = [m for m in doc["messages"][:20] if m is not None]
    return bool(head) and sum(_variant(m)[0] in ("User", "Agent", "Resume") for m in head) * 2 > len(head)


def _summary_warning(doc: dict[str, Any], notes: ImportNotes) -> None:
    state = doc.get("detailed_summary_state")
    summary = doc.get("detailed_summary") if "detailed_summary" in doc else as_dict(as_dict(state).get("Generated")).get("text")
    if isinstance(summary, str) and summary.strip():
        notes.warnings.append(
            f"the thread holds a detailed summary ({len(summary)} characters) Zed makes for a new thread started from it; "
            "it is no part of this thread's messages"
        )


def _cumulative_warning(doc: dict[str, Any], notes: ImportNotes) -> None:
    usage = _usage(doc.get("cumulative_token_usage"))
    if usage is not None:
        notes.warnings.append(
            f"Zed recorded usage for the whole thread: {usage.input_tokens} input, {usage.output_tokens} output, "
            f"{usage.cache_read_tokens} cache read, {usage.cache_write_tokens} cache write tokens"
        )


def from_thread(
    doc: dict[str, Any], *, thread_id: str, notes: ImportNotes | None = None, file: str | None = None, title: str | None = None, cwd: str | None = None
) -> Transcript:
    """A decoded thread (``_decode``) as a transcript; ``title`` / ``cwd`` from its row when the JSON lacks them."""
    notes = notes if notes is not None else ImportNotes()
    version = doc.get("version")
    agent2 = _is_agent2(doc)
    if version is not None and version != AGENT2_VERSION and version not in _LEGACY_VERSIONS:
        notes.warnings.append(f"Zed thread version {str(version)[:20]!r} is not one this reader knows; read as {'agent2' if agent2 else 'agent-1'} thread")
    t = _Thread(thread_id, notes, file)
    if agent2:
        t.agent2(doc)
    else:
        t.legacy(doc)
    messages = t.finish()
    _summary_warning(doc, notes)
    _cumulative_warning(doc, notes)
    model = opt_str(as_dict(doc.get("model")).get("model"))
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=thread_id,
        title=opt_str(doc.get("title")) or opt_str(doc.get("summary")) or title,
        model=model,
        cwd=cwd,
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


# -- choosing and listing -----------------------------------------------------------------------------


def _cwd(row: _Row) -> str | None:
    # PathList's serialization: the worktree paths, one per line.
    return next((line for line in (row.folder_paths or "").splitlines() if line.strip()), None)


def _info(row: _Row, count: int | None) -> SessionInfo:
    # A damaged thread (its data cannot be read) lists with no messages, as "damaged": reading it says why.
    return SessionInfo(
        id=row.id, title=row.summary, messages=count or 0, updated=session_pick.iso_time(row.updated_at), format=NAME,
        kind="damaged" if count is None else "subagent" if row.parent_id else None,
    )


def _sessions(conn: sqlite3.Connection, path: Path) -> list[SessionInfo]:
    out: list[SessionInfo] = []
    with gc_paused():
        for row in _rows(conn, _optional_columns(conn, str(path))):
            try:
                count: int | None = len(_decode(*_data(conn, row.rowid))["messages"])
            except _Damaged:
                count = None
            out.append(_info(row, count))
    return out


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The threads of a Zed database, most recently updated first (empty and damaged ones too)."""
    return STORE.list_sessions(path)


def _chosen(conn: sqlite3.Connection, rows: list[_Row], session_id: str | None, file: str, notes: ImportNotes) -> tuple[_Row, dict[str, Any]]:
    if session_id is not None:
        row = next((r for r in rows if r.id == session_id), None)
        if row is None:
            raise session_pick.unknown_session(session_id, [r.id for r in rows], file=file, what="this Zed threads database", how=_HOW)
        try:
            doc = _decode(*_data(conn, row.rowid))
        except _Damaged as exc:
            raise TranscriptError(f"Zed thread {session_id!r} cannot be read: {exc.why}", file=file, expected="a json or zstd row holding a thread") from None
        if not doc["messages"]:
            raise TranscriptError(f"Zed thread {session_id!r} has no messages", file=file)
        return row, doc
    # Newest first, main threads before subagents' (they ran inside their parent's thread).
    ordered = [r for r in rows if not r.parent_id] + [r for r in rows if r.parent_id]
    for row in ordered:
        try:
            doc = _decode(*_data(conn, row.rowid))
        except _Damaged as exc:
            notes.skip(f"thread:{exc.why}")
            notes.warnings.append(f"Zed thread {row.id!r} passed over: {exc.why}")
            continue
        if doc["messages"]:
            if len(rows) > 1:
                others = ", ".join(repr(r.id) for r in rows if r is not row)
                shown = others if len(rows) <= 4 else ", ".join(repr(r.id) for r in [r for r in rows if r is not row][:3]) + ", ..."
                notes.warnings.append(
                    f"this Zed database holds {len(rows)} threads; read the most recently updated with messages, "
                    f"{row.id!r} ({row.summary or 'untitled'}); others: {shown}; {_HOW}"
                )
            return row, doc
    raise TranscriptError(f"this Zed database holds {len(rows)} thread(s), none with readable messages", file=file, expected="a thread with messages")


def read_db(path: str | Path, session_id: str | None = None) -> Transcript:
    """One thread of a Zed threads.db as a transcript: ``session_id``, else the most recently updated."""
    p = check_file(path)
    file = str(p)
    notes = ImportNotes()
    with gc_paused(), STORE.connect(p) as conn:
        rows = _rows(conn, _optional_columns(conn, file))
        row, doc = _chosen(conn, rows, session_id, file, notes)
    return from_thread(doc, thread_id=row.id, notes=notes, file=file, title=row.summary, cwd=_cwd(row))


sniff = schema_sniff({_TABLE: _REQUIRED})


STORE = SqliteStore(format=NAME, what="Zed's threads.db", expected=_EXPECTED, rows=_sessions, read=read_db, label="Zed's threads database")


FORMAT = Format(
    name=NAME,
    description="Zed agent threads (threads.db: the most recently updated thread, or one by id)",
    sniff=sniff,
    read=read_db,
    sessions=STORE.source(),
    kinds=frozenset({"sqlite"}),
    # More specific: goose_db claims any SQLite file, as a guess.
    more_specific_than=("goose_db",),
)
