"""Gemini transcripts: Gemini API request bodies and the Gemini CLI's files.

Accepted documents:

* a ``GenerateContentRequest`` body: ``{"contents": [...], "systemInstruction":
  {...}, "tools": [{"functionDeclarations": [...]}]}`` as the REST API spells
  it, or the snake_case dump of the Python SDK (google-genai):
  ``{"model", "contents", "config": {"system_instruction", "tools"}}``;
* a bare list of ``Content`` (``{"role": "user" | "model", "parts": [...]}``):
  the Gemini CLI's ``/chat share <file>.json`` and its older ``/chat save``
  checkpoints;
* a ``/chat save`` checkpoint ``{"history": [...], "authType": ...}``, and a
  ``/restore`` checkpoint ``{"clientHistory": [...], "toolCall": ..., ...}``
  (its ``history`` holds UI items, so ``clientHistory`` is read);
* a Gemini CLI chat recording (``~/.gemini/tmp/<project>/chats/session-*``):
  the older single JSON document ``{sessionId, projectHash, startTime,
  lastUpdated, messages: [...]}``, or the newer JSONL log whose first line is
  that header without messages, followed by message records (a record whose
  ``id`` was seen before replaces it in place), ``{"$set": {...}}`` metadata
  updates (a ``messages`` list replaces the history) and ``{"$rewindTo": id}``
  (drops that message and every later one).

Contents map through ``gemini_parts``: role ``model`` -> assistant, ``user``
(and the older ``function``) -> user turns whose function responses become
tool results; a ``systemInstruction`` -> a system message; function
declarations -> ``Transcript.tools``.

Chat recording messages: ``user`` -> user turn; ``gemini`` -> an assistant
message of its ``thoughts`` (subject and description, as ThinkingBlocks), its
content parts and one tool_use per ``toolCalls`` entry, whose ``result``
(functionResponse parts) follows as tool results (``status: error`` marks an
error); ``tokens`` -> Usage (prompt tokens include the cached ones, which are
kept apart; thought tokens count as output); ``model`` -> the transcript's
model. ``info`` / ``warning`` / ``error`` messages are the CLI talking to the
user, not the model: they are skipped and counted, as are unknown types.

Detection (``sniff``): 95 for any shape above recognised from its parsed
value; for a document too large to parse while probing, 90 when its head
shows a CLI header, a ``clientHistory`` or contents with a model turn or a
function call, 85 for contents alone.
"""

from __future__ import annotations

import re
from itertools import chain
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..core.messages import Block, ImportNotes, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ..errors import TranscriptError
from ._build import HistoryBuilder, Loc, need_dict, parse_timestamp
from .gemini_parts import ContentReader, declarations, field, key_of, system_blocks
from .jsonio import iter_jsonl, leading_char, read_json
from .registry import Format, Probe, register

__all__ = ["FORMAT", "NAME", "read", "from_document", "from_contents", "from_session", "replay_log", "cli_usage", "sniff"]

NAME = "gemini"

# Roles of user turns: ``function`` is how the API first spelled turns of function responses.
_USER_ROLES = ("user", "function", "tool")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def cli_usage(tokens: Any) -> Usage | None:
    """The CLI's ``tokens`` summary (input, output, cached, thoughts, tool, total) as Usage."""
    if not isinstance(tokens, dict):
        return None
    prompt, cached = _int(tokens.get("input")), _int(tokens.get("cached"))
    output = _int(tokens.get("output")) + _int(tokens.get("thoughts"))
    tool = _int(tokens.get("tool"))
    if not (prompt or cached or output or tool):
        return None
    return Usage(input_tokens=max(0, prompt - cached) + tool, output_tokens=output, cache_read_tokens=min(cached, prompt) if prompt else cached)


# -- Gemini API contents ---------------------------------------------------------------


def from_contents(
    contents: list[Any],
    *,
    file: str | None = None,
    path: str = "$",
    system: Any = None,
    system_path: str = "$.systemInstruction",
    tools: Any = None,
    meta: TranscriptMeta | None = None,
) -> Transcript:
    """Convert a list of Gemini ``Content`` found at JSON ``path`` in ``file`` (``system`` found at ``system_path``)."""
    t = Transcript(meta=meta or TranscriptMeta(source_format=NAME, source_path=file))
    b = HistoryBuilder(t.notes)
    r = ContentReader(b)
    base = Loc(file, path)
    sys_blocks = system_blocks(system, Loc(file, system_path), t.notes)
    if sys_blocks:
        b.add("system", sys_blocks, key="system")
    for i, content in enumerate(contents):
        loc, key = base.at(i), f"c{i}"
        if isinstance(content, str):  # the SDK accepts plain strings as user turns
            r.user_turn(content, loc, key)
            continue
        content = need_dict(content, loc, "content")
        role = content.get("role", "user")
        if role is None or role in _USER_ROLES:
            r.user_turn(content.get("parts"), loc.at("parts"), key)
        elif role == "model":
            blocks = r.model_blocks(content.get("parts"), loc.at("parts"), key)
            if blocks:
                b.add("assistant", blocks, key=key)
            else:
                t.notes.skip("empty turn")
        else:
            t.notes.skip(f"role:{role if isinstance(role, str) else type(role).__name__}")
    t.messages = b.finish()
    t.tools = declarations(tools, t.notes)
    t.notes.records_read = len(contents)
    return t


def _content_like(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("parts"), list) and value.get("role") in (None, "user", "model", "function", "tool")


# -- Gemini CLI chat recordings ----------------------------------------------------------


def _thoughts(raw: Any) -> list[Block]:
    blocks: list[Block] = []
    for th in raw if isinstance(raw, list) else []:
        if isinstance(th, dict):
            text = "\n".join(s for s in (_str(th.get("subject")), _str(th.get("description"))) if s)
            if text:
                blocks.append(ThinkingBlock(thinking=text))
    return blocks


class _Recording:
    """One chat recording being converted, message by message."""

    def __init__(self, t: Transcript) -> None:
        self.t = t
        self.b = HistoryBuilder(t.notes)
        self.r = ContentReader(self.b)
        self.count = 0

    def message(self, m: Any, loc: Loc) -> None:
        m = need_dict(m, loc, "message")
        n, self.count = self.count, self.count + 1
        key = _str(m.get("id")) or f"m{n}"
        kind = m.get("type")
        stamp = parse_timestamp(m.get("timestamp"))
        if kind == "user":
            self.r.user_turn(m.get("content"), loc.at("content"), key, stamp)
        elif kind == "gemini":
            self._gemini(m, loc, key)
        else:
            self.t.notes.skip(f"message:{kind}" if isinstance(kind, str) else "message:untyped")

    def _gemini(self, m: dict[str, Any], loc: Loc, key: str) -> None:
        stamp = parse_timestamp(m.get("timestamp"))
        calls = m.get("toolCalls")
        if calls is not None and not isinstance(calls, list):
            raise loc.at("toolCalls").error(f"toolCalls is a {type(calls).__name__}", expected="a list of tool calls")
        calls = [need_dict(c, loc.at("toolCalls").at(i), "tool call") for i, c in enumerate(calls or [])]
        recorded = frozenset(s for c in calls for s in (_str(c.get("id")), _str(c.get("name"))) if s)
        blocks = _thoughts(m.get("thoughts"))
        blocks += self.r.model_blocks(m.get("content"), loc.at("content"), key, recorded=recorded)
        uses = [self.r.use(c, loc.at("toolCalls").at(i), f"{key}.t{i}") for i, c in enumerate(calls)]
        if not blocks and not uses:
            self.t.notes.skip("message:gemini (empty)")
            return
        self.b.add("assistant", [*blocks, *uses], key=key, timestamp=stamp, usage=cli_usage(m.get("tokens")))
        if self.t.meta.model is None and _str(m.get("model")):
            self.t.meta.model = m["model"]
        for i, (call, use) in enumerate(zip(calls, uses)):
            if call.get("result") is None:
                continue  # still running, or cancelled before it ran: the builder notes it unanswered
            text, is_error = self.r.result_text(call["result"], loc.at("toolCalls").at(i).at("result"))
            failed = call.get("status") == "error"
            self.r.resolve(use.id, text, is_error=is_error or failed, key=f"{key}.t{i}", stamp=parse_timestamp(call.get("timestamp")) or stamp)


def _session_meta(header: dict[str, Any], file: str | None) -> TranscriptMeta:
    summary = _str(header.get("summary"))
    title = summary or ("Gemini CLI subagent session" if header.get("kind") == "subagent" else "Gemini CLI session")
    return TranscriptMeta(source_format=NAME, source_path=file, session_id=_str(header.get("sessionId")) or None, title=title)


def from_session(
    header: dict[str, Any], messages: Iterable[tuple[Any, Loc]], *, file: str | None = None, notes: ImportNotes | None = None
) -> Transcript:
    """Convert chat recording messages (each with its location) under a session ``header``."""
    t = Transcript(meta=_session_meta(header, file), notes=notes or ImportNotes())
    rec = _Recording(t)
    for m, loc in messages:
        rec.message(m, loc)
    t.messages = rec.b.finish()
    t.notes.records_read = rec.count
    return t


def replay_log(records: Iterable[tuple[int, dict[str, Any]]], notes: ImportNotes, file: str | None) -> tuple[dict[str, Any], list[tuple[Any, Loc]]]:
    """Replay a JSONL chat recording to (header, messages) as the CLI itself loads it."""
    header: dict[str, Any] = {}
    history: dict[str, tuple[Any, Loc]] = {}
    for line, rec in records:
        loc = Loc(file, "$", line)
        target, update = rec.get("$rewindTo"), rec.get("$set")
        if isinstance(target, str):
            ids = list(history)
            # The CLI clears the whole history when the message to rewind to is unknown.
            for mid in ids[ids.index(target) :] if target in history else ids:
                del history[mid]
        elif isinstance(update, dict):
            header.update((k, v) for k, v in update.items() if k != "messages")
            if isinstance(update.get("messages"), list):
                where = loc.at("$set").at("messages")
                history = {}
                for i, m in enumerate(update["messages"]):
                    mid = _str(m.get("id")) if isinstance(m, dict) else ""
                    history[mid or f"#{line}.{i}"] = (m, where.at(i))
        elif isinstance(rec.get("id"), str):
            # A message written again (tokens or tool calls added) replaces the earlier copy in place.
            history[rec["id"]] = (rec, loc)
        elif "sessionId" in rec:
            header.update(rec)
        else:
            notes.skip("record:unknown")
    return header, list(history.values())


def _read_log(first: tuple[int, dict[str, Any]], rest: Iterator[tuple[int, dict[str, Any]]], file: str) -> Transcript:
    notes = ImportNotes()
    count = 0

    def counted() -> Iterator[tuple[int, dict[str, Any]]]:
        nonlocal count
        for item in chain([first], rest):
            count += 1
            yield item

    header, messages = replay_log(counted(), notes, file)
    t = from_session(header, messages, file=file, notes=notes)
    t.notes.records_read = count
    return t


# -- documents -------------------------------------------------------------------------------


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """Import a parsed document of any shape this module accepts."""
    if isinstance(doc, list):
        return from_contents(doc, file=file, meta=TranscriptMeta(source_format=NAME, source_path=file, title="Gemini conversation"))
    if isinstance(doc, dict):
        if isinstance(doc.get("contents"), list):
            # The SDK keeps the system instruction and tools in the request's config.
            config: dict[str, Any] = doc["config"] if isinstance(doc.get("config"), dict) else {}
            holder, prefix = (doc, "$") if field(doc, "systemInstruction") is not None else (config, "$.config")
            system_path = f"{prefix}.{key_of(holder, 'systemInstruction')}"
            tools = doc.get("tools") if doc.get("tools") is not None else config.get("tools")
            meta = TranscriptMeta(source_format=NAME, source_path=file, model=_str(doc.get("model")).removeprefix("models/") or None)
            return from_contents(
                doc["contents"], file=file, path="$.contents", system=field(holder, "systemInstruction"), system_path=system_path, tools=tools, meta=meta
            )
        if isinstance(doc.get("clientHistory"), list):
            meta = TranscriptMeta(source_format=NAME, source_path=file, title="Gemini CLI restore checkpoint")
            return from_contents(doc["clientHistory"], file=file, path="$.clientHistory", meta=meta)
        if isinstance(doc.get("history"), list):
            meta = TranscriptMeta(source_format=NAME, source_path=file, title="Gemini CLI saved chat")
            return from_contents(doc["history"], file=file, path="$.history", meta=meta)
        if isinstance(doc.get("sessionId"), str) and ("messages" in doc or "projectHash" in doc):
            raw = doc.get("messages")
            if raw is not None and not isinstance(raw, list):
                raise TranscriptError(f"messages is a {type(raw).__name__}", file=file, where="$.messages", expected="a list of messages")
            base = Loc(file, "$.messages")
            return from_session(doc, ((m, base.at(i)) for i, m in enumerate(raw or [])), file=file)
    raise TranscriptError(
        "not a Gemini transcript",
        file=file,
        where="$",
        expected="a list of contents, an object with 'contents' / 'history' / 'clientHistory', or a Gemini CLI session",
    )


def _log_record(rec: dict[str, Any]) -> bool:
    """Whether a first JSONL record belongs to a chat recording log (not a one-line document)."""
    if "messages" in rec or "contents" in rec:
        return False
    return "sessionId" in rec or "$set" in rec or "$rewindTo" in rec or isinstance(rec.get("id"), str)


def read(path: Path) -> Transcript:
    file = str(path)
    if leading_char(path) == "[":
        return from_document(read_json(path), file=file)
    records = iter_jsonl(path)
    try:
        first = next(records)
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        return from_document(read_json(path), file=file)  # a pretty-printed document
    if _log_record(first[1]):
        return _read_log(first, records, file)
    del records  # the generator closes its file when dropped
    return from_document(read_json(path), file=file)


# -- detection -------------------------------------------------------------------------------

_HEAD_SESSION = re.compile(r'"sessionId"\s*:\s*"[^"]*"\s*,\s*"projectHash"\s*:|"projectHash"\s*:\s*"[^"]*"\s*,\s*"sessionId"\s*:')
_HEAD_RESTORE = re.compile(r'"clientHistory"\s*:\s*\[')
_HEAD_CONTENTS = re.compile(r'^\s*\[\s*\{\s*"(?:role|parts)"\s*:|"(?:contents|history)"\s*:\s*\[\s*\{\s*"(?:role|parts)"\s*:')
_HEAD_PARTS = re.compile(r'"parts"\s*:\s*\[')
_HEAD_MODEL = re.compile(r'"role"\s*:\s*"model"|"(?:functionCall|function_call|functionResponse|function_response)"\s*:')


def _score(value: Any) -> int:
    if isinstance(value, list):
        return 95 if value and _content_like(value[0]) else 0
    if not isinstance(value, dict):
        return 0
    contents = value.get("contents")
    if isinstance(contents, list):
        return 95 if (contents and _content_like(contents[0])) or (not contents and field(value, "systemInstruction") is not None) else 0
    if isinstance(value.get("clientHistory"), list) and isinstance(value.get("toolCall"), dict):
        return 95
    history = value.get("history")
    if isinstance(history, list) and history and _content_like(history[0]):
        return 95
    if isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
        return 95
    return 0


def sniff(probe: Probe) -> int:
    if probe.records:
        return _score(probe.records[0])
    if probe.document is not None:
        return _score(probe.document)
    head = probe.head
    if _HEAD_SESSION.search(head[:4000]) or _HEAD_RESTORE.search(head):
        return 90
    if _HEAD_CONTENTS.search(head) and _HEAD_PARTS.search(head):
        # Above the 90 a Chat Completions head gets for a "function" role, which Gemini also writes.
        return 92 if _HEAD_MODEL.search(head) else 85
    return 0


FORMAT = register(
    Format(
        name=NAME,
        description="Gemini API contents (REST or google-genai dumps) and Gemini CLI chat recordings, saved chats and checkpoints",
        sniff=sniff,
        read=read,
    )
)
