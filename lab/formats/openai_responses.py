"""OpenAI Responses API items and Codex CLI rollouts.

Accepted sources:

* a Responses request body ``{"model", "instructions", "input": [...] | "text",
  "tools"}`` or a bare list of input items (JSON);
* a Codex CLI rollout (JSONL): records ``{timestamp, type, payload}``.
  ``session_meta`` gives the session id, cli version and ``instructions`` (a
  system message); ``response_item`` payloads are Responses items;
  ``compacted`` (``{message, replacement_history?}``) becomes a boundary
  followed by the summary, or by the replacement history when Codex recorded
  one; ``turn_context`` (model taken from the first), ``event_msg`` (usage
  taken from ``token_count``) and unknown record types are skipped and counted;
* an older Codex rollout (JSONL): a first line ``{id, timestamp,
  instructions}`` and then bare Responses items (``record_type`` state lines
  are skipped).

Item mapping: ``message`` (input_text / output_text / refusal / input_image
parts; roles system and developer -> system) -> text; ``reasoning`` ->
thinking (summary text, else reasoning content; encrypted-only reasoning is
counted, not kept); ``function_call``, ``custom_tool_call``,
``local_shell_call``, ``computer_call`` -> tool_use; their ``*_output`` items
-> tool_result (consecutive ones in one user message). Consecutive assistant
items (reasoning, text, calls) form one assistant message. Server-side tool
items (web_search_call, ...) and unknown types are skipped and counted.

Detection (``sniff``): 95 for a Codex rollout (``session_meta`` /
``response_item`` records with ``payload``), 85 for an older rollout, 90 for
documents whose items carry Responses types or ``input_text``/``output_text``
parts, 0 otherwise (plain ``{role, content}`` lists belong to Chat).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from ..core.messages import Block, Boundary, ImportNotes, block_text, TextBlock, ThinkingBlock, Transcript, TranscriptMeta
from ..errors import TranscriptError
from ._build import (
    HistoryBuilder,
    Loc,
    image_from_url,
    need_dict,
    openai_usage,
    parse_arguments,
    parse_timestamp,
    text_block,
    tool_specs,
)
from .jsonio import iter_jsonl, read_json
from .registry import Format, Probe, register

__all__ = ["FORMAT", "ITEM_TYPES", "read", "read_rollout", "from_document", "from_items", "add_item", "sniff"]

NAME = "openai_responses"

_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "computer_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output"}
ITEM_TYPES = {"message", "reasoning"} | _CALLS | _OUTPUTS
_CODEX_RECORDS = {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}


def _parts(content: Any, notes: ImportNotes, loc: Loc) -> list[Block]:
    if isinstance(content, str):
        return text_block(content)
    if content is None:
        return []
    if not isinstance(content, list):
        raise loc.error(f"content is a {type(content).__name__}", expected="a string or a list of content parts")
    blocks: list[Block] = []
    for i, part in enumerate(content):
        part = need_dict(part, loc.at(i), "content part")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            blocks += text_block(part.get("text"))
        elif kind == "refusal":
            blocks += text_block(part.get("refusal"))
        elif kind == "input_image":
            blocks.append(image_from_url(part.get("image_url") or part.get("file_id")))
        else:
            notes.skip(f"content part:{kind}")
    return blocks


def _output_text(output: Any, notes: ImportNotes, loc: Loc) -> tuple[str, bool]:
    """A call output as (text, is_error); Codex once wrote ``{content, success}``."""
    if isinstance(output, dict):
        text = output.get("content") if isinstance(output.get("content"), str) else output.get("output")
        return (text if isinstance(text, str) else ""), output.get("success") is False
    if isinstance(output, list):
        texts = [b.text if isinstance(b, TextBlock) else "[image]" for b in _parts(output, notes, loc)]
        return "\n".join(texts), False
    return (output if isinstance(output, str) else ""), False


def add_item(b: HistoryBuilder, item: Any, loc: Loc, key: str, stamp: datetime | None = None) -> None:
    """Append one Responses item to ``b``."""
    item = need_dict(item, loc, "item")
    notes = b.notes
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str):
        raise loc.at("type").error("item without a string type", expected="a Responses item type such as 'message'")
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str):
            raise loc.error("message item without a role", expected="a string 'role'")
        blocks = _parts(item.get("content"), notes, loc.at("content"))
        if role in ("system", "developer"):
            b.add("system", blocks, key=key, timestamp=stamp)
        elif role == "user":
            b.add("user", blocks, key=key, timestamp=stamp)
        elif role == "assistant":
            b.add("assistant", blocks, key=key, timestamp=stamp, merge=True)
            _chat_calls(b, item, loc, key, stamp)
        elif role in ("tool", "function") and isinstance(item.get("tool_call_id") or item.get("name"), str):
            # A Chat Completions tool message in a {"type": "message"} wrapper (home-made logs).
            call_id = item.get("tool_call_id") or f"call_{item.get('name')}"
            text = "\n".join(block_text(x) for x in blocks)
            b.result(call_id, text, key=key, timestamp=stamp)
        else:
            notes.skip(f"role:{role}")
    elif kind == "reasoning":
        texts = [t.text for t in _parts(item.get("summary") or [], notes, loc.at("summary")) if isinstance(t, TextBlock)]
        if not texts:
            texts = [t.text for t in _parts(item.get("content") or [], notes, loc.at("content")) if isinstance(t, TextBlock)]
        if texts:
            b.add("assistant", [ThinkingBlock(thinking="\n\n".join(texts))], key=key, timestamp=stamp, merge=True)
        else:
            notes.skip("reasoning:encrypted")
    elif kind in _CALLS:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise loc.error(f"{kind} without a call_id", expected="a string 'call_id'")
        if kind == "function_call":
            name = item.get("name")
            args = parse_arguments(item.get("arguments"), notes, loc.at("arguments"))
        elif kind == "custom_tool_call":
            name, raw = item.get("name"), item.get("input")
            args = {"input": raw if isinstance(raw, str) else ""}
        else:
            name = "local_shell" if kind == "local_shell_call" else "computer"
            action = item.get("action")
            args = action if isinstance(action, dict) else {}
        if not isinstance(name, str) or not name:
            raise loc.error(f"{kind} without a name", expected="a string 'name'")
        use = b.use(call_id, name, args, key=key)
        b.add("assistant", [use], key=key, timestamp=stamp, merge=True)
    elif kind in _OUTPUTS:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise loc.error(f"{kind} without a call_id", expected="a string 'call_id'")
        text, is_error = _output_text(item.get("output"), notes, loc.at("output"))
        b.result(call_id, text, key=key, is_error=is_error, timestamp=stamp)
    else:
        notes.skip(f"item:{kind}")


def _chat_calls(b: HistoryBuilder, item: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    """The Chat Completions ``tool_calls`` (or legacy ``function_call``) of an assistant message item.

    Home-made logs wrap Chat messages as ``{"type": "message", ...}``, which is
    also a Responses item; their calls must not be dropped on the way.
    """
    calls = item.get("tool_calls")
    legacy = item.get("function_call")
    if calls is None and isinstance(legacy, dict):
        calls = [{"id": f"call_{legacy.get('name')}", "function": legacy}]
    if calls is None:
        return
    if not isinstance(calls, list):
        raise loc.at("tool_calls").error("tool_calls is not a list", expected="a list of {id, function: {name, arguments}}")
    for k, call in enumerate(calls):
        where = loc.at(f"tool_calls[{k}]")
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise where.error("tool call without a function name", expected="{id, function: {name, arguments}}")
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        use = b.use(call_id, fn["name"], parse_arguments(fn.get("arguments"), b.notes, where.at("function.arguments")), key=f"{key}.{k}")
        b.add("assistant", [use], key=key, timestamp=stamp, merge=True)


def from_items(
    items: Iterable[Any], *, file: str | None = None, path: str = "$", instructions: str | None = None
) -> Transcript:
    """Convert Responses items found at JSON ``path``; ``instructions`` becomes the system message."""
    notes = ImportNotes()
    b = HistoryBuilder(notes)
    if instructions:
        b.add("system", [TextBlock(text=instructions)], key="instructions")
    base = Loc(file, path)
    n = 0
    for n, item in enumerate(items, 1):
        add_item(b, item, base.at(n - 1), f"i{n - 1}")
    notes.records_read = n
    return Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file), messages=b.finish(), notes=notes)


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A Responses request body or a bare list of input items."""
    if isinstance(doc, list):
        return from_items(doc, file=file)
    if not isinstance(doc, dict) or "input" not in doc:
        raise TranscriptError("no Responses input found", file=file, where="$", expected="a list of items or an object with 'input'")
    raw = doc["input"]
    items = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise TranscriptError("input is not a list", file=file, where="$.input", expected="a string or a list of items")
    t = from_items(items, file=file, path="$.input", instructions=_instructions(doc.get("instructions")))
    t.meta.model = doc.get("model") if isinstance(doc.get("model"), str) else None
    t.tools = tool_specs(doc.get("tools"))
    return t


# -- Codex rollouts ----------------------------------------------------------------


def _instructions(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def _compacted(b: HistoryBuilder, payload: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    boundary = Boundary(trigger="import", strategy="codex_compact", timestamp=stamp)
    b.add("system", [], key=f"{key}.boundary", timestamp=stamp, tag="boundary", boundary=boundary)
    history = payload.get("replacement_history")
    if isinstance(history, list) and history:
        for j, item in enumerate(history):
            add_item(b, item, loc.at("replacement_history").at(j), f"{key}.{j}", stamp)
        b.notes.warnings.append(f"{loc.where}: compaction replaced the history with {len(history)} item(s)")
        return
    message = payload.get("message")
    if isinstance(message, str) and message:
        b.add("user", [TextBlock(text=message)], key=f"{key}.summary", timestamp=stamp, tag="summary")


def read_rollout(path: Path) -> Transcript:
    file = str(path)
    notes = ImportNotes()
    b = HistoryBuilder(notes)
    meta = TranscriptMeta(source_format=NAME, source_path=file)
    first = True
    n = 0
    for lineno, rec in iter_jsonl(path):
        n += 1
        loc = Loc(file, "$", lineno)
        rec = need_dict(rec, loc, "record")
        key = f"l{lineno}"
        stamp = parse_timestamp(rec.get("timestamp"))
        kind = rec.get("type")
        if kind is not None and not isinstance(kind, str):
            raise loc.at("type").error("record type is not a string", expected="a Codex record type such as 'response_item'")
        if kind in _CODEX_RECORDS and "payload" in rec:
            payload = need_dict(rec["payload"], loc.at("payload"), "payload")
            if kind == "session_meta":
                meta.session_id = payload.get("id") if isinstance(payload.get("id"), str) else meta.session_id
                version, cwd = payload.get("cli_version"), payload.get("cwd")
                meta.title = " ".join(str(x) for x in ("Codex CLI", version, cwd) if x)
                text = _instructions(payload.get("instructions")) or _instructions(payload.get("base_instructions"))
                if text:
                    b.add("system", [TextBlock(text=text)], key=key, timestamp=stamp)
            elif kind == "response_item":
                add_item(b, payload, loc.at("payload"), key, stamp)
            elif kind == "compacted":
                _compacted(b, payload, loc.at("payload"), key, stamp)
            elif kind == "turn_context":
                if meta.model is None and isinstance(payload.get("model"), str):
                    meta.model = payload["model"]
                notes.skip("turn_context")
            else:
                sub = payload.get("type")
                if sub == "token_count" and isinstance(payload.get("info"), dict):
                    usage = openai_usage(payload["info"].get("last_token_usage"))
                    if usage is not None:
                        b.set_last_usage(usage)
                notes.skip(f"event_msg:{sub}")
        elif first and "type" not in rec and ("instructions" in rec or "id" in rec):
            # Older rollouts: a bare session header, then bare items.
            meta.session_id = rec.get("id") if isinstance(rec.get("id"), str) else None
            meta.title = "Codex CLI rollout"
            text = _instructions(rec.get("instructions"))
            if text:
                b.add("system", [TextBlock(text=text)], key=key, timestamp=parse_timestamp(rec.get("timestamp")))
        elif "record_type" in rec:
            notes.skip(f"record_type:{rec['record_type']}")
        elif kind in ITEM_TYPES or (kind is None and "role" in rec):
            add_item(b, rec, loc, key, stamp)
        else:
            notes.skip(f"record:{kind}")
        first = False
    notes.records_read = n
    return Transcript(meta=meta, messages=b.finish(), notes=notes)


def _is_rollout(path: Path) -> bool:
    """JSONL when the first non-blank line is a whole JSON object and another line follows."""
    with Path(path).open("r", encoding="utf-8", errors="replace") as fh:
        first = next((line for line in fh if line.strip()), "")
        more = any(line.strip() for line in fh)
    try:
        rec = json.loads(first)
    except ValueError:
        return False
    return isinstance(rec, dict) and (more or (_type_in(rec, _CODEX_RECORDS) and "payload" in rec))


def read(path: Path) -> Transcript:
    try:
        rollout = _is_rollout(path)
    except OSError as exc:
        raise TranscriptError(f"cannot read file: {exc}", file=str(path)) from None
    if rollout:
        return read_rollout(path)
    return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_CODEX = re.compile(r'"type"\s*:\s*"(?:session_meta|response_item)"\s*,\s*"payload"\s*:')
_HEAD_ITEMS = re.compile(
    r'"type"\s*:\s*"(?:function_call|function_call_output|input_text|output_text|reasoning|custom_tool_call|local_shell_call)"'
)


def _type_in(d: dict[str, Any], options: set[str] | tuple[str, ...]) -> bool:
    kind = d.get("type")
    return isinstance(kind, str) and kind in options


def _items_score(items: Any) -> int:
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        return 0
    for item in items:
        if _type_in(item, ITEM_TYPES - {"message"}) or (item.get("type") == "message" and "role" in item):
            return 90
        content = item.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and _type_in(p, ("input_text", "output_text")) for p in content):
            return 90
    return 0


def sniff(probe: Probe) -> int:
    if probe.shape == "jsonl" and probe.records:
        recs = [r for r in probe.records if isinstance(r, dict)]
        if any(_type_in(r, _CODEX_RECORDS) and isinstance(r.get("payload"), dict) for r in recs):
            return 95
        if recs and "type" not in recs[0] and "instructions" in recs[0]:
            return 85 if any(_type_in(r, ITEM_TYPES) for r in recs[1:]) or len(recs) == 1 else 0
        return 80 if recs and all(_type_in(r, ITEM_TYPES) or "record_type" in r for r in recs) else 0
    doc = probe.document
    if doc is not None:
        if isinstance(doc, dict):
            if _type_in(doc, _CODEX_RECORDS) and isinstance(doc.get("payload"), dict):
                return 95  # a rollout of a single record
            return _items_score(doc.get("input")) if "messages" not in doc else 0
        return _items_score(doc)
    head = probe.head
    if _HEAD_CODEX.search(head):
        return 95
    if re.search(r'"input"\s*:\s*\[', head) and _HEAD_ITEMS.search(head):
        return 90
    if head.lstrip().startswith("[") and _HEAD_ITEMS.search(head):
        return 80
    return 0


FORMAT = register(
    Format(
        name=NAME,
        description="OpenAI Responses API items and Codex CLI rollout JSONL",
        sniff=sniff,
        read=read,
    )
)
