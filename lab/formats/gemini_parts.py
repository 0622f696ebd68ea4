"""Gemini ``Content`` parts as canonical blocks, shared by every Gemini shape.

The Gemini API spells its fields in camelCase (``functionCall``,
``inlineData``, ``thoughtSignature``); the Python SDK (google-genai) dumps the
same models in snake_case (``function_call``, ``inline_data``). ``field``
reads either spelling, so one reader serves request bodies, SDK dumps and the
Gemini CLI's files.

How parts map:

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
"""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from typing import Any

from ..core.messages import Block, ImageBlock, ImportNotes, TextBlock, ThinkingBlock, ToolSpec, ToolUseBlock
from ._build import HistoryBuilder, Loc, need_dict, parse_arguments, text_block
from .anthropic_blocks import base64_size, image_marker

__all__ = ["ContentReader", "field", "key_of", "media_block", "response_text", "system_blocks", "declarations"]

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


def field(d: dict[str, Any], name: str) -> Any:
    """``d[name]`` in the API's camelCase, else in the SDK's snake_case spelling."""
    value = d.get(name)
    return value if value is not None else d.get(_snake(name))


def key_of(d: dict[str, Any], name: str) -> str:
    """The spelling of ``name`` that ``d`` uses (for error paths)."""
    return name if d.get(name) is not None else _snake(name)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _kind(part: dict[str, Any]) -> tuple[str, Any]:
    """(kind, value) of a part: a name from ``_KINDS``, or ``part:<key>`` for one nobody knows."""
    for k in _KINDS:
        value = field(part, k)
        if value is not None:
            return k, value
    other = sorted(k for k in part if k not in _QUALIFIERS)
    return (f"part:{other[0]}" if other else "part:empty"), None


def media_block(value: dict[str, Any], *, inline: bool) -> Block:
    """An ``inlineData`` / ``fileData`` value as an image placeholder or a text marker."""
    mime = _str(field(value, "mimeType")) or "application/octet-stream"
    if inline:
        data = value.get("data")
        size = base64_size(data) if isinstance(data, str) else 0
        if mime.startswith("image/"):
            return ImageBlock(media_type=mime, size_bytes=size, source="base64")
        return TextBlock(text=f"[{mime}: {size} bytes]")
    uri = _str(field(value, "fileUri"))
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


def response_text(response: dict[str, Any]) -> tuple[str, bool]:
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
                v = field(p, k)
                if isinstance(v, dict):
                    texts.append(_as_text(media_block(v, inline=k == "inlineData")))
    return "\n".join(t for t in texts if t), is_error


def system_blocks(raw: Any, loc: Loc, notes: ImportNotes) -> list[Block]:
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


def declarations(raw: Any, notes: ImportNotes) -> list[ToolSpec]:
    """``tools[].functionDeclarations`` as ToolSpecs; built-in tools (googleSearch, ...) are counted."""
    specs: list[ToolSpec] = []
    for tool in raw if isinstance(raw, list) else []:
        if not isinstance(tool, dict):
            notes.skip("tool:invalid")
            continue
        for k in tool:
            if k not in ("functionDeclarations", "function_declarations"):
                notes.skip(f"tool:{k}")
        decls = field(tool, "functionDeclarations")
        for d in decls if isinstance(decls, list) else []:
            if not isinstance(d, dict) or not isinstance(d.get("name"), str):
                notes.skip("tool:invalid")
                continue
            schema = field(d, "parameters") or field(d, "parametersJsonSchema") or {}
            specs.append(ToolSpec(name=d["name"], description=_str(d.get("description")), input_schema=schema if isinstance(schema, dict) else {}))
    return specs


class ContentReader:
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
            signature = _str(field(part, "thoughtSignature"))
            if kind == "text":
                if not isinstance(value, str):
                    raise ploc.at("text").error(f"text is a {type(value).__name__}", expected="a string")
                if part.get("thought") is True and value:
                    blocks.append(ThinkingBlock(thinking=value, signature=signature or None))
                    signature = ""
                elif part.get("thought") is not True:
                    blocks += text_block(value)
            elif kind == "functionCall":
                call = need_dict(value, ploc.at(key_of(part, kind)), "functionCall")
                if recorded and (_str(call.get("id")) in recorded or _str(call.get("name")) in recorded):
                    self.notes.skip("functionCall (also in toolCalls)")
                else:
                    blocks.append(self.use(call, ploc.at(key_of(part, kind)), f"{key}.{j}"))
            elif kind in ("inlineData", "fileData"):
                blocks.append(media_block(need_dict(value, ploc.at(key_of(part, kind)), kind), inline=kind == "inlineData"))
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
            return kind, media_block(need_dict(value, ploc.at(key_of(part, kind)), kind), inline=kind == "inlineData")
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
                k = key_of(part, "functionResponse")
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
        text, is_error = response_text(response)
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
                k = key_of(part, "functionResponse")
                text, err = response_text(need_dict(part[k], ploc.at(k), "functionResponse"))
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
