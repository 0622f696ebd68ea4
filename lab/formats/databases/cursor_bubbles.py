"""Cursor's bubbles (its messages) as canonical messages: the mapping ``lab.formats.databases.cursor`` reads them with.

A bubble (``_v`` 2-3) is one message: ``type`` 1 (user) or 2 (assistant), or
``"user"`` / ``"ai"`` in the chat panel of Cursor before composers; ``text``
(or Lexical ``richText``; the old panel's ``rawText``, ``delegate.a``,
``initText``), ``createdAt`` (ISO), ``thinking`` ``{text, signature}`` (or
``allThinkingBlocks``), ``toolFormerData`` (one tool call: ``name``,
``rawArgs`` / ``params`` as JSON text, ``status`` loading / completed /
cancelled / error, ``result`` as JSON text, ``toolCallId``, ``modelCallId``
shared by parallel calls, ``userDecision``), ``tokenCount`` ``{inputTokens,
outputTokens}``, ``modelInfo.modelName`` (the old panel's ``modelType``),
``attachedCodeChunks`` / ``context.selections`` (the old panel's
``selections``: attached code, with its text), ``workspaceProjectDir`` /
``workspaceUris``.

Mapping:

* user bubble -> user text; the attached code it holds (code chunks,
  selections) was sent ahead of the typed words, so each becomes a text
  block before them; ``images`` -> image placeholders. Files attached by
  reference only (``fileSelections``) hold no content: nothing to keep.
* assistant bubbles -> assistant messages: thinking -> a thinking block,
  text (else its code blocks) -> text, ``toolFormerData`` -> a tool call
  (arguments JSON-decoded from ``rawArgs``, else ``params``; text that is no
  JSON object is kept under ``_raw`` with a warning) answered by its
  ``result``. Cursor writes one bubble per step of a response, so
  consecutive assistant bubbles form one message up to a tool result;
  parallel calls (one ``modelCallId``) share one message and their results
  one user message. A call that errored, was cancelled or that the user
  rejected is answered as an error (its result, else a sentence saying so);
  one still ``loading`` with no result is answered "No tool output" if the
  session went on, with a warning, and stays unanswered, with a warning, at
  the end of the session.
* ``tokenCount`` -> usage of the assistant message (of the bubbles merged
  into it, the output tokens summed and the largest input count kept: they
  are parts of one request); ``createdAt`` (else ``timingInfo.clientRpcSendTime``)
  -> timestamps.
* the models named (``default``, Cursor's automatic choice, names none) and
  the first workspace folder are reported for the transcript's meta.
* Counted in ``notes.skipped``, never content: unknown bubble types, empty
  bubbles, old ``toolResults`` lists. Cursor leaves no compaction marker in
  its bubbles, so no boundary is made.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...core.messages import Block, ImageBlock, ImportNotes, Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, as_dict, opt_str, parse_arguments, parse_timestamp, token_count, path_from_uri

__all__ = ["NO_OUTPUT", "Mapped", "json_value", "stamp", "path_of_uri", "map_bubbles"]

# What a call that never finished is answered with when the session went on.
NO_OUTPUT = "No tool output"


def json_value(raw: Any) -> tuple[bool, Any]:
    """A stored value as JSON: (True, value), or (False, None) when it is none (Cursor writes TEXT or BLOB)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return False, None
    if not isinstance(raw, str):
        return False, None
    try:
        return True, json.loads(raw)
    except (ValueError, RecursionError):
        return False, None


def stamp(value: Any) -> datetime | None:
    # Cursor's epoch values are milliseconds; a small number is a performance counter, no time.
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1e11:
        return None
    return parse_timestamp(value)


def path_of_uri(value: Any) -> str | None:
    """A workspace folder as a path: ``file://`` URIs decoded (Windows drives too), other schemes none."""
    if isinstance(value, dict):
        value = value.get("fsPath") or value.get("path") or value.get("external")
    return path_from_uri(value)


def _lexical_text(raw: Any) -> str:
    """The plain text of a Lexical editor state (``richText``): its paragraphs' text nodes, a line each."""
    ok, doc = json_value(raw) if isinstance(raw, str) else (False, None)
    if not ok:
        return ""

    def walk(node: Any, out: list[str], depth: int) -> None:
        if not isinstance(node, dict) or depth > 50:
            return
        if isinstance(node.get("text"), str):
            out.append(node["text"])
        children = node.get("children")
        for child in children if isinstance(children, list) else []:
            walk(child, out, depth + 1)

    paragraphs = as_dict(as_dict(doc).get("root")).get("children")
    lines: list[str] = []
    for para in paragraphs if isinstance(paragraphs, list) else []:
        parts: list[str] = []
        walk(para, parts, 0)
        lines.append("".join(parts))
    return "\n".join(lines).strip()


def _usage(raw: Any) -> Usage | None:
    u = as_dict(raw)
    usage = Usage(input_tokens=token_count(u.get("inputTokens")), output_tokens=token_count(u.get("outputTokens")))
    return usage if usage.total else None


def _outcome(tool: dict[str, Any]) -> tuple[str | None, bool]:
    """What answered a call: (text, is_error); text None when it never finished."""
    raw = tool.get("result")
    text = raw if isinstance(raw, str) and raw else json.dumps(raw, ensure_ascii=False) if isinstance(raw, (dict, list)) and raw else None
    status = opt_str(tool.get("status"))
    if tool.get("userDecision") == "rejected":
        return text or "The user rejected this tool call.", True
    if status == "cancelled":
        return text or "The tool call was cancelled.", True
    if status == "error" or as_dict(tool.get("additionalData")).get("status") == "error":
        return text or opt_str(tool.get("error")) or "The tool call failed.", True
    if text is not None:
        return text, False
    return (NO_OUTPUT, False) if status == "completed" else (None, False)


class _Session:
    """The bubbles of one session, turned into an alternating history."""

    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        # The calls of the newest assistant message, answered once the response moves on.
        self.pending: list[tuple[ToolUseBlock, dict[str, Any]]] = []
        self.group: str | None = None
        self.models: list[str] = []
        self.cwd: str | None = None

    def _model(self, name: Any) -> None:
        model = opt_str(name)
        if model is not None and model != "default" and model not in self.models:
            self.models.append(model)

    def _note_workspace(self, bubble: dict[str, Any]) -> None:
        if self.cwd is None:
            uris = bubble.get("workspaceUris")
            first = uris[0] if isinstance(uris, list) and uris else None
            self.cwd = path_of_uri(bubble.get("workspaceProjectDir")) or path_of_uri(first)

    def flush(self, *, moved_on: bool) -> None:
        for use, tool in self.pending:
            text, is_error = _outcome(tool)
            if text is None:
                status = opt_str(tool.get("status")) or "no status"
                if not moved_on:
                    self.notes.warnings.append(f"tool call {use.id!r} ({use.name}) has no result ({status}): the session ends with it unanswered")
                    continue
                text = NO_OUTPUT
                self.notes.warnings.append(f"tool call {use.id!r} ({use.name}) has no result ({status}); answered {text!r}")
            self.b.result(use.id, text, key=f"{use.id}.result", is_error=is_error, canonical=True)
        self.pending.clear()
        self.group = None

    def _context(self, bubble: dict[str, Any]) -> list[Block]:
        """The attached code the bubble holds, as text the model saw ahead of the user's words."""
        blocks: list[Block] = []
        chunks = bubble.get("attachedCodeChunks")
        for chunk in chunks if isinstance(chunks, list) else []:
            c = as_dict(chunk)
            lines = c.get("lines")
            content = c.get("content")
            code = "\n".join(x for x in lines if isinstance(x, str)) if isinstance(lines, list) else content if isinstance(content, str) else ""
            if code.strip():
                where = opt_str(c.get("relativeWorkspacePath")) or "code"
                start = token_count(c.get("startLineNumber"))
                blocks.append(TextBlock(text=f"{where}{f' (from line {start})' if start else ''}:\n{code}\n"))
        selections = as_dict(bubble.get("context")).get("selections")
        if not isinstance(selections, list):
            selections = bubble.get("selections")
        for sel in selections if isinstance(selections, list) else []:
            s = as_dict(sel)
            if isinstance(s.get("text"), str) and s["text"].strip():
                origin = path_of_uri(s.get("uri"))
                blocks.append(TextBlock(text=f"{origin}:\n{s['text']}\n" if origin else f"{s['text']}\n"))
        return blocks

    def user(self, bubble: dict[str, Any], key: str) -> None:
        self.flush(moved_on=True)
        self._model(as_dict(bubble.get("modelInfo")).get("modelName"))
        self._note_workspace(bubble)
        text = _user_text(bubble)
        blocks = self._context(bubble) + ([TextBlock(text=text)] if text.strip() else [])
        images = bubble.get("images")
        for image in images if isinstance(images, list) else []:
            blocks.append(ImageBlock(source="file", media_type="image/unknown", url=opt_str(as_dict(image).get("path"))))
        if not blocks:
            self.notes.skip("bubble:user (empty)")
            return
        stamp = _bubble_time(bubble)
        self.b.user_turn(blocks, key=key, timestamp=stamp)

    def _thinking(self, bubble: dict[str, Any]) -> list[Block]:
        raw = bubble.get("thinking")
        if isinstance(raw, str) and raw.strip():
            return [ThinkingBlock(thinking=raw)]
        t = as_dict(raw)
        if isinstance(t.get("text"), str) and t["text"].strip():
            return [ThinkingBlock(thinking=t["text"], signature=opt_str(t.get("signature")))]
        blocks: list[Block] = []
        every = bubble.get("allThinkingBlocks")
        for item in every if isinstance(every, list) else []:
            text = item if isinstance(item, str) else as_dict(item).get("thinking") or as_dict(item).get("text")
            if isinstance(text, str) and text.strip():
                blocks.append(ThinkingBlock(thinking=text, signature=opt_str(as_dict(item).get("signature"))))
        return blocks

    def _call(self, tool: dict[str, Any], key: str, loc: Loc) -> ToolUseBlock:
        name = opt_str(tool.get("name")) or opt_str(tool.get("tool"))
        if name is None:
            self.notes.warnings.append(f"{loc.where}: a tool call without a name: kept as {UNNAMED_TOOL!r}")
            name = UNNAMED_TOOL
        raw = tool.get("rawArgs") if tool.get("rawArgs") not in (None, "") else tool.get("params")
        args = parse_arguments(raw, self.notes, loc.at("toolFormerData").at("rawArgs"))
        return self.b.use(opt_str(tool.get("toolCallId")), name, args, key=key)

    def assistant(self, bubble: dict[str, Any], key: str, loc: Loc) -> None:
        self._model(as_dict(bubble.get("modelInfo")).get("modelName"))
        self._model(bubble.get("modelType"))
        self._note_workspace(bubble)
        blocks = self._thinking(bubble)
        text = _assistant_text(bubble)
        if text.strip():
            blocks.append(TextBlock(text=text))
        tool = bubble.get("toolFormerData")
        tool = tool if isinstance(tool, dict) and tool else None
        old_results = bubble.get("toolResults")
        if isinstance(old_results, list) and old_results:
            self.notes.skip("toolResults (not read)", len(old_results))
        usage = _usage(bubble.get("tokenCount"))
        if not blocks and tool is None:
            self.notes.skip("bubble:assistant (empty)")
            return
        group = opt_str(tool.get("modelCallId")) if tool is not None else None
        if self.pending and (tool is None or group is None or group != self.group):
            self.flush(moved_on=True)
        if tool is not None:
            use = self._call(tool, key, loc)
            blocks.append(use)
            self.pending.append((use, tool))
            self.group = group
        before = len(self.b.messages)
        msg = self.b.add("assistant", blocks, key=key, timestamp=_bubble_time(bubble), usage=usage, merge=True)
        if usage is not None and len(self.b.messages) == before and msg.usage is not None and msg.usage is not usage:
            # Merged into the message of the same request: what its bubbles wrote adds up, the prompt was one.
            total = Usage(input_tokens=max(msg.usage.input_tokens, usage.input_tokens), output_tokens=msg.usage.output_tokens + usage.output_tokens)
            self.b.messages[-1] = msg.model_copy(update={"usage": total})


def _user_text(bubble: dict[str, Any]) -> str:
    for key in ("text", "rawText"):
        if isinstance(bubble.get(key), str) and bubble[key].strip():
            return str(bubble[key])
    delegate = as_dict(bubble.get("delegate")).get("a")
    if isinstance(delegate, str) and delegate.strip():
        return delegate
    return _lexical_text(bubble.get("richText")) or _lexical_text(bubble.get("initText"))


def _assistant_text(bubble: dict[str, Any]) -> str:
    for key in ("text", "rawText"):
        if isinstance(bubble.get(key), str) and bubble[key].strip():
            return str(bubble[key])
    rich = _lexical_text(bubble.get("richText"))
    if rich:
        return rich
    blocks = bubble.get("codeBlocks")
    code = [as_dict(c) for c in blocks] if isinstance(blocks, list) else []
    fenced = [f"```{opt_str(c.get('languageId')) or ''}\n{c['content']}\n```" for c in code if isinstance(c.get("content"), str) and c["content"].strip()]
    return "\n\n".join(fenced)


def _bubble_time(bubble: dict[str, Any]) -> datetime | None:
    return stamp(bubble.get("createdAt")) or stamp(as_dict(bubble.get("timingInfo")).get("clientRpcSendTime"))


_USER, _ASSISTANT = frozenset({1, "user"}), frozenset({2, "ai", "assistant"})


@dataclass(frozen=True)
class Mapped:
    """A session's messages, with the models its bubbles name and the workspace folder they record."""

    messages: list[Message]
    models: list[str]
    cwd: str | None


def map_bubbles(bubbles: Iterable[tuple[dict[str, Any], Loc]], notes: ImportNotes) -> Mapped:
    """The bubbles, in conversation order and each with where it is, as an alternating history."""
    s = _Session(notes)
    for n, (bubble, loc) in enumerate(bubbles):
        kind = bubble.get("type")
        key = opt_str(bubble.get("bubbleId")) or opt_str(bubble.get("id")) or f"b{n}"
        hashable = isinstance(kind, (int, str)) and not isinstance(kind, bool)
        if hashable and kind in _USER:
            s.user(bubble, key)
        elif hashable and kind in _ASSISTANT:
            s.assistant(bubble, key, loc)
        else:
            notes.skip(f"bubble:type {str(kind)[:20]} (unknown type)")
    s.flush(moved_on=False)
    messages = s.b.finish()
    return Mapped(messages=messages, models=s.models, cwd=s.cwd)
