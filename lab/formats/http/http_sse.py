"""Streamed model responses, assembled into the body the same call returns unstreamed.

A logged streamed response arrives in one of several spellings: the raw
``text/event-stream`` text (claude-trace's ``body_raw``, a proxy's body), a
list of events already parsed (each a bare payload, or ``{event, data}`` with
``data`` a dict or JSON text), a list of raw ``"event: ...\\ndata: ..."``
strings, or an AWS Bedrock event stream (base64 ``bytes`` payloads).
``stream_events`` turns any of them into payload dicts; ``assemble`` folds the
payloads of one API into the unstreamed body, so the importer reads streamed
and unstreamed responses with one code path:

* Anthropic Messages: ``message_start`` (id, model, input usage),
  ``content_block_start`` / ``content_block_delta`` (``text_delta``,
  ``input_json_delta`` partials joined then parsed, ``thinking_delta``,
  ``signature_delta``) / ``content_block_stop``, ``message_delta`` (output
  usage, stop reason), ``message_stop``, ``ping``, ``error``;
* Chat Completions: ``chat.completion.chunk`` deltas of choice 0 (content,
  ``reasoning_content``, ``tool_calls`` joined by their ``index``) and the
  usage chunk;
* Responses: ``response.completed`` (or ``incomplete`` / ``failed``) carries the
  whole output; without it, the ``response.output_item.done`` items seen.

Unknown event kinds are counted as ``sse:<kind>`` in ``ImportNotes.skipped``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from ...core.messages import ImportNotes
from ..history_builder import Loc, parse_arguments

__all__ = ["stream_events", "assemble", "anthropic_message", "chat_completion", "responses_body"]

_ANTHROPIC_QUIET = {"content_block_stop", "message_stop", "ping"}
# Bedrock's binary event stream wraps each Anthropic event as {"bytes": "<base64 JSON>"}.
_BEDROCK_BYTES = re.compile(r'"bytes"\s*:\s*"([A-Za-z0-9+/=]+)"')


def _payload(text: str, name: str | None, notes: ImportNotes) -> dict[str, Any] | None:
    if text.strip() == "[DONE]":  # OpenAI's end-of-stream sentinel
        return None
    try:
        value = json.loads(text)
    except ValueError:
        notes.skip("sse:unreadable")
        return None
    if not isinstance(value, dict):
        notes.skip("sse:unreadable")
        return None
    if name and "type" not in value:
        value["type"] = name
    return value


def _bedrock(text: str, notes: ImportNotes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for chunk in _BEDROCK_BYTES.findall(text):
        try:
            decoded = base64.b64decode(chunk).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            notes.skip("sse:unreadable")
            continue
        payload = _payload(decoded, None, notes)
        if payload is not None:
            events.append(payload)
    return events


def _from_text(text: str, notes: ImportNotes) -> list[dict[str, Any]]:
    """Payloads of SSE text; text without ``data:`` fields is read as one JSON payload per line."""
    if '"bytes"' in text and "data:" not in text:
        return _bedrock(text, notes)
    events: list[dict[str, Any]] = []
    name: str | None = None
    data: list[str] = []
    saw_data = False
    for line in text.splitlines() + [""]:
        if not line.strip():
            if data:
                payload = _payload("\n".join(data), name, notes)
                if payload is not None:
                    events.append(payload)
            name, data = None, []
            continue
        if line.startswith(":"):  # an SSE comment (keep-alive)
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value.strip()
        elif field == "data":
            data.append(value)
            saw_data = True
    if saw_data:
        return events
    # Some proxies log a stream as one JSON chunk per line, without the SSE framing.
    for line in text.splitlines():
        if line.strip():
            payload = _payload(line, None, notes)
            if payload is not None:
                events.append(payload)
    return events


def stream_events(raw: Any, notes: ImportNotes) -> list[dict[str, Any]]:
    """The event payloads of a logged stream, whatever spelling it was logged in."""
    if isinstance(raw, str):
        return _from_text(raw, notes)
    if not isinstance(raw, list):
        notes.skip("sse:invalid")
        return []
    events: list[dict[str, Any]] = []
    for item in raw:
        if isinstance(item, str):
            events += _from_text(item, notes)
        elif isinstance(item, dict) and "data" in item and ("event" in item or "type" not in item):
            # claude-trace's {event, data, timestamp}: the payload is ``data``, named by ``event``.
            data, name = item["data"], item.get("event") if isinstance(item.get("event"), str) else None
            if isinstance(data, dict):
                payload = dict(data)
                if name and "type" not in payload:
                    payload["type"] = name
                events.append(payload)
            elif isinstance(data, str):
                payload_or_none = _payload(data, name, notes)
                if payload_or_none is not None:
                    events.append(payload_or_none)
            else:
                notes.skip("sse:invalid")
        elif isinstance(item, dict):
            events.append(item)
        else:
            notes.skip("sse:invalid")
    return events


def _error_text(event: dict[str, Any]) -> str:
    err = event.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"][:200]
    if isinstance(event.get("message"), str):
        return event["message"][:200]
    return "no message"


def _int_key(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _block_delta(ev: dict[str, Any], blocks: dict[int, dict[str, Any]], partial: dict[int, list[str]], notes: ImportNotes) -> None:
    """Apply one ``content_block_delta`` to the block it names; tool input JSON is collected in ``partial``."""
    index = _int_key(ev.get("index"))
    delta: Any = ev.get("delta")
    target = blocks.get(index) if index is not None else None
    if index is None or target is None or not isinstance(delta, dict):
        notes.skip("sse:delta_without_block")
        return
    dt = delta.get("type")
    if dt == "text_delta" and isinstance(delta.get("text"), str):
        target["text"] = str(target.get("text") or "") + delta["text"]
    elif dt == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        partial.setdefault(index, []).append(delta["partial_json"])
    elif dt == "thinking_delta" and isinstance(delta.get("thinking"), str):
        target["thinking"] = str(target.get("thinking") or "") + delta["thinking"]
    elif dt == "signature_delta" and isinstance(delta.get("signature"), str):
        target["signature"] = str(target.get("signature") or "") + delta["signature"]
    elif dt != "citations_delta":  # citations add no text of their own
        notes.skip(f"sse:{dt if isinstance(dt, str) else 'delta:invalid'}")


def anthropic_message(events: list[dict[str, Any]], notes: ImportNotes, loc: Loc) -> dict[str, Any] | None:
    """An Anthropic Messages stream as the ``{type: message, content, usage}`` body; None when it holds nothing."""
    message: dict[str, Any] = {"type": "message", "role": "assistant"}
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    started = False
    for ev in events:
        kind = ev.get("type")
        if kind == "message_start":
            started = True
            start: Any = ev.get("message") if isinstance(ev.get("message"), dict) else {}
            message.update({k: start[k] for k in ("id", "model") if isinstance(start.get(k), str)})
            if isinstance(start.get("usage"), dict):
                usage.update(start["usage"])
        elif kind == "content_block_start":
            index, block = _int_key(ev.get("index")), ev.get("content_block")
            if index is None or not isinstance(block, dict):
                notes.skip("sse:content_block_start:invalid")
                continue
            blocks[index] = dict(block)
        elif kind == "content_block_delta":
            _block_delta(ev, blocks, partial, notes)
        elif kind == "message_delta":
            if isinstance(ev.get("usage"), dict):
                # Later counts replace earlier ones; a null means "not reported here", not zero.
                usage.update({k: v for k, v in ev["usage"].items() if v is not None})
            change = ev.get("delta")
            if isinstance(change, dict) and isinstance(change.get("stop_reason"), str):
                message["stop_reason"] = change["stop_reason"]
        elif kind == "error":
            notes.warnings.append(f"{loc.where}: the stream reported an error: {_error_text(ev)}")
        elif not isinstance(kind, str) or kind not in _ANTHROPIC_QUIET:  # a list as the type would not hash
            notes.skip(f"sse:{kind if isinstance(kind, str) else 'invalid'}")
    for index, parts in partial.items():
        blocks[index]["input"] = parse_arguments("".join(parts), notes, loc.at("input"))
    if not started and not blocks:
        return None
    message["content"] = [blocks[i] for i in sorted(blocks)]
    if usage:
        message["usage"] = usage
    return message


def _merge_tool_calls(calls: dict[int, dict[str, Any]], chunks: Any) -> None:
    """Add one delta's ``tool_calls`` chunks to ``calls`` (by the call's index; arguments arrive in pieces)."""
    for tc in chunks or []:
        if not isinstance(tc, dict):
            continue
        index = _int_key(tc.get("index"))
        slot = calls.setdefault(len(calls) if index is None else index, {"type": "function", "name": "", "arguments": []})
        if isinstance(tc.get("id"), str) and tc["id"]:
            slot["id"] = tc["id"]
        fn: Any = tc.get("function") if isinstance(tc.get("function"), dict) else {}
        # The name comes whole in the call's first chunk; later chunks repeat it at most.
        if isinstance(fn.get("name"), str) and not slot["name"]:
            slot["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["arguments"].append(fn["arguments"])


def chat_completion(events: list[dict[str, Any]], notes: ImportNotes, loc: Loc) -> dict[str, Any] | None:
    """``chat.completion.chunk`` payloads as a ``chat.completion`` body; None when they hold nothing."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    body: dict[str, Any] = {"object": "chat.completion"}
    seen = False
    for ev in events:
        if "choices" not in ev and "usage" not in ev:
            if "error" in ev:
                notes.warnings.append(f"{loc.where}: the stream reported an error: {_error_text(ev)}")
            else:
                notes.skip(f"sse:{ev.get('type') or ev.get('object') or 'unknown'}")
            continue
        seen = True
        for key in ("id", "model"):
            if key not in body and isinstance(ev.get(key), str):
                body[key] = ev[key]
        if isinstance(ev.get("usage"), dict):
            body["usage"] = ev["usage"]
        for choice in ev.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # the conversation continues with choice 0
            delta: Any = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            thought = delta.get("reasoning_content", delta.get("reasoning"))
            if isinstance(thought, str):
                reasoning.append(thought)
            _merge_tool_calls(calls, delta.get("tool_calls"))
    if not seen:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [
            {
                **({"id": calls[i]["id"]} if "id" in calls[i] else {}),
                "type": "function",
                "function": {"name": calls[i]["name"], "arguments": "".join(calls[i]["arguments"])},
            }
            for i in sorted(calls)
        ]
    body["choices"] = [{"index": 0, "message": message}]
    return body


_RESPONSE_ENDS = {"response.completed", "response.incomplete", "response.failed"}


def responses_body(events: list[dict[str, Any]], notes: ImportNotes, loc: Loc) -> dict[str, Any] | None:
    """Responses stream payloads as the response object (``output``, ``usage``); None when they hold nothing."""
    final: dict[str, Any] | None = None
    done: dict[int, dict[str, Any]] = {}
    for ev in events:
        kind = ev.get("type")
        if isinstance(kind, str) and kind in _RESPONSE_ENDS and isinstance(ev.get("response"), dict):
            final = ev["response"]
            if kind != "response.completed":
                notes.warnings.append(f"{loc.where}: the response ended as {str(kind).split('.')[-1]}")
        elif kind == "response.output_item.done" and isinstance(ev.get("item"), dict):
            index = _int_key(ev.get("output_index"))
            done[len(done) if index is None else index] = ev["item"]
        elif kind == "error":
            notes.warnings.append(f"{loc.where}: the stream reported an error: {_error_text(ev)}")
        elif not (isinstance(kind, str) and kind.startswith("response.")):
            notes.skip(f"sse:{kind if isinstance(kind, str) else 'invalid'}")
    if final is not None and isinstance(final.get("output"), list) and final["output"]:
        return final
    if final is None and not done:
        return None
    if final is None:
        notes.warnings.append(f"{loc.where}: the stream ended before response.completed; kept its {len(done)} finished output items")
    return {**(final or {}), "output": [done[i] for i in sorted(done)]}


_ASSEMBLERS = {"anthropic": anthropic_message, "chat": chat_completion, "responses": responses_body}


def assemble(api: str, events: list[dict[str, Any]], notes: ImportNotes, loc: Loc) -> dict[str, Any] | None:
    """The unstreamed body of ``api`` ("anthropic", "chat" or "responses") built from its stream's payloads."""
    return _ASSEMBLERS[api](events, notes, loc)
