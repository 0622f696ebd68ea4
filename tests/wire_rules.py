"""An independent reader of request bodies: the providers' documented rules, applied to the wire JSON.

Written apart from ``lab.core.validate`` (which reads the canonical model): this module reads the
dicts a request body holds, the way the provider does, so the tests can hold the lab's validator
to it. The rules and where they are documented:

Anthropic Messages (``anthropic_wire_problems``)
  - ``system`` (a string, or text blocks) holds no blank text block; ``messages``
    is a non-empty list of ``user`` / ``assistant`` turns ("at least one message is
    required"); each turn's content is a non-empty string or a non-empty list of blocks ("all
    messages must have non-empty content except for the optional final assistant message");
  - a text block holds non-whitespace text ("text content blocks must contain non-whitespace text");
  - ``tool_use`` blocks only in assistant turns, ``tool_result`` blocks only in user turns (tool-use
    guide); every ``tool_use`` is answered by a ``tool_result`` in the very next turn ("tool_use ids
    were found without tool_result blocks immediately after"); every ``tool_result`` answers a
    ``tool_use`` of the turn right before ("unexpected tool_use_id found in tool_result blocks");
    ``tool_use`` ids are unique, and each is answered once;
  - ``shape=True`` (for what an exporter writes): results come first in a user turn ("tool_result
    blocks must come FIRST in the content array"), ids match ``^[a-zA-Z0-9_-]+$``, the final
    assistant text has no trailing whitespace;
  - ``strict=True``: the first turn is the user's (Bedrock refuses an assistant opening).

OpenAI Chat Completions (``openai_wire_problems``)
  - ``messages`` holds a non-system message; an assistant message has ``content`` (text, even
    blank) or ``tool_calls``;
  - an assistant message with ``tool_calls`` is followed by ``tool`` messages answering each
    ``tool_call_id`` before any other message; a ``tool`` message answers a call still open;
    call ids are unique;
  - ``shape=True``: call ids are at most 40 characters and ``arguments`` is a JSON string;
  - ``strict=True``: the first non-system message is the user's.

OpenAI Responses (``responses_wire_problems``)
  - ``input`` is a non-empty string or a non-empty list of items; a ``message`` item has the role
    ``user``, ``assistant``, ``system`` or ``developer`` and content that is a string or a non-empty
    list of parts, ``output_text``/``refusal`` in an assistant message and ``input_text``/
    ``input_image``/``input_file`` in the others ("Invalid value: 'input_text'. Supported values
    are: 'output_text' and 'refusal'");
  - a ``function_call`` has a ``call_id``, a ``name`` and ``arguments`` as a string; call ids are unique;
  - a ``function_call_output`` answers a call made before it ("No tool call found for function call
    output with call_id ..."), once, and every call is answered ("No tool output found for function
    call ..."); its ``output`` is a string or a list of parts;
  - ``shape=True``: ``arguments`` parse as JSON;
  - ``strict=True``: the first message that is not the system's or the developer's is the user's.

``literal_anthropic`` and ``literal_openai`` write canonical messages as the wire bodies an agent
sends when it forwards its log as it is: one turn per message, blocks as they are, nothing merged,
moved or dropped (but the empty messages OpenAI's exporter never sends, as ``lab.core.validate``
assumes). On such bodies these rules and the lab's validator must agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from lab.core.messages import ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent

__all__ = ["anthropic_wire_problems", "openai_wire_problems", "responses_wire_problems", "literal_anthropic", "literal_openai"]

_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def anthropic_wire_problems(body: dict[str, Any], *, strict: bool = False, shape: bool = False) -> list[str]:
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        return ["messages: at least one message is required"]
    out: list[str] = []
    if strict and turns[0].get("role") != "user":
        out.append("messages.0: the first message must be the user's")
    system = body.get("system")
    if isinstance(system, list) and any(b.get("type") == "text" and not str(b.get("text", "")).strip() for b in system):
        out.append("system: text content blocks must contain non-whitespace text")
    uses_seen: set[str] = set()
    answered: set[str] = set()
    for k, turn in enumerate(turns):
        role, content = turn.get("role"), turn.get("content")
        if role not in ("user", "assistant"):
            out.append(f"messages.{k}: role {role!r}")
        if not content:
            out.append(f"messages.{k}: empty content")
        blocks = _blocks(content)
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        for b in blocks:
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                out.append(f"messages.{k}: text content blocks must contain non-whitespace text")
        if uses and role != "assistant":
            out.append(f"messages.{k}: tool_use in a {role} message")
        if results and role != "user":
            out.append(f"messages.{k}: tool_result in a {role} message")
        for tool_id in uses:
            if tool_id in uses_seen:
                out.append(f"messages.{k}: tool_use ids must be unique ({tool_id})")
            uses_seen.add(tool_id)
        out += _anthropic_pairs(turns, k, uses, results, answered)
        if shape:
            out += _anthropic_shape(k, role, blocks, last=k == len(turns) - 1)
    return out


def _anthropic_pairs(turns: list[dict[str, Any]], k: int, uses: list[str], results: list[str], answered: set[str]) -> list[str]:
    """Turn ``k``'s calls answered in the very next turn, and its results answering the turn right before."""
    out: list[str] = []
    if uses:
        nxt = turns[k + 1] if k + 1 < len(turns) else None
        got = {b.get("tool_use_id") for b in _blocks(nxt.get("content"))} if nxt is not None and nxt.get("role") == "user" else set()
        missing = [t for t in uses if t not in got]
        if missing:
            out.append(f"messages.{k}: tool_use ids were found without tool_result blocks immediately after: {missing}")
    if results:
        prev = turns[k - 1] if k > 0 else None
        asked = {b.get("id") for b in _blocks(prev.get("content")) if b.get("type") == "tool_use"} if prev is not None and prev.get("role") == "assistant" else set()
        for tool_id in results:
            if tool_id not in asked:
                out.append(f"messages.{k}: unexpected tool_use_id found in tool_result blocks: {tool_id}")
            if tool_id in answered:
                out.append(f"messages.{k}: a second tool_result for {tool_id}")
            answered.add(tool_id)
    return out


def _anthropic_shape(k: int, role: Any, blocks: list[dict[str, Any]], *, last: bool) -> list[str]:
    out: list[str] = []
    kinds = [b.get("type") for b in blocks]
    if role == "user" and "tool_result" in kinds and kinds[: kinds.count("tool_result")] != ["tool_result"] * kinds.count("tool_result"):
        out.append(f"messages.{k}: tool_result blocks must come first")
    for b in blocks:
        tool_id = b.get("id") if b.get("type") == "tool_use" else b.get("tool_use_id") if b.get("type") == "tool_result" else None
        if tool_id is not None and not _ANTHROPIC_ID.match(tool_id):
            out.append(f"messages.{k}: tool id {tool_id!r} does not match ^[a-zA-Z0-9_-]+$")
    if last and role == "assistant" and blocks and blocks[-1].get("type") == "text" and blocks[-1]["text"] != blocks[-1]["text"].rstrip():
        out.append(f"messages.{k}: final assistant content cannot end with trailing whitespace")
    return out


def openai_wire_problems(body: dict[str, Any], *, strict: bool = False, shape: bool = False) -> list[str]:
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not any(m.get("role") != "system" for m in msgs):
        return ["messages: no user or assistant message"]
    out: list[str] = []
    first = next(m for m in msgs if m.get("role") != "system")
    if strict and first.get("role") != "user":
        out.append("the first non-system message must be the user's")
    open_calls: list[str] = []
    seen: set[str] = set()
    for k, m in enumerate(msgs):
        role = m.get("role")
        if role == "tool":
            tool_id = m.get("tool_call_id")
            if tool_id in open_calls:
                open_calls.remove(tool_id)
            else:
                out.append(f"messages.{k}: messages with role 'tool' must be a response to a preceding message with 'tool_calls' ({tool_id})")
            continue
        if open_calls:
            out.append(f"messages.{k}: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' {open_calls}")
            open_calls = []
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if m.get("content") is None and not calls:
                out.append(f"messages.{k}: assistant content is required unless tool_calls is specified")
            for c in calls:
                if c["id"] in seen:
                    out.append(f"messages.{k}: duplicate tool call id {c['id']}")
                seen.add(c["id"])
                if shape and (len(c["id"]) > 40 or not isinstance(c["function"]["arguments"], str)):
                    out.append(f"messages.{k}: tool call {c['id']!r} too long an id or arguments not a string")
            open_calls = [c["id"] for c in calls]
        elif role not in ("system", "developer", "user"):
            out.append(f"messages.{k}: role {role!r}")
    if open_calls:
        out.append(f"end: tool calls without tool messages {open_calls}")
    return out


_PARTS = {"assistant": ("output_text", "refusal")}
_INPUT_PARTS = ("input_text", "input_image", "input_file")


def responses_wire_problems(body: dict[str, Any], *, strict: bool = False, shape: bool = False) -> list[str]:
    items = body.get("input")
    if isinstance(items, str):
        return [] if items else ["input: empty"]
    if not isinstance(items, list) or not items:
        return ["input: no items"]
    out: list[str] = []
    called: set[str] = set()
    answered: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            out += _responses_message(k, item)
        elif kind == "function_call":
            out += _responses_call(k, item, called, shape)
        elif kind == "function_call_output":
            out += _responses_output(k, item, called, answered)
        else:
            # The lab writes no other item (reasoning needs ids and encrypted content only the API issues).
            out.append(f"input.{k}: item type {kind!r}")
    roles = [item.get("role") for item in items if item.get("type", "message") == "message" and item.get("role") not in ("system", "developer")]
    if strict and roles and roles[0] != "user":
        out.append("the first message that is not the system's must be the user's")
    if not roles and not called:
        out.append("input: no user or assistant message")
    return out + [f"No tool output found for function call {c}." for c in sorted(called - answered)]


def _responses_message(k: int, item: dict[str, Any]) -> list[str]:
    role, content = item.get("role"), item.get("content")
    out = [] if role in ("user", "assistant", "system", "developer") else [f"input.{k}: role {role!r}"]
    if isinstance(content, str):
        return out
    if not isinstance(content, list) or not content:
        return [*out, f"input.{k}: content must be a string or a non-empty list of parts"]
    allowed = _PARTS.get(role, _INPUT_PARTS)
    return out + [f"input.{k}.content.{j}: Invalid value: {part.get('type')!r}. Supported values are: {allowed}"
                  for j, part in enumerate(content) if part.get("type") not in allowed]


def _responses_call(k: int, item: dict[str, Any], called: set[str], shape: bool) -> list[str]:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        return [f"input.{k}: a function call needs a call_id and a name"]
    out = [f"input.{k}: duplicate call_id {call_id}"] if call_id in called else []
    called.add(call_id)
    if not isinstance(arguments, str):
        out.append(f"input.{k}: arguments must be a string")
    elif shape:
        try:
            json.loads(arguments)
        except ValueError:
            out.append(f"input.{k}: arguments of {call_id} are not JSON")
    return out


def _responses_output(k: int, item: dict[str, Any], called: set[str], answered: set[str]) -> list[str]:
    call_id = item.get("call_id")
    out: list[str] = []
    if call_id not in called:
        out.append(f"input.{k}: No tool call found for function call output with call_id {call_id}.")
    elif call_id in answered:
        out.append(f"input.{k}: call {call_id} answered twice")
    answered.add(call_id)
    if not isinstance(item.get("output"), (str, list)):
        out.append(f"input.{k}: output must be a string or a list of parts")
    return out


# -- canonical messages as an agent forwarding its log would send them -----------------------------------------


def _wire_block(b: Any) -> dict[str, Any]:
    if isinstance(b, TextBlock):
        return {"type": "text", "text": b.text}
    if isinstance(b, ToolUseBlock):
        return {"type": "tool_use", "id": b.id, "name": b.name, "input": dict(b.input)}
    if isinstance(b, ToolResultBlock):
        return {"type": "tool_result", "tool_use_id": b.tool_use_id, "content": b.content, "is_error": b.is_error}
    if isinstance(b, ThinkingBlock):
        return {"type": "thinking", "thinking": b.thinking, "signature": b.signature or ""}
    assert isinstance(b, ImageBlock)
    return {"type": "image", "source": {"type": "url", "url": b.url or "https://example.invalid/i.png"}}


def _texts(m: Message) -> list[str]:
    return [b.text for b in m.content if isinstance(b, TextBlock)]


def literal_anthropic(messages: Sequence[Message]) -> dict[str, Any]:
    sent = [m for m in messages if is_sent(m)]
    start = 0
    # The system prompt as text blocks; a system message with no content is sent as it is, an empty text.
    system: list[dict[str, Any]] = []
    while start < len(sent) and sent[start].role == "system":
        system += [{"type": "text", "text": t} for t in _texts(sent[start]) or [""]]
        start += 1
    turns: list[dict[str, Any]] = []
    for m in sent[start:]:
        if m.role == "system":
            # A system message later in a history is the user's turn on this API (the system prompt is up front).
            turns.append({"role": "user", "content": [{"type": "text", "text": f"[system] {t}"} for t in _texts(m)]})
        else:
            turns.append({"role": m.role, "content": [_wire_block(b) for b in m.content]})
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    return body


def literal_openai(messages: Sequence[Message]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if not is_sent(m):
            continue
        if m.role == "system":
            out.append({"role": "system", "content": "\n".join(_texts(m))})
        elif m.role == "assistant":
            texts = _texts(m)
            calls = [{"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.input)}}
                     for b in m.content if isinstance(b, ToolUseBlock)]
            entry: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif m.content:
            out += [{"role": "tool", "tool_call_id": b.tool_use_id, "content": b.content} for b in m.content if isinstance(b, ToolResultBlock)]
            rest = [b for b in m.content if not isinstance(b, ToolResultBlock)]
            if rest:
                out.append({"role": "user", "content": "\n\n".join(_texts(m))})
    return {"messages": out}
