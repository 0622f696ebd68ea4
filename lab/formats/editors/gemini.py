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

Contents map by role: ``model`` -> assistant, ``user`` (and the older
``function``) -> user turns whose function responses become
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

The Gemini API spells its fields in camelCase (``functionCall``,
``inlineData``, ``thoughtSignature``); the Python SDK (google-genai) dumps the
same models in snake_case (``function_call``, ``inline_data``). ``_field``
reads either spelling, so one reader serves request bodies, SDK dumps and the
Gemini CLI's files.

How the parts of a Content map:

* ``text`` -> a TextBlock; with ``thought: true`` -> a ThinkingBlock (its
  ``thoughtSignature`` kept as the signature). A signature on any other part
  has no canonical home: it is dropped and counted as ``thought_signature``.
* ``functionCall`` -> a ToolUseBlock. Gemini calls often carry no id: the
  builder derives one from the position (``call_c3.0``), so replays agree.
* ``functionResponse`` -> a ToolResultBlock answering the call with the same
  id, else the oldest unanswered call of the same name. The response renders
  as its ``output`` / ``result`` / ``error`` text when those are its only
  fields, else as compact JSON; an ``error`` marks the result as an error.
  Parts after a response in the same turn (the Gemini CLI sends a file's
  bytes or text that way) are appended to that result's text.
* ``inlineData`` / ``fileData`` -> an ImageBlock for images (size or URI
  only, never the bytes), a ``[mime: N bytes]`` text marker otherwise.
* ``executableCode`` / ``codeExecutionResult`` (the server-side code
  execution tool, answered inside the model's own turn) -> text.
* Any other part kind is skipped and counted as ``part:<key>``.

Detection (``sniff``): 95 for any shape above recognised from its parsed
value; for a document too large to parse while probing, 90 when its head
shows a CLI header, a ``clientHistory`` or contents with a model turn or a
function call, 85 for contents alone.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImageBlock, ImportNotes, TextBlock, ThinkingBlock, ToolSpec, ToolUseBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, need_dict, parse_arguments, parse_timestamp, text_block
from ..anthropic_blocks import base64_size, image_marker
from ..jsonio import iter_jsonl, leading_char, read_json
from ..registry import FileHead, Format, REQUEST_BODIES

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


# -- Content parts (every shape) -----------------------------------------------------


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")

# Part keys that carry the part's data, in the order a part is classified by.
_KINDS = ("text", "functionCall", "functionResponse", "inlineData", "fileData", "executableCode", "codeExecutionResult")
# Keys that qualify a part's data rather than being data themselves.
_QUALIFIERS = frozenset(
    {"thought", "thoughtSignature", "thought_signature", "videoMetadata", "video_metadata", "mediaResolution", "media_resolution", "partMetadata", "part_metadata"}
)
_RESULT_FIELDS = frozenset({"output", "result", "error"})
_EMPTY: tuple[Any, ...] = (None, "", False, {}, [])


@functools.cache
def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _field(d: dict[str, Any], name: str) -> Any:
    """``d[name]`` in the API's camelCase, else in the SDK's snake_case spelling."""
    value = d.get(name)
    return value if value is not None else d.get(_snake(name))


def _key_of(d: dict[str, Any], name: str) -> str:
    """The spelling of ``name`` that ``d`` uses (for error paths)."""
    return name if d.get(name) is not None else _snake(name)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _kind(part: dict[str, Any]) -> tuple[str, Any]:
    """(kind, value) of a part: a name from ``_KINDS``, or ``part:<key>`` for one nobody knows."""
    for k in _KINDS:
        value = _field(part, k)
        if value is not None:
            return k, value
    other = sorted(k for k in part if k not in _QUALIFIERS)
    return (f"part:{other[0]}" if other else "part:empty"), None


def _media_block(value: dict[str, Any], *, inline: bool) -> Block:
    """An ``inlineData`` / ``fileData`` value as an image placeholder or a text marker."""
    mime = _str(_field(value, "mimeType")) or "application/octet-stream"
    if inline:
        data = value.get("data")
        size = base64_size(data) if isinstance(data, str) else 0
        if mime.startswith("image/"):
            return ImageBlock(media_type=mime, size_bytes=size, source="base64")
        return TextBlock(text=f"[{mime}: {size} bytes]")
    uri = _str(_field(value, "fileUri"))
    if mime.startswith("image/"):
        if uri.startswith(("http://", "https://")):
            return ImageBlock(media_type=mime, source="url", url=uri)
        # gs:// and Files API URIs cannot be fetched by another provider; only the kind is kept.
        return ImageBlock(media_type=mime, source="file")
    return TextBlock(text=f"[file: {mime}, {uri}]" if uri else f"[file: {mime}]")


def _as_text(block: Block) -> str:
    if isinstance(block, ImageBlock):
        return image_marker(block)
    return block.text if isinstance(block, TextBlock) else ""


def _code_text(kind: str, value: Any) -> str:
    value = value if isinstance(value, dict) else {}
    if kind == "executableCode":
        language = _str(value.get("language")).lower()
        language = "" if language in ("", "language_unspecified") else language
        return f"```{language}\n{_str(value.get('code'))}\n```"
    return f"[code execution: {_str(value.get('outcome')) or 'unknown outcome'}]\n{_str(value.get('output'))}".rstrip()


def _response_text(response: dict[str, Any]) -> tuple[str, bool]:
    """A functionResponse as (text, is_error)."""
    raw = response.get("response")
    texts: list[str] = []
    if isinstance(raw, dict) and raw and set(raw) <= _RESULT_FIELDS:
        texts += [_render(raw[k]) for k in ("output", "result", "error") if raw.get(k) is not None]
    elif raw is not None:
        texts.append(_compact(raw))
    is_error = isinstance(raw, dict) and raw.get("error") not in _EMPTY
    # Multimodal function responses (newer API versions) carry media beside the response.
    extra = response.get("parts")
    for p in extra if isinstance(extra, list) else []:
        if isinstance(p, dict):
            for k in ("inlineData", "fileData"):
                v = _field(p, k)
                if isinstance(v, dict):
                    texts.append(_as_text(_media_block(v, inline=k == "inlineData")))
    return "\n".join(t for t in texts if t), is_error


def _system_blocks(raw: Any, loc: Loc, notes: ImportNotes) -> list[Block]:
    """A system instruction (a Content, a list of parts or plain text) as text blocks."""
    if isinstance(raw, dict) and ("parts" in raw or "role" in raw):
        raw, loc = raw.get("parts"), loc.at("parts")
    if raw is None:
        return []
    blocks: list[Block] = []
    for i, part in enumerate(raw if isinstance(raw, list) else [raw]):
        if isinstance(part, str):
            blocks += text_block(part)
            continue
        part = need_dict(part, loc.at(i) if isinstance(raw, list) else loc, "system instruction part")
        kind, value = _kind(part)
        if kind == "text" and isinstance(value, str):
            blocks += text_block(value)
        else:
            notes.skip(f"system {kind}")
    return blocks


def _declarations(raw: Any, notes: ImportNotes) -> list[ToolSpec]:
    """``tools[].functionDeclarations`` as ToolSpecs; built-in tools (googleSearch, ...) are counted."""
    specs: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict):
            notes.skip("tool:invalid")
            continue
        for k in tool:
            if k not in ("functionDeclarations", "function_declarations"):
                notes.skip(f"tool:{k}")
        decls = _field(tool, "functionDeclarations")
        for d in decls if isinstance(decls, list) else []:
            if not isinstance(d, dict) or not isinstance(d.get("name"), str):
                notes.skip("tool:invalid")
                continue
            schema = _field(d, "parameters") or _field(d, "parametersJsonSchema") or {}
            specs.append(ToolSpec(name=d["name"], description=_str(d.get("description")), input_schema=schema if isinstance(schema, dict) else {}))
    return specs


class _ContentReader:
    """Turns Gemini turns into builder calls, pairing function calls with their responses."""

    def __init__(self, b: HistoryBuilder) -> None:
        self.b = b
        self.notes = b.notes
        # source call id -> canonical id of its latest use
        self._calls: dict[str, str] = {}
        self._answered: set[str] = set()

    def parts(self, raw: Any, loc: Loc) -> list[Any]:
        """A PartListUnion (a list, one part, a string or null) as a list."""
        if raw is None:
            return []
        if isinstance(raw, (str, dict)):
            return [raw]
        if not isinstance(raw, list):
            raise loc.error(f"parts is a {type(raw).__name__}", expected="a list of parts")
        return raw

    def use(self, call: Any, loc: Loc, key: str) -> ToolUseBlock:
        call = need_dict(call, loc, "function call")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise loc.error("function call without a name", expected="a string 'name'")
        args = parse_arguments(call.get("args"), self.notes, loc.at("args"))
        source_id = _str(call.get("id")) or None
        block = self.b.use(source_id, name, args, key=key)
        if source_id:
            self._calls[source_id] = block.id
        return block

    def model_blocks(self, raw: Any, loc: Loc, key: str, *, recorded: frozenset[str] = frozenset()) -> list[Block]:
        """A model turn's parts as assistant blocks.

        ``recorded``: ids and names of calls the caller records elsewhere (the
        Gemini CLI's ``toolCalls``); function call parts naming them are skipped.
        """
        blocks: list[Block] = []
        for j, part in enumerate(self.parts(raw, loc)):
            ploc = loc.at(j) if isinstance(raw, list) else loc
            if isinstance(part, str):
                blocks += text_block(part)
                continue
            part = need_dict(part, ploc, "part")
            kind, value = _kind(part)
            signature = _str(_field(part, "thoughtSignature"))
            if kind == "text":
                if not isinstance(value, str):
                    raise ploc.at("text").error(f"text is a {type(value).__name__}", expected="a string")
                if part.get("thought") is True and value:
                    blocks.append(ThinkingBlock(thinking=value, signature=signature or None))
                    signature = ""
                elif part.get("thought") is not True:
                    blocks += text_block(value)
            elif kind == "functionCall":
                call = need_dict(value, ploc.at(_key_of(part, kind)), "functionCall")
                if recorded and (_str(call.get("id")) in recorded or _str(call.get("name")) in recorded):
                    self.notes.skip("functionCall (also in toolCalls)")
                else:
                    blocks.append(self.use(call, ploc.at(_key_of(part, kind)), f"{key}.{j}"))
            elif kind in ("inlineData", "fileData"):
                blocks.append(_media_block(need_dict(value, ploc.at(_key_of(part, kind)), kind), inline=kind == "inlineData"))
            elif kind in ("executableCode", "codeExecutionResult"):
                blocks.append(TextBlock(text=_code_text(kind, value)))
            else:
                self.notes.skip(f"{kind} in a model turn" if kind == "functionResponse" else kind)
            if signature:
                self.notes.skip("thought_signature")
        return blocks

    def _sibling(self, part: Any, ploc: Loc) -> tuple[str, Any]:
        """(kind, block or text) of a non-response part in a user turn."""
        if isinstance(part, str):
            return "text", part
        part = need_dict(part, ploc, "part")
        kind, value = _kind(part)
        if kind == "text" and not isinstance(value, str):
            raise ploc.at("text").error(f"text is a {type(value).__name__}", expected="a string")
        if kind in ("inlineData", "fileData"):
            return kind, _media_block(need_dict(value, ploc.at(_key_of(part, kind)), kind), inline=kind == "inlineData")
        if kind in ("executableCode", "codeExecutionResult"):
            return "text", _code_text(kind, value)
        return kind, value

    def user_turn(self, raw: Any, loc: Loc, key: str, stamp: datetime | None = None) -> None:
        """A user turn: its function responses become tool results, the rest a user message.

        Results go first so they stay next to the calls they answer; parts that
        follow a response belong to it.
        """
        lead: list[Block] = []
        groups: list[tuple[dict[str, Any], Loc, list[str]]] = []
        for j, part in enumerate(self.parts(raw, loc)):
            ploc = loc.at(j) if isinstance(raw, list) else loc
            if isinstance(part, dict) and _kind(part)[0] == "functionResponse":
                k = _key_of(part, "functionResponse")
                groups.append((need_dict(part[k], ploc.at(k), "functionResponse"), ploc.at(k), []))
                continue
            kind, value = self._sibling(part, ploc)
            if kind == "text":
                if groups:
                    groups[-1][2].append(value)
                else:
                    lead += text_block(value)
            elif kind in ("inlineData", "fileData"):
                if groups:
                    groups[-1][2].append(_as_text(value))
                else:
                    lead.append(value)
            else:
                self.notes.skip(f"{kind} in a user turn" if kind == "functionCall" else kind)
        for n, (response, rloc, extras) in enumerate(groups):
            self._answer(response, rloc, extras, f"{key}.r{n}", stamp)
        if lead:
            self.b.add("user", lead, key=key, timestamp=stamp)
        elif not groups:
            self.notes.skip("empty turn")

    def _answer(self, response: dict[str, Any], loc: Loc, extras: list[str], key: str, stamp: datetime | None) -> None:
        name, rid = _str(response.get("name")), _str(response.get("id"))
        if not name and not rid:
            raise loc.error("function response without a name or id", expected="'name': the function it answers")
        text, is_error = _response_text(response)
        text = "\n".join(t for t in (text, *extras) if t)
        target = self._target(rid, name, key)
        if target is None:
            # The same response recorded twice (the Gemini CLI syncs history into its log).
            self.notes.skip("functionResponse (duplicate)")
            return
        self.resolve(target, text, is_error=is_error, key=key, stamp=stamp)

    def _target(self, rid: str, name: str, key: str) -> str | None:
        pending = self.b.pending()
        if rid and rid in self._calls:
            cid = self._calls[rid]
            if any(c == cid for c, _ in pending):
                return cid
            if cid in self._answered:
                return None
        for cid, called in pending:
            if called == name:
                return cid
        # An orphan: the builder records it; a response id is kept as the source spelled it.
        return rid or f"call_{self.b.id_prefix}{key}"

    def resolve(self, call_id: str, text: str, *, is_error: bool, key: str, stamp: datetime | None) -> None:
        """Record the result of the call whose canonical id is ``call_id``."""
        self.b.result(call_id, text, key=key, is_error=is_error, timestamp=stamp, canonical=True)
        self._answered.add(call_id)

    def result_text(self, raw: Any, loc: Loc) -> tuple[str, bool]:
        """A recorded tool result (the Gemini CLI's ``toolCalls[].result``) as (text, is_error)."""
        texts: list[str] = []
        is_error = False
        for j, part in enumerate(self.parts(raw, loc)):
            ploc = loc.at(j) if isinstance(raw, list) else loc
            if isinstance(part, dict) and _kind(part)[0] == "functionResponse":
                k = _key_of(part, "functionResponse")
                text, err = _response_text(need_dict(part[k], ploc.at(k), "functionResponse"))
                texts.append(text)
                is_error = is_error or err
                continue
            kind, value = self._sibling(part, ploc)
            if kind == "text":
                texts.append(value)
            elif kind in ("inlineData", "fileData"):
                texts.append(_as_text(value))
            else:
                self.notes.skip(f"{kind} in a tool result")
        return "\n".join(t for t in texts if t), is_error


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
    r = _ContentReader(b)
    base = Loc(file, path)
    sys_blocks = _system_blocks(system, Loc(file, system_path), t.notes)
    if sys_blocks:
        b.add("system", sys_blocks, key="system")
    for i, content in enumerate(contents):
        loc, key = base.at(i), f"c{i}"
        if isinstance(content, str):  # the SDK accepts plain strings as user turns
            r.user_turn(content, loc, key)
            continue
        content = need_dict(content, loc, "content")
        if "role" not in content and content.keys() - _CONTENT_KEYS:
            # Content is {role, parts}; an untitled dict with other keys (OpenCode's {info, parts}) is someone else's.
            extra = ", ".join(sorted(map(str, content.keys() - _CONTENT_KEYS))[:3])
            raise loc.error(f"a content without a role holds {extra}: not Gemini Content", expected="{role, parts}")
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
    t.tools = _declarations(tools, t.notes)
    t.notes.records_read = len(contents)
    return t


# The keys of a Gemini ``Content``.
_CONTENT_KEYS = frozenset({"role", "parts"})


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
        self.r = _ContentReader(self.b)
        self.count = 0

    def message(self, m: Any, loc: Loc) -> None:
        m = need_dict(m, loc, "message")
        n, self.count = self.count, self.count + 1
        key = _str(m.get("id")) or f"m{n}"
        kind = m.get("type")
        stamp = parse_timestamp(m.get("timestamp"))
        if kind == "user":
            self.r.user_turn(m.get("content"), loc.at("content"), key, stamp)
        elif kind in ("gemini", "qwen"):
            # Qwen Code before its JSONL records kept Gemini CLI's session files, its model turns typed "qwen".
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
        for i, (call, use) in enumerate(zip(calls, uses, strict=True)):
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


def _read_log(first: tuple[int, dict[str, Any]], rest: Iterator[tuple[int, dict[str, Any]]], file: str, notes: ImportNotes) -> Transcript:
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
            holder, prefix = (doc, "$") if _field(doc, "systemInstruction") is not None else (config, "$.config")
            system_path = f"{prefix}.{_key_of(holder, 'systemInstruction')}"
            tools = doc.get("tools") if doc.get("tools") is not None else config.get("tools")
            meta = TranscriptMeta(source_format=NAME, source_path=file, model=_str(doc.get("model")).removeprefix("models/") or None)
            return from_contents(
                doc["contents"], file=file, path="$.contents", system=_field(holder, "systemInstruction"), system_path=system_path, tools=tools, meta=meta
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
    # A chat log still being written may end in a record cut off mid-write: the reader stops there, with a warning.
    notes = ImportNotes()
    records = iter_jsonl(path, notes=notes)
    try:
        first = next(records)
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        return from_document(read_json(path), file=file)  # a pretty-printed document
    if _log_record(first[1]):
        return _read_log(first, records, file, notes)
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
        return 95 if (contents and _content_like(contents[0])) or (not contents and _field(value, "systemInstruction") is not None) else 0
    if isinstance(value.get("clientHistory"), list) and isinstance(value.get("toolCall"), dict):
        return 95
    history = value.get("history")
    if isinstance(history, list) and history and _content_like(history[0]):
        return 95
    if isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
        return 95
    return 0


def sniff(probe: FileHead) -> int:
    value = probe.first_value()
    if value is not None:
        return _score(value)
    head = probe.head
    if _HEAD_SESSION.search(head[:4000]) or _HEAD_RESTORE.search(head):
        return 90
    if _HEAD_CONTENTS.search(head) and _HEAD_PARTS.search(head):
        # Above the 90 a Chat Completions head gets for a "function" role, which Gemini also writes.
        return 92 if _HEAD_MODEL.search(head) else 85
    return 0


FORMAT = Format(
    name=NAME,
    description="Gemini API contents (REST or google-genai dumps) and Gemini CLI chat recordings, saved chats and checkpoints",
    sniff=sniff,
    read=read,
    more_specific_than=REQUEST_BODIES,
)
