"""Goose sessions (block/goose): the session JSONL and ``goose session export`` JSON.

A Goose message is ``{id?, role, created, content: [...], metadata?:
{userVisible, agentVisible}}`` with ``created`` in epoch seconds and typed
content items (``crates/goose/src/conversation/message.rs``). Two files hold
them:

* the session JSONL of Goose before its SQLite store
  (``~/.local/share/goose/sessions/<id>.jsonl``): a first line of session
  metadata ``{working_dir, description, message_count, total_tokens,
  input_tokens, output_tokens, accumulated_*, ...}`` (optional: a file may
  start with a message), then one message per line
  (``crates/goose/src/session/storage.rs``, ``legacy.rs``);
* ``goose session export --format json``: the session ``{id, working_dir,
  name, created_at, updated_at, total_tokens, input_tokens, output_tokens,
  accumulated_*, provider_name, model_config: {model_name, ...},
  conversation: [messages]}`` (``crates/goose-cli/src/commands/session.rs``
  serialises ``session_manager::Session``); ``{messages: [...]}`` too, and a
  bare list of messages.

Current Goose keeps sessions in SQLite (``sessions.db``): ``goose_db`` reads its rows
as these message dicts and its session row as this metadata, and converts them with
``from_records``, so every Goose file has this one mapping.

Mapping:

* ``text`` -> text; ``thinking`` (and ``reasoning`` with text) -> thinking;
  ``image`` -> an image placeholder; ``toolRequest`` and
  ``frontendToolRequest`` -> tool_use (``id``, ``toolCall.value.name`` and
  ``arguments``; a call Goose could not parse, ``toolCall.status: error``,
  becomes a call of ``invalid_tool_call`` holding the error, and so does a
  damaged one without a name, with a warning);
  ``toolResponse`` -> its tool_result, the text of ``toolResult.value`` (the
  legacy list of content or a ``CallToolResult``'s ``content``; items whose
  ``annotations.audience`` leaves out the assistant are for the user only and
  dropped, as Goose does when it builds a request), ``is_error`` for
  ``status: error`` or ``isError``. Results come first in their user message,
  then the user's words.
* ``redactedThinking``, ``toolConfirmationRequest``, ``actionRequired``,
  ``systemNotification``, ``summarizationRequested``,
  ``contextLengthExceeded`` and ``conversationCompacted`` send nothing: each
  is counted in ``notes.skipped`` as ``content:<type>``
  (``contextLengthExceeded`` also warns); a type this reader does not know as
  ``content:<type> (unknown type)``; lines that are no message as
  ``record:<kind>``. ``notes.records_read`` counts content items (and such
  lines), so the skipped share is one of items.
* Visibility: a message visible to neither the user nor the agent is an
  archived copy and is skipped (``message:invisible``). Goose compacts by
  hiding the history from the agent (``agentVisible: false``), then adding
  a summary and a continuation turn visible to the agent only: the hidden
  history is kept as the raw conversation, and the first agent-only message
  after it becomes a boundary marker plus the summary (tagged ``summary``),
  an agent-only assistant turn right after it the placeholder (tagged
  ``placeholder``); a replay undoes them with the marker.
* Usage: Goose records tokens per session, not per message. Its
  ``input_tokens`` / ``output_tokens`` are the provider's last usage, so
  they become the last assistant message's ``Usage``; the accumulated totals
  go into a warning line.
* meta: the session id (export ``id``, else the file name), ``name`` or
  ``description`` as title, ``working_dir``, and
  ``provider_name/model_config.model_name`` as the model.

Detection: 95 for JSONL whose records are Goose messages (``role``, integer
``created``, a ``content`` list of typed items; a first metadata line
counts), or an export / message document; 90 for a document too large to
probe whose head shows ``"conversation"`` or Goose's camelCase content
types; 0 otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImageBlock, ImportNotes, Message, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, document_or_log, parse_timestamp, opt_str, as_dict, positive_int
from ..anthropic_blocks import base64_size
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "NAME", "STRATEGY", "is_message", "from_records", "from_document", "read", "sniff"]

NAME = "goose"
# The strategy of the boundary a Goose compaction leaves.
STRATEGY = "goose_compaction"

_TOOL_CALLS = frozenset({"toolRequest", "frontendToolRequest"})
# Content that is the UI's or Goose's own bookkeeping: never sent to the model.
_NOT_SENT = frozenset(
    {
        "redactedThinking", "toolConfirmationRequest", "actionRequired", "systemNotification",
        "summarizationRequested", "contextLengthExceeded", "conversationCompacted",
    }
)  # fmt: skip
_CONTENT_TYPES = _TOOL_CALLS | _NOT_SENT | {"text", "image", "toolResponse", "thinking", "reasoning"}
# Keys of the session metadata line; two of them mark it (a message has none).
_META_KEYS = frozenset({"working_dir", "description", "message_count", "total_tokens", "input_tokens", "output_tokens", "schedule_id"})
_INVALID_CALL = "invalid_tool_call"


def is_message(record: Any) -> bool:
    """Whether ``record`` is a Goose message: ``role``, integer ``created``, a ``content`` list."""
    return (
        isinstance(record, dict)
        and record.get("role") in ("user", "assistant")
        and isinstance(record.get("created"), int)
        and not isinstance(record.get("created"), bool)
        and isinstance(record.get("content"), list)
    )


def _is_metadata(record: Any) -> bool:
    return isinstance(record, dict) and "role" not in record and len(_META_KEYS.intersection(record)) >= 2


def _visibility(msg: dict[str, Any]) -> tuple[bool, bool]:
    meta = as_dict(msg.get("metadata"))
    return meta.get("userVisible") is not False, meta.get("agentVisible") is not False


def _for_assistant(item: dict[str, Any]) -> bool:
    audience = as_dict(item.get("annotations")).get("audience")
    return not isinstance(audience, list) or "assistant" in audience


def _result_text(items: Any, notes: ImportNotes) -> str:
    """The text a tool result's content items send the model."""
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        it = as_dict(item)
        if not _for_assistant(it):
            notes.skip("tool output for the user only")
            continue
        kind = it.get("type")
        if kind == "text" and isinstance(it.get("text"), str):
            out.append(it["text"])
        elif kind == "resource":
            res = as_dict(it.get("resource"))
            out.append(res["text"] if isinstance(res.get("text"), str) else f"[resource {opt_str(res.get('uri')) or ''}]".strip())
        elif kind == "image":
            out.append(f"[image {opt_str(it.get('mimeType')) or 'image'}]")
        else:
            notes.skip(f"tool output:{kind or 'unknown'}")
    return "\n".join(out)


class _Session:
    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.hidden = 0  # messages hidden from the agent since the last boundary
        self.summary_at: int | None = None  # index of the summary just written, while a placeholder may follow
        self.uses: set[str] = set()

    def _blocks(self, msg: dict[str, Any], key: str, loc: Loc) -> tuple[list[Block], list[tuple[str, str, bool]]]:
        """The message's blocks and its tool results (call id, text, is_error), results apart."""
        blocks: list[Block] = []
        results: list[tuple[str, str, bool]] = []
        for n, item in enumerate(msg["content"]):
            it = as_dict(item)
            kind = opt_str(it.get("type")) or "unknown"
            if kind == "text":
                if isinstance(it.get("text"), str) and it["text"].strip():
                    blocks.append(TextBlock(text=it["text"]))
            elif kind in ("thinking", "reasoning"):
                text = it.get("thinking") if kind == "thinking" else it.get("text")
                if isinstance(text, str) and text.strip():
                    blocks.append(ThinkingBlock(thinking=text, signature=opt_str(it.get("signature"))))
                else:
                    self.notes.skip(f"content:{kind} (empty)")
            elif kind == "image":
                data = it.get("data")
                size = base64_size(data) if isinstance(data, str) else 0
                blocks.append(ImageBlock(media_type=opt_str(it.get("mimeType")) or "image/png", size_bytes=size))
            elif kind in _TOOL_CALLS:
                blocks.append(self._use(it, kind, f"{key}.{n}", loc.at("content").at(n)))
            elif kind == "toolResponse":
                call = opt_str(it.get("id"))
                if call is None:
                    self.notes.skip("content:toolResponse (no id)")
                    continue
                results.append((call, *self._result(it)))
            elif kind in _NOT_SENT:
                self.notes.skip(f"content:{kind}")
                if kind == "contextLengthExceeded":
                    self.notes.warnings.append(f"{loc.where}: Goose hit the model's context limit here (contextLengthExceeded)")
            else:
                self.notes.skip(f"content:{kind} (unknown type)")
        return blocks, results

    def _use(self, item: dict[str, Any], kind: str, key: str, loc: Loc) -> Block:
        call = as_dict(item.get("toolCall"))
        value = as_dict(call.get("value"))
        if call.get("status") == "success" and opt_str(value.get("name")):
            args = value.get("arguments")
            tool_input = args if isinstance(args, dict) else ({} if args is None else {"value": args})
            name = str(value["name"])
        else:
            # The model's call did not parse (or, damaged, lost its name): Goose answers it with an error
            # result, so it stays a call, and the rest of the session still imports.
            if call.get("status") != "error" and value:
                self.notes.warnings.append(f"{loc.where}: {kind} without a tool name: kept as an {_INVALID_CALL} call")
            tool_input = {"error": str(call.get("error") or "invalid tool call")}
            name = _INVALID_CALL
        use = self.b.use(opt_str(item.get("id")), name, tool_input, key=key)
        self.uses.add(opt_str(item.get("id")) or use.id)
        return use

    def _result(self, item: dict[str, Any]) -> tuple[str, bool]:
        res = as_dict(item.get("toolResult"))
        if res.get("status") == "error":
            return str(res.get("error") or "tool error"), True
        value = res.get("value")
        if isinstance(value, dict):
            # A CallToolResult (newer Goose); older sessions hold the content list itself.
            return _result_text(value.get("content"), self.notes), value.get("isError") is True
        return _result_text(value, self.notes), False

    def message(self, msg: dict[str, Any], index: int, loc: Loc) -> None:
        key = opt_str(msg.get("id")) or f"m{index}"
        stamp = parse_timestamp(msg.get("created"))
        user_visible, agent_visible = _visibility(msg)
        if not user_visible and not agent_visible:
            self.notes.skip("message:invisible")
            return
        blocks, results = self._blocks(msg, key, loc)
        tag: Any = None
        if agent_visible and not user_visible:
            if self.hidden and msg["role"] == "user":
                self._boundary(key, stamp)
                tag = "summary"
            elif self.summary_at is not None and self.summary_at == len(self.b.messages) - 1 and msg["role"] == "assistant":
                tag = "placeholder"
        elif not agent_visible and (blocks or results):
            self.hidden += 1
        self.summary_at = None
        if msg["role"] == "assistant":
            if blocks:
                self.b.add("assistant", blocks, key=key, timestamp=stamp, tag=tag)
            elif not results:
                self.notes.skip("message:assistant (nothing sent)")
            for call, text, err in results:
                self._answer(call, text, err, key, stamp)
            return
        self._user(blocks, results, key, stamp, tag)
        if tag == "summary":
            self.summary_at = len(self.b.messages) - 1

    def _answer(self, call: str, text: str, is_error: bool, key: str, stamp: datetime | None) -> None:
        if call not in self.uses:
            # A result without its call would make every later request invalid: counted, not kept.
            self.notes.skip("content:toolResponse (unknown call)")
            self.notes.orphan_tool_results.append(call)
            return
        self.uses.discard(call)
        self.b.result(call, text, key=f"{key}.{call}", is_error=is_error, timestamp=stamp)

    def _user(self, blocks: list[Block], results: list[tuple[str, str, bool]], key: str, stamp: datetime | None, tag: Any) -> None:
        for call, text, err in results:
            self._answer(call, text, err, key, stamp)
        if not blocks:
            # Results only: a next message of results still joins this user turn.
            if not results:
                self.notes.skip("message:user (nothing sent)")
            return
        self.b.user_turn(blocks, key=key, timestamp=stamp, tag=tag)

    def _boundary(self, key: str, stamp: datetime | None) -> None:
        boundary = Boundary(trigger="import", strategy=STRATEGY, timestamp=stamp, messages_removed=self.hidden)
        self.b.boundary(boundary, f"[Conversation compacted by Goose: {self.hidden} message(s) hidden from the agent]", key=key, timestamp=stamp)
        self.hidden = 0


def _set_last_usage(messages: list[Message], session: dict[str, Any], notes: ImportNotes) -> None:
    usage = Usage(input_tokens=positive_int(session.get("input_tokens")), output_tokens=positive_int(session.get("output_tokens")))
    if usage.total:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].role == "assistant" and messages[i].tag is None:
                messages[i] = messages[i].model_copy(update={"usage": usage})
                break
    totals = [f"{k.removeprefix('accumulated_')} {session[k]}" for k in ("accumulated_input_tokens", "accumulated_output_tokens", "accumulated_total_tokens") if positive_int(session.get(k))]
    if totals:
        notes.warnings.append(f"Goose recorded usage for the whole session only: {', '.join(totals)} (accumulated); the last request's usage is on the last reply")


def from_records(records: Iterable[tuple[Any, Loc]], notes: ImportNotes, *, file: str | None, session: dict[str, Any] | None = None) -> Transcript:
    """Convert Goose messages (with a metadata record first, or ``session`` given) into a transcript."""
    s = _Session(notes)
    header = dict(session or {})
    count = 0
    for i, (rec, loc) in enumerate(records):
        if is_message(rec):
            count += 1
            notes.records_read += max(0, len(rec["content"]) - 1)
            s.message(rec, i, loc)
        elif i == 0 and _is_metadata(rec):
            header = {**rec, **header}
        else:
            notes.skip(f"record:{opt_str(as_dict(rec).get('type')) or ('unknown' if isinstance(rec, dict) else 'non_object')}")
    messages = s.b.finish()
    if not count:
        raise TranscriptError("no Goose messages found", file=file, expected="messages shaped {role, created, content: [{type, ...}]}")
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(f"{count} Goose messages but none that was sent to the model", file=file, expected="text or tool content")
    _set_last_usage(messages, header, notes)
    provider = opt_str(header.get("provider_name"))
    model = opt_str(as_dict(header.get("model_config")).get("model_name"))
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=opt_str(header.get("id")) or (Path(file).stem if file else None),
        title=opt_str(header.get("name")) or opt_str(header.get("description")) or "Goose session",
        model=f"{provider}/{model}" if provider and model else model,
        cwd=opt_str(header.get("working_dir")),
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


def _messages_of(doc: Any) -> tuple[list[Any], str] | None:
    if isinstance(doc, list):
        return doc, "$"
    if isinstance(doc, dict):
        for key in ("conversation", "messages"):
            if isinstance(doc.get(key), list):
                return doc[key], f"$.{key}"
    return None


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A ``goose session export`` document, ``{messages: [...]}``, or a bare list of messages."""
    found = _messages_of(doc)
    if found is None:
        raise TranscriptError("not a Goose session", file=file, where="$", expected="a session export {id, conversation: [messages]}")
    items, path = found
    base = Loc(file, path)
    notes = ImportNotes(records_read=len(items))
    header = {k: v for k, v in doc.items() if k not in ("conversation", "messages")} if isinstance(doc, dict) else {}
    return from_records(((m, base.at(i)) for i, m in enumerate(items)), notes, file=file, session=header)


def _one_line_export(first: Any) -> bool:
    # A session line never holds the conversation; an export does, also when written on one line
    # (jq -c, an API response), although it carries the metadata keys too.
    return _messages_of(first) is not None and (not _is_metadata(first) or isinstance(first.get("conversation"), list))


def read(path: Path) -> Transcript:
    file = str(path)
    notes = ImportNotes()
    doc, records = document_or_log(path, notes, "a Goose session", _one_line_export)
    if records is None:
        return from_document(doc, file=file)
    return from_records(records, notes, file=file)


# -- detection -------------------------------------------------------------------

_HEAD = re.compile(r'"type"\s*:\s*"(toolRequest|toolResponse|frontendToolRequest|redactedThinking|toolConfirmationRequest)"')


def _typed(msg: dict[str, Any]) -> bool:
    items = msg["content"]
    return bool(items) and all(isinstance(i, dict) and isinstance(i.get("type"), str) and i["type"] in _CONTENT_TYPES for i in items)


def _score(records: list[Any]) -> int:
    body = records[1:] if records and _is_metadata(records[0]) else records
    msgs = [r for r in body[:20] if is_message(r)]
    if not msgs or len(msgs) * 2 <= len(body[:20]) or not any(map(_typed, msgs)):
        return 0
    return 95


def sniff(probe: FileHead) -> int:
    if probe.shape == "jsonl" and probe.records:
        return _score(probe.records)
    found = _messages_of(probe.document)
    if found is not None:
        return _score(found[0])
    if probe.document is None and probe.shape == "json" and not probe.records:
        head = probe.head
        if _HEAD.search(head) and re.search(r'"created"\s*:\s*\d', head):
            return 90
    return 0


FORMAT = Format(
    name=NAME,
    description="Goose sessions (session JSONL with a metadata line, goose session export JSON)",
    sniff=sniff,
    read=read,
    more_specific_than=REQUEST_BODIES,
)
