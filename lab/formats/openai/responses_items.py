"""Responses API items mapped onto the lab's messages: the part the Responses reader, Codex rollouts, the Agents SDK
database and mini-swe-agent 2 histories share (see ``lab.formats.openai.openai_responses`` for the mapping).

A Responses ``message`` item that carries Chat Completions fields (``tool_calls``, ``tool_call_id``) is a Chat
message: ``add_item`` hands it to the ``chat`` reader its caller passes (``openai_chat.add_message``), so this
module needs none of the Chat reader and the Chat reader can read Responses entries through it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, TextBlock, ThinkingBlock
from ..history_builder import HistoryBuilder, Loc, image_from_url, need_dict, parse_arguments, text_block

__all__ = [
    "NAME", "ITEM_TYPES", "SERVER_ITEMS", "COMPACTION_ITEMS", "COMPACTION_STRATEGY", "ROLLOUT_RECORDS", "ChatMessage", "add_item",
    "is_rollout_header",
]  # fmt: skip

# Reads one Chat Completions message into the builder: (builder, message, where, key, time).
ChatMessage = Callable[[HistoryBuilder, Any, Loc, str, "datetime | None"], None]

NAME = "openai_responses"

_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "computer_call", "tool_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output", "tool_search_output"}
ITEM_TYPES = {"message", "reasoning", "agent_message"} | _CALLS | _OUTPUTS
# Items the lab has no block for (the provider ran the tool, the item is opaque, or it is a request
# control such as Codex's compaction_trigger): counted, not kept.
SERVER_ITEMS = {
    "web_search_call", "image_generation_call", "file_search_call", "code_interpreter_call", "mcp_call",
    "mcp_list_tools", "ghost_snapshot", "context_compaction",
    "compaction_trigger", "additional_tools", "configuration_update",
}
# The encrypted summary item, as the API names it and as Codex also spells it.
COMPACTION_ITEMS = ("compaction", "compaction_summary")
# The boundary strategy of an inline ``compaction`` item (the Responses API's server-side or standalone compaction).
COMPACTION_STRATEGY = "openai_compaction"
# Record types of a Codex rollout line ``{timestamp, type, payload}``, older and newer.
ROLLOUT_RECORDS = {
    "session_meta", "response_item", "turn_context", "event_msg", "compacted",
    "world_state", "inter_agent_communication", "inter_agent_communication_metadata",
}


def _parts(content: Any, notes: ImportNotes, loc: Loc) -> list[Block]:
    if isinstance(content, str):
        return list[Block](text_block(content))
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


# Codex's freeform shell output starts "Exit code: N", then "Wall time: ...".
_EXIT_LINE = re.compile(r"Exit code: (-?\d+)\r?\n")
# Its structured one is {"output": ..., "metadata": {"exit_code": N, ...}}. Inside a JSON string every
# quote is escaped, so this unescaped text can only be the object's own key: no second parse is needed.
_EXIT_KEY = '"metadata":{"exit_code":'
_INT = re.compile(r"-?\d+")


def _reports_failure(text: str) -> bool:
    """Whether a tool output Codex recorded says the tool failed.

    Codex records outputs as plain strings and drops its success flag, so
    what is left is the output's own words: the structured shell output's
    exit code, the freeform one's ``Exit code: N`` line, or an MCP result's
    ``"isError":true``.
    """
    if text.startswith('{"output"'):
        at = text.rfind(_EXIT_KEY)
        m = _INT.match(text, at + len(_EXIT_KEY)) if at >= 0 else None
        return m is not None and int(m.group()) != 0
    if text.startswith('{"content"'):
        return '"isError":true' in text
    m = _EXIT_LINE.match(text)
    return m is not None and int(m.group(1)) != 0


def _output_text(output: Any, notes: ImportNotes, loc: Loc) -> tuple[str, bool]:
    """A call output as (text, is_error), whatever shape it was recorded in."""
    if isinstance(output, dict):
        # The Responses API's input schema spells a failure {content, success: false}; some clients log it.
        inner = output["content"] if "content" in output else output.get("output")
        text = _output_text(inner, notes, loc)[0] if isinstance(inner, (str, list)) else ""
        return text, output.get("success") is False
    if isinstance(output, list):
        texts = [b.text if isinstance(b, TextBlock) else "[image]" for b in _parts(output, notes, loc)]
        return "\n".join(texts), False
    if isinstance(output, str):
        return output, _reports_failure(output)
    if output is None:
        return "", False
    return json.dumps(output, ensure_ascii=False), False


def _shell_args(action: Any) -> dict[str, Any]:
    """A local_shell_call exec action as the arguments of Codex's ``shell`` tool: command array, workdir, timeout."""
    if not isinstance(action, dict):
        return {}
    args = {k: v for k, v in action.items() if v is not None and k != "working_directory" and (k, v) != ("type", "exec")}
    if action.get("working_directory") is not None:
        args["workdir"] = action["working_directory"]
    return args


def _call_id(item: dict[str, Any], kind: str, loc: Loc) -> str:
    # A call's ``id`` is its call id only for local_shell_call over Chat Completions; an output's
    # ``id`` is an item id ("fco_..."), never the call it answers.
    call_id = item.get("call_id") or (item.get("id") if kind in _CALLS else None)
    if not isinstance(call_id, str) or not call_id:
        raise loc.error(f"{kind} without a call_id", expected="a string 'call_id'")
    return call_id


def _agent_message(b: HistoryBuilder, item: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    """A message another agent sent this one (Codex multi-agent): input the model reads, so a user turn."""
    content = item.get("content")
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    blocks: list[Block] = []
    for i, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") == "encrypted_content":
            b.notes.skip("agent_message:encrypted")  # only the provider can read it
        elif isinstance(part, str):
            blocks += text_block(part)
        else:
            blocks += _parts([part], b.notes, loc.at("content").at(i))
    if blocks:
        b.add("user", blocks, key=key, timestamp=stamp)
    else:
        b.notes.skip("item:agent_message")


def _reasoning(b: HistoryBuilder, item: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    """A reasoning item as thinking: its summary, else its content; only encrypted content is skipped."""
    notes = b.notes
    texts = [t.text for t in _parts(item.get("summary") or [], notes, loc.at("summary")) if isinstance(t, TextBlock)]
    if not texts:
        texts = [t.text for t in _parts(item.get("content") or [], notes, loc.at("content")) if isinstance(t, TextBlock)]
    if texts:
        b.add("assistant", [ThinkingBlock(thinking="\n\n".join(texts))], key=key, timestamp=stamp, merge=True)
    else:
        notes.skip("reasoning:encrypted")


def _call_name_args(item: dict[str, Any], kind: str, notes: ImportNotes, loc: Loc) -> tuple[str, dict[str, Any]]:
    """The tool name and input of a call item (one of ``_CALLS``), each kind spelling them its own way."""
    name: Any
    args: dict[str, Any]
    if kind == "function_call":
        name, namespace = item.get("name"), item.get("namespace")
        if isinstance(name, str) and isinstance(namespace, str):
            name = namespace + name  # how Codex names a namespaced (MCP) tool
        args = parse_arguments(item.get("arguments"), notes, loc.at("arguments"))
    elif kind == "custom_tool_call":
        name, raw = item.get("name"), item.get("input")
        args = {"input": raw if isinstance(raw, str) else ""}
    elif kind == "local_shell_call":
        name, args = "local_shell", _shell_args(item.get("action"))
    elif kind == "tool_search_call":
        name, args = "tool_search", parse_arguments(item.get("arguments"), notes, loc.at("arguments"))
    else:
        action = item.get("action")
        name, args = "computer", action if isinstance(action, dict) else {}
    if not isinstance(name, str) or not name:
        raise loc.error(f"{kind} without a name", expected="a string 'name'")
    return name, args


def add_item(b: HistoryBuilder, item: Any, loc: Loc, key: str, stamp: datetime | None = None, *, chat: ChatMessage) -> None:
    """Append one Responses item to ``b``; ``chat`` reads a Chat Completions message found among the items."""
    item = need_dict(item, loc, "item")
    notes = b.notes
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str):
        raise loc.at("type").error("item without a string type", expected="a Responses item type such as 'message'")
    if kind == "message":
        _message(b, item, loc, key, stamp, chat)
    elif kind == "reasoning":
        _reasoning(b, item, loc, key, stamp)
    elif kind == "agent_message":
        _agent_message(b, item, loc, key, stamp)
    elif kind in ("tool_search_call", "tool_search_output") and not item.get("call_id"):
        notes.skip(f"item:{kind}")  # run by the provider: no call id, nothing for the client to answer
    elif kind in _OUTPUTS and not item.get("call_id"):
        notes.skip(f"item:{kind}:no call_id")  # newer Codex makes call_id optional: it answers no call
    elif kind in _CALLS:
        call_id = _call_id(item, kind, loc)
        name, args = _call_name_args(item, kind, notes, loc)
        use = b.use(call_id, name, args, key=key)
        b.add("assistant", [use], key=key, timestamp=stamp, merge=True)
    elif kind in COMPACTION_ITEMS:
        _compaction(b, item, key, stamp)
    elif kind in _OUTPUTS:
        call_id = _call_id(item, kind, loc)
        if kind == "tool_search_output":
            text, is_error = json.dumps(item.get("tools"), ensure_ascii=False), False
        else:
            text, is_error = _output_text(item.get("output"), notes, loc.at("output"))
        b.result(call_id, text, key=key, is_error=is_error, timestamp=stamp)
    else:
        notes.skip(f"item:{kind}")


def _compaction(b: HistoryBuilder, item: dict[str, Any], key: str, stamp: datetime | None) -> None:
    """An inline ``compaction`` item: the provider's encrypted summary of everything before it.

    The server reads the newest compaction item in place of the items before it (the API's guide lets a
    client drop them), so it is a recorded compaction: a boundary, then the item as a placeholder summary
    tagged ``summary`` (its content is opaque; a replay that keeps recorded compactions sends the
    placeholder, one that undoes them drops it and replays the items before it).
    """
    blob = item.get("encrypted_content")
    size = f"{len(blob):,} characters" if isinstance(blob, str) else "no content"
    boundary = Boundary(trigger="import", strategy=COMPACTION_STRATEGY, timestamp=stamp)
    note = f"[Encrypted compaction summary of the earlier conversation ({size}); only the provider can read it]"
    b.compaction(boundary, "[Context compacted by the provider (Responses compaction item)]", note, key=key, timestamp=stamp)


# Fields only Chat Completions messages have: a {"type": "message"} line holding them (home-made logs)
# is a Chat message, read by the Chat importer so its tool calls and results are not lost.
_CHAT_ONLY = ("tool_calls", "function_call", "tool_call_id")


def _message(b: HistoryBuilder, item: dict[str, Any], loc: Loc, key: str, stamp: datetime | None, chat: ChatMessage) -> None:
    role = item.get("role")
    if not isinstance(role, str):
        raise loc.error("message item without a role", expected="a string 'role'")
    if role in ("tool", "function") or any(k in item for k in _CHAT_ONLY):
        chat(b, item, loc, key, stamp)
        return
    blocks = _parts(item.get("content"), b.notes, loc.at("content"))
    if role in ("system", "developer"):
        b.add("system", blocks, key=key, timestamp=stamp)
    elif role == "user":
        b.add("user", blocks, key=key, timestamp=stamp)
    elif role == "assistant":
        b.add("assistant", blocks, key=key, timestamp=stamp, merge=True)
    else:
        b.notes.skip(f"role:{role}")


def is_rollout_header(rec: Any) -> bool:
    """The first line of an older Codex rollout: ``{id, timestamp, instructions?, git?}``, no type."""
    if not isinstance(rec, dict) or "type" in rec or "role" in rec or "payload" in rec:
        return False
    return "instructions" in rec or (isinstance(rec.get("id"), str) and "timestamp" in rec)
