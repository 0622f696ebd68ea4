"""Qwen Code sessions (QwenLM/qwen-code): ``~/.qwen/projects/<project>/chats/<sessionId>.jsonl``.

Qwen Code, a fork of the Gemini CLI, appends one ``ChatRecord`` per line
(``packages/core/src/services/chatRecordingService.ts``): ``{uuid, parentUuid,
sessionId, timestamp, type, subtype?, cwd, version, gitBranch?, message?,
usageMetadata?, model?, toolCallResult?, systemPayload?}``. ``type`` is ``user``,
``assistant``, ``tool_result`` or ``system``; ``message`` is the Gemini ``Content``
(``{role: "user" | "model", parts}``) exactly as it was sent or received. (The
older ``~/.qwen/tmp/<hash>/chats/session-*.json`` of the Gemini CLI shape is
``lab.formats.editors.gemini``'s.)

The conversation is what Qwen Code itself rebuilds on resume
(``session-api-history.ts``): the chain of records from the file's last record
back through ``parentUuid`` (a rewound or resumed session branches; records off
the chain are counted as ``record (off the chain)``), every record with a
``message`` one entry of the model's history.

Mapping:

* user -> user text; the ``message`` holds what was sent, so an @-command's
  file contents are in it as the parts Qwen Code expanded them into;
  ``inlineData`` / ``fileData`` -> image placeholders (a ``[mime: N bytes]``
  marker for other media).
* assistant -> text; ``thought: true`` parts -> ThinkingBlocks (their
  ``thoughtSignature`` kept as the signature); ``functionCall`` -> ToolUseBlocks
  (``args``). Consecutive assistant records form one assistant message.
  ``usageMetadata`` -> Usage (Gemini counts: ``promptTokenCount`` includes
  ``cachedContentTokenCount``, which is kept apart; thought tokens count as
  output), through ``gemini.cli_usage``; ``model`` -> ``meta.model``.
* tool_result -> ToolResultBlocks, each ``functionResponse`` paired with its call
  by id (else the oldest open call of its name); ``toolCallResult.status``
  ``error`` / ``cancelled``, its ``error``, or an ``error`` in the response make
  it an error. Parts after a response (a file's bytes) join its text. A response
  to no known call is counted, not kept: it would make every later request invalid.
* A call no result answered is answered "[tool call interrupted: no result was
  recorded]" (an error) when the session went on, with a warning; at the end of
  the session it stays unanswered, with a warning.
* ``system`` ``chat_compression`` (``/compress`` and automatic compression):
  ``systemPayload.compressedHistory`` is the history the model got instead, the
  summary turns followed by a copy of the last entries kept (the tail). The tail
  is found among the records before the compression (entries compared by role,
  text and call ids), and a boundary marker (strategy ``qwen_compression``) goes
  before its first record, followed by the summary as user text tagged
  ``summary`` and the model's acknowledgement tagged ``placeholder``: honoured,
  the marker leaves what Qwen Code sent; undone (``lab.replayer.recorded``), the
  raw history. A tail not found (or not starting at a user prompt) puts the
  marker at the compression record, with a warning; the texts of the copy then
  join the summary and the reply. ``info.originalTokenCount``
  / ``newTokenCount`` become the boundary's token counts.
* Counted in ``notes.skipped``, never content: the other system subtypes
  (``system:<subtype>``: slash commands, UI telemetry, at-commands, titles, ...),
  unknown record types (``record:<type>``), subagent records (``record
  (sidechain)``), repeated uuids, unknown parts (``part:<key>``), empty
  messages, and damaged lines (``line (not JSON)``, ``line (not an object)``,
  with a warning naming them; a file with no record left is a
  ``TranscriptError``).
* meta: ``sessionId``, the last record's ``cwd``, the first model named, the
  last ``custom_title``.

A file whose records carry Claude Code's ``message.content`` (or no Qwen
record at all) is a ``TranscriptError``.

Detection: 97 for first records with Qwen's envelope (``uuid``, ``parentUuid``,
``sessionId``, a Qwen record type) and a Gemini ``message`` (``parts``, no
``content``) or a ``tool_result`` record; 90 when they are only system records
with a ``systemPayload``; 75 for a head too large to parse that shows the
envelope around a ``{role, parts}`` message. Any record with Claude Code's
``message.content`` scores 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from ...core.messages import Block, Boundary, ImageBlock, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, as_dict, opt_str, parse_arguments, parse_timestamp, positive_int
from ..anthropic_blocks import base64_size
from .gemini import cli_usage
from ..jsonio import check_file
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "STRATEGY", "RECORD_TYPES", "is_record", "read", "sniff"]

NAME = "qwen_code"
# The strategy of the boundary a Qwen Code chat compression leaves.
STRATEGY = "qwen_compression"
RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_INTERRUPTED = "[tool call interrupted: no result was recorded]"
_ERROR_STATUSES = frozenset({"error", "cancelled", "canceled"})
# Records whose message Qwen Code keeps out of the model's history (session-api-history.ts).
_NOT_SENT = frozenset({"realtime_message", "code_mode_tool_result"})
_MEDIA = ("inlineData", "fileData")
_BOM = b"\xef\xbb\xbf"
_DECODE = msgspec.json.Decoder()


def is_record(rec: Any) -> bool:
    """Whether ``rec`` has the ChatRecord envelope: ``uuid``, ``parentUuid``, ``sessionId`` and a Qwen record type."""
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
        return False
    return rec["type"] in RECORD_TYPES and isinstance(rec.get("uuid"), str) and "parentUuid" in rec and isinstance(rec.get("sessionId"), str)


def _gemini_message(rec: dict[str, Any]) -> bool:
    msg = rec.get("message")
    return isinstance(msg, dict) and isinstance(msg.get("parts"), list) and "content" not in msg


def _claude_message(rec: dict[str, Any]) -> bool:
    msg = rec.get("message")
    return isinstance(msg, dict) and isinstance(msg.get("content"), (str, list))


# -- lines ---------------------------------------------------------------------------------


def _lines(path: Path, notes: ImportNotes) -> list[tuple[int, dict[str, Any]]]:
    """Every record of the file; a damaged line is counted and passed over, as Qwen Code's own reader does."""
    file = str(path)
    out: list[tuple[int, dict[str, Any]]] = []
    damaged: list[int] = []
    try:
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                if n == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if not raw.strip():
                    continue
                notes.records_read += 1
                try:
                    value = _DECODE.decode(raw)
                except (msgspec.DecodeError, RecursionError):
                    try:
                        value = json.loads(raw.decode("utf-8"))
                    except (ValueError, RecursionError):
                        damaged.append(n)
                        continue
                if isinstance(value, dict):
                    out.append((n, value))
                else:
                    notes.skip("line (not an object)")
    except OSError as exc:
        raise TranscriptError(f"cannot read: {exc.strerror or exc}", file=file) from None
    if damaged:
        notes.skip("line (not JSON)", len(damaged))
        shown = ", ".join(map(str, damaged[:5])) + (", ..." if len(damaged) > 5 else "")
        notes.warnings.append(f"{len(damaged)} damaged line(s) passed over (not JSON): line {shown}")
    if not out:
        raise TranscriptError("no JSON records" if damaged else "empty file", file=file, expected="Qwen Code chat records, one JSON object per line")
    return out


# -- the chain -------------------------------------------------------------------------------


def _chain(lines: list[tuple[int, dict[str, Any]]], notes: ImportNotes) -> list[tuple[int, dict[str, Any]]]:
    """The main thread's records from the root to the last one, following ``parentUuid``."""
    by_uuid: dict[str, tuple[int, dict[str, Any]]] = {}
    order: list[str] = []
    for n, rec in lines:
        if not is_record(rec):
            kind = rec.get("type")
            notes.skip(f"record:{kind if isinstance(kind, str) else 'unknown'}")
            continue
        if rec.get("isSidechain") is True:
            # A subagent's rounds: its own conversation, never sent in the main thread.
            notes.skip("record (sidechain)")
            continue
        uid = rec["uuid"]
        if uid in by_uuid:
            notes.skip("record (repeated uuid)")
        else:
            order.append(uid)
        by_uuid[uid] = (n, rec)
    if not order:
        return []
    chain: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    link: str | None = order[-1]
    while link is not None and link not in seen:
        if link not in by_uuid:
            notes.warnings.append(f"record {link!r} is named as a parent but is not in the file: the conversation starts after it")
            break
        seen.add(link)
        chain.append(by_uuid[link])
        link = opt_str(chain[-1][1].get("parentUuid"))
    off = len(order) - len(seen)
    if off:
        notes.skip("record (off the chain)", off)
        notes.warnings.append(f"{off} record(s) off the conversation chain (a rewound or branched session): not imported")
    chain.reverse()
    return chain


# -- compression tails ---------------------------------------------------------------------------


def _sig(content: Any) -> tuple[Any, ...]:
    """What two copies of a history entry share: role, texts and call ids (thoughts and metadata may differ)."""
    c = as_dict(content)
    out: list[Any] = [c.get("role")]
    for p in _parts(c):
        part = as_dict(p)
        if part.get("thought") is True:
            continue
        if isinstance(part.get("text"), str):
            out.append(("t", part["text"]))
        for k in ("functionCall", "functionResponse"):
            if isinstance(part.get(k), dict):
                out.append((k, part[k].get("id"), part[k].get("name")))
    return tuple(out)


def _prompt(rec: dict[str, Any]) -> bool:
    """Whether the record is a user turn of the user's own (no function responses): where a tail may start."""
    msg = as_dict(rec.get("message"))
    return msg.get("role") == "user" and not any(isinstance(as_dict(p).get("functionResponse"), dict) for p in _parts(msg))


def _parts(content: dict[str, Any]) -> list[Any]:
    parts = content.get("parts")
    return parts if isinstance(parts, list) else []


@dataclass
class _Compression:
    written: list[Any]
    # The uuid of the record the kept tail starts at; None puts the marker at the compression record.
    split: str | None


def _plan(chain: list[tuple[int, dict[str, Any]]], notes: ImportNotes) -> dict[str, _Compression]:
    """Each compression record's summary turns and where its kept tail starts, replaying the history as Qwen Code does."""
    history: list[tuple[dict[str, Any] | None, tuple[Any, ...]]] = []
    plans: dict[str, _Compression] = {}
    for _, rec in chain:
        if rec["type"] == "system":
            payload = as_dict(rec.get("systemPayload"))
            compressed = payload.get("compressedHistory")
            if rec.get("subtype") != "chat_compression" or not isinstance(compressed, list):
                continue
            k = 0
            # The written part holds at least the summary; the tail only records the file holds.
            while k < len(compressed) - 1 and k < len(history):
                source, sig = history[-1 - k]
                if source is None or sig != _sig(compressed[-1 - k]):
                    break
                k += 1
            while k and not _prompt(as_dict(history[-k][0])):
                k -= 1
            split = as_dict(history[-k][0]).get("uuid") if k else None
            if k == 0 and len(compressed) > 2:
                notes.warnings.append(
                    f"chat compression {rec['uuid']!r}: the history it kept is not in the records before it; the marker is put at the compression"
                )
            plans[rec["uuid"]] = _Compression(compressed[: len(compressed) - k], split if isinstance(split, str) else None)
            # Later compressions find their tails after this one: what came before is its copy now.
            history = [(None, _sig(c)) for c in compressed]
        elif isinstance(rec.get("message"), dict) and opt_str(rec.get("subtype")) not in _NOT_SENT:
            history.append((rec, _sig(rec["message"])))
    return plans


# -- parts -------------------------------------------------------------------------------------------


def _media(value: Any, inline: bool) -> Block:
    v = as_dict(value)
    mime = opt_str(v.get("mimeType")) or "application/octet-stream"
    if inline:
        size = base64_size(v["data"]) if isinstance(v.get("data"), str) else 0
        return ImageBlock(media_type=mime, size_bytes=size, source="base64") if mime.startswith("image/") else TextBlock(text=f"[{mime}: {size} bytes]")
    uri = opt_str(v.get("fileUri")) or ""
    if mime.startswith("image/"):
        return ImageBlock(media_type=mime, source="url", url=uri) if uri.startswith(("http://", "https://")) else ImageBlock(media_type=mime, source="file")
    return TextBlock(text=f"[file: {mime}, {uri}]" if uri else f"[file: {mime}]")


def _marker(block: Block) -> str:
    if isinstance(block, ImageBlock):
        return f"[image: {block.media_type}, {block.url}]" if block.url else f"[image: {block.media_type}, {block.size_bytes} bytes]"
    return block.text if isinstance(block, TextBlock) else ""


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _response_text(response: dict[str, Any]) -> tuple[str, bool]:
    """A functionResponse's text and whether it reports an error."""
    raw = response.get("response")
    if isinstance(raw, dict) and raw and set(raw) <= {"output", "error"}:
        text = "\n".join(_compact(raw[k]) for k in ("output", "error") if raw.get(k) not in (None, ""))
    else:
        text = "" if raw is None else _compact(raw)
    extra = [_marker(_media(as_dict(p)[k], k == "inlineData")) for p in _parts(response) for k in _MEDIA if isinstance(as_dict(p).get(k), dict)]
    is_error = isinstance(raw, dict) and raw.get("error") not in (None, "", False)
    return "\n".join(t for t in (text, *extra) if t), is_error


def _part_kind(part: dict[str, Any]) -> str:
    for k in ("text", "functionCall", "functionResponse", *_MEDIA):
        if part.get(k) is not None:
            return k
    other = sorted(k for k in part if k not in ("thought", "thoughtSignature"))
    return other[0] if other else "empty"


# -- the session --------------------------------------------------------------------------------------


@dataclass
class _Session:
    notes: ImportNotes
    plans: dict[str, _Compression]
    b: HistoryBuilder = field(init=False)
    # The compression records whose markers go before the record with this uuid.
    splits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Source call id -> canonical id of its latest use.
    calls: dict[str, str] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    title: str | None = None

    def __post_init__(self) -> None:
        self.b = HistoryBuilder(self.notes)

    # -- records ---------------------------------------------------------------------
    def record(self, rec: dict[str, Any], loc: Loc) -> None:
        uid, kind, subtype = rec["uuid"], rec["type"], opt_str(rec.get("subtype"))
        for compression in self.splits.pop(uid, []):
            self.compression(compression)
        if kind == "system":
            self.system(rec, subtype)
            return
        msg = rec.get("message")
        if subtype in _NOT_SENT:
            self.notes.skip(f"{kind}:{subtype}")
            return
        if not isinstance(msg, dict):
            self.notes.skip(f"{kind} (no message)")
            return
        stamp = parse_timestamp(rec.get("timestamp"))
        parts = _parts(msg)
        if msg.get("role") == "model":
            self.assistant(rec, parts, uid, stamp, loc.at("message").at("parts"))
        else:
            self.user(rec, parts, uid, stamp)

    def system(self, rec: dict[str, Any], subtype: str | None) -> None:
        payload = as_dict(rec.get("systemPayload"))
        if subtype == "chat_compression" and rec["uuid"] in self.plans:
            if self.plans[rec["uuid"]].split is None:
                self.compression(rec)
            return
        if subtype == "custom_title" and opt_str(payload.get("customTitle")):
            self.title = payload["customTitle"]
        self.notes.skip(f"system:{subtype}" if subtype else "system (no subtype)")

    def assistant(self, rec: dict[str, Any], parts: list[Any], key: str, stamp: datetime | None, loc: Loc) -> None:
        last = self.b.messages[-1] if self.b.messages else None
        if last is None or last.role != "assistant" or last.tag is not None:
            # A new model turn: calls of the last one that nothing answered are answered now.
            self.flush(moved_on=True)
        blocks: list[Block] = []
        for j, raw in enumerate(parts):
            part = as_dict(raw)
            kind = _part_kind(part)
            signature = opt_str(part.get("thoughtSignature"))
            if kind == "text" and isinstance(part["text"], str):
                if part.get("thought") is True:
                    if part["text"]:
                        blocks.append(ThinkingBlock(thinking=part["text"], signature=signature))
                        signature = None
                elif part["text"]:
                    blocks.append(TextBlock(text=part["text"]))
            elif kind == "functionCall":
                call = as_dict(part["functionCall"])
                name = opt_str(call.get("name"))
                if name is None:
                    self.notes.warnings.append(f"{loc.at(j).where}: a function call without a name: kept as {UNNAMED_TOOL!r}")
                    name = UNNAMED_TOOL
                args = parse_arguments(call.get("args"), self.notes, loc.at(j).at("functionCall").at("args"))
                use = self.b.use(opt_str(call.get("id")), name, args, key=f"{key}.{j}")
                if opt_str(call.get("id")):
                    self.calls[call["id"]] = use.id
                blocks.append(use)
            elif kind in _MEDIA:
                blocks.append(_media(part[kind], kind == "inlineData"))
            else:
                self.notes.skip(f"part:{kind}")
            if signature:
                # A signature on a part that is no thought has no canonical home.
                self.notes.skip("thought_signature")
        model = opt_str(rec.get("model"))
        if model is not None and model not in self.models:
            self.models.append(model)
        if not blocks:
            self.notes.skip("assistant (empty)")
            return
        self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=self.usage(rec.get("usageMetadata")), merge=True)

    @staticmethod
    def usage(raw: Any) -> Usage | None:
        u = as_dict(raw)
        tokens = {
            "input": u.get("promptTokenCount"),
            "output": u.get("candidatesTokenCount"),
            "cached": u.get("cachedContentTokenCount"),
            "thoughts": u.get("thoughtsTokenCount"),
            "tool": u.get("toolUsePromptTokenCount"),
        }
        return cli_usage(tokens)

    def user(self, rec: dict[str, Any], parts: list[Any], key: str, stamp: datetime | None) -> None:
        lead: list[Block] = []
        results: list[tuple[dict[str, Any], list[str]]] = []
        for raw in parts:
            part = as_dict(raw)
            kind = _part_kind(part)
            if kind == "functionResponse":
                results.append((as_dict(part["functionResponse"]), []))
            elif kind == "text" and isinstance(part["text"], str):
                if part.get("thought") is True:
                    self.notes.skip("part:thought (in a user turn)")
                elif results:
                    results[-1][1].append(part["text"])
                elif part["text"]:
                    lead.append(TextBlock(text=part["text"]))
            elif kind in _MEDIA:
                block = _media(part[kind], kind == "inlineData")
                if results:
                    results[-1][1].append(_marker(block))
                else:
                    lead.append(block)
            else:
                self.notes.skip(f"part:{kind}")
        if not results:
            self.flush(moved_on=True)
        for n, (response, extras) in enumerate(results):
            self.answer(rec, response, extras, f"{key}.r{n}", stamp)
        if lead:
            self.b.user_turn(lead, key=key, timestamp=stamp)
        elif not results:
            self.notes.skip(f"{rec['type']} (empty)")

    def answer(self, rec: dict[str, Any], response: dict[str, Any], extras: list[str], key: str, stamp: datetime | None) -> None:
        status = as_dict(rec.get("toolCallResult"))
        rid = opt_str(response.get("id")) or opt_str(status.get("callId"))
        name = opt_str(response.get("name"))
        pending = self.b.pending()
        wanted = self.calls.get(rid) if rid is not None else None
        target = next((c for c, _ in pending if c == wanted), None)
        if target is None:
            target = next((c for c, called in pending if called == name), None)
        if target is None:
            # A result without its call would make every later request invalid: counted, not kept.
            self.notes.skip("functionResponse (unknown call)")
            self.notes.orphan_tool_results.append(rid or name or "?")
            return
        text, is_error = _response_text(response)
        text = "\n".join(t for t in (text, *extras) if t)
        failed = opt_str(status.get("status")) in _ERROR_STATUSES or status.get("error") not in (None, "", False)
        self.b.result(target, text, key=key, is_error=is_error or failed, timestamp=stamp, canonical=True)

    def flush(self, *, moved_on: bool) -> None:
        for canonical, name in self.b.pending():
            if not moved_on:
                self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no result: the session ends with it unanswered")
                continue
            self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no recorded result; answered {_INTERRUPTED!r}")
            self.b.result(canonical, _INTERRUPTED, key=f"{canonical}.interrupted", is_error=True, canonical=True)

    # -- compression -----------------------------------------------------------------
    def compression(self, rec: dict[str, Any]) -> None:
        """The marker of the compression record ``rec``, its summary and the model's reply to it."""
        cid, comp = rec["uuid"], self.plans[rec["uuid"]]
        self.flush(moved_on=True)
        info = as_dict(as_dict(rec.get("systemPayload")).get("info"))
        summary: list[str] = []
        reply: list[str] = []
        for content in comp.written:
            c = as_dict(content)
            parts = _parts(c)
            texts = [p["text"] for p in parts if isinstance(as_dict(p).get("text"), str) and not as_dict(p).get("thought") and p["text"].strip()]
            (reply if c.get("role") == "model" else summary).extend(texts)
            if len(texts) < len(parts):
                # Calls and media in the summary turns: the summary's text is what a replay needs of them.
                self.notes.skip("compressedHistory part (not text)", len(parts) - len(texts))
        boundary = Boundary(
            trigger="import",
            strategy=STRATEGY,
            timestamp=parse_timestamp(rec.get("timestamp")),
            tokens_before=positive_int(info.get("originalTokenCount")),
            tokens_after=positive_int(info.get("newTokenCount")),
            messages_removed=self.b.unmarked(),
        )
        if summary:
            self.b.compaction(boundary, "[Conversation compressed by Qwen Code]", "\n\n".join(summary), key=cid)
        else:
            self.b.boundary(boundary, "[Conversation compressed by Qwen Code]", key=cid)
        if reply:
            self.b.add("assistant", [TextBlock(text="\n\n".join(reply))], key=f"{cid}.reply", tag="placeholder")

    def place(self, chain: list[tuple[int, dict[str, Any]]]) -> None:
        """Note which record each compression's marker goes before."""
        for _, rec in chain:
            comp = self.plans.get(rec["uuid"])
            if comp is not None and comp.split is not None:
                self.splits.setdefault(comp.split, []).append(rec)


def read(path: Path) -> Transcript:
    p = check_file(path)
    file = str(p)
    notes = ImportNotes()
    lines = _lines(p, notes)
    ours = [rec for _, rec in lines if is_record(rec)]
    if not ours or (any(_claude_message(r) for r in ours) and not any(_gemini_message(r) for r in ours)):
        looks = "; its records carry message.content (Claude Code's shape)" if any(_claude_message(r) for r in ours) else ""
        raise TranscriptError(
            f"not a Qwen Code session{looks}",
            file=file,
            where=f"line {lines[0][0]}",
            expected="Qwen Code chat records {uuid, parentUuid, sessionId, type, message: {role, parts}}",
        )
    chain = _chain(lines, notes)
    s = _Session(notes, _plan(chain, notes))
    s.place(chain)
    for line_no, rec in chain:
        s.record(rec, Loc(file, "$", line_no))
    s.flush(moved_on=False)
    messages = s.b.finish()
    if len(s.models) > 1:
        notes.warnings.append(f"models used: {', '.join(s.models)}")
    last = chain[-1][1] if chain else ours[-1]
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=opt_str(last.get("sessionId")) or p.stem,
        title=s.title or "Qwen Code session",
        model=s.models[0] if s.models else None,
        cwd=opt_str(last.get("cwd")),
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


# -- detection ------------------------------------------------------------------------------------

_HEAD_ENVELOPE = re.compile(r'"parentUuid"\s*:')
_HEAD_TYPE = re.compile(r'"type"\s*:\s*"(?:user|assistant|tool_result|system)"')
_HEAD_CONTENT = re.compile(r'"message"\s*:\s*\{\s*"role"\s*:\s*"(?:user|model)"\s*,\s*"parts"\s*:\s*\[')


def _head_records(probe: FileHead) -> Iterator[Any]:
    if probe.records:
        yield from probe.records
    elif isinstance(probe.document, dict):
        yield probe.document


def sniff(probe: FileHead) -> int:
    records = [r for r in _head_records(probe) if is_record(r)]
    if records:
        if any(_claude_message(r) for r in records):
            return 0
        if any(_gemini_message(r) or r["type"] == "tool_result" for r in records):
            return 97
        if all(r["type"] == "system" and isinstance(r.get("systemPayload"), dict) for r in records):
            return 90
        return 0
    if probe.records is None and probe.document is None:
        head = probe.head
        if '"sessionId"' in head and _HEAD_ENVELOPE.search(head) and _HEAD_TYPE.search(head) and _HEAD_CONTENT.search(head):
            return 75
    return 0


FORMAT = Format(
    name=NAME,
    description="Qwen Code sessions (~/.qwen/projects/<project>/chats/<sessionId>.jsonl chat records)",
    sniff=sniff,
    read=read,
)
