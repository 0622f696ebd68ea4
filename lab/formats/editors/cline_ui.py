"""Cline's and Roo Code's ``ui_messages.json``: what the chat panel showed, as a conversation.

The file is a JSON list of ``ClineMessage`` records (``src/shared/ExtensionMessage.ts``):
``{ts, type: "say" | "ask", say | ask: KIND, text, ...}``. The kinds read:

* ``say text``: the first one is the user's task, later ones the model's text;
  ``reasoning`` is its thinking; ``completion_result`` (say, or ask with a
  text), ``followup`` and Cline's ``plan_mode_respond`` are its words too
  (their JSON ``{question|response, options}`` is unpacked);
* ``user_feedback`` is the user speaking;
* ``tool`` (say when auto-approved, ask when approval was asked) holds JSON
  ``{tool, path, content, diff, regex, ...}``: a call named after the tool the
  model used (``readFile`` -> ``read_file``, ``editedExistingFile`` ->
  ``replace_in_file``, ``newFileCreated`` -> ``write_to_file``, Roo's
  ``appliedDiff`` -> ``apply_diff``...), with the record's fields as input;
* ``command`` is an ``execute_command`` call, answered by the
  ``command_output`` records after it; ``use_mcp_server`` is a
  ``use_mcp_tool`` call answered by ``mcp_server_response``;
* ``api_req_started`` opens a model request. Its JSON text holds the request
  sent (``request``: the user's side of it, so the results of the tools the
  previous reply called) and, once answered, ``tokensIn``, ``tokensOut``,
  ``cacheWrites``, ``cacheReads`` and ``cost``. The tokens become the usage
  of the reply that follows; a tool call with no output records of its own is
  answered with the next request's text (what the model was actually sent).

Every other kind (``checkpoint_created``, ``api_req_finished``, ``error``,
``resume_task``...) and any kind not known here is skipped and counted as
``say:KIND`` / ``ask:KIND``. A ``text`` written as a number is read as its
text, and one of another type as empty; both are counted in a warning, as
such records used to vanish unseen. The cost goes on the usage as the agent's
recorded cost (``Usage.cost_usd``); the replay prices tokens itself and
checks its prices against it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...core.messages import Block, ImportNotes, Message, TextBlock, ThinkingBlock, Usage
from ..history_builder import HistoryBuilder, parse_timestamp
from ..anthropic_blocks import cost_usd, number_note

__all__ = ["RequestUsage", "UiConversation", "convert_ui", "request_usage", "tool_call"]

# Cline names its UI tool kinds in camelCase; the model called them by these names.
_TOOL_NAMES = {
    "readFile": "read_file",
    "editedExistingFile": "replace_in_file",
    "newFileCreated": "write_to_file",
    "appliedDiff": "apply_diff",
    "listFilesTopLevel": "list_files",
    "listFilesRecursive": "list_files",
    "listCodeDefinitionNames": "list_code_definition_names",
    "searchFiles": "search_files",
    "webFetch": "web_fetch",
    "searchAndReplace": "search_and_replace",
    "insertContent": "insert_content",
    "codebaseSearch": "codebase_search",
}
_NO_OUTPUT = "(no output recorded)"
_LOADING = re.compile(r"\s*Loading\.\.\.\s*$")
_WORDS = {"text", "completion_result", "followup", "plan_mode_respond"}
# Records that start a tool call: a tool of its own, a shell command, an MCP call.
_CALL_KINDS = frozenset({"tool", "command", "use_mcp_server"})
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True)
class RequestUsage:
    """One ``api_req_started`` record: its usage (None when it reported no tokens) and cost."""

    usage: Usage | None
    cost: float | None


@dataclass
class UiConversation:
    messages: list[Message]
    requests: list[RequestUsage] = field(default_factory=list)


def _json(text: Any) -> Any:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def request_usage(info: Any) -> RequestUsage:
    """The usage and cost an ``api_req_started`` record's parsed text reports."""
    if not isinstance(info, dict):
        return RequestUsage(None, None)
    fields = (_int(info.get("tokensIn")), _int(info.get("tokensOut")), _int(info.get("cacheReads")), _int(info.get("cacheWrites")))
    cost = cost_usd(info.get("cost"))
    usage = (
        Usage(input_tokens=fields[0], output_tokens=fields[1], cache_read_tokens=fields[2], cache_write_tokens=fields[3], cost_usd=cost)
        if any(fields)
        else None
    )
    return RequestUsage(usage, cost)


def tool_call(info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(tool name, input) for a ``tool`` record's parsed text."""
    kind = info.get("tool")
    kind = kind if isinstance(kind, str) and kind else "unknown"
    name = _TOOL_NAMES.get(kind) or _CAMEL.sub("_", kind).lower()
    tool_input = {k: v for k, v in info.items() if k != "tool"}
    if kind.startswith("listFiles"):
        tool_input["recursive"] = kind == "listFilesRecursive"
    return name, tool_input


def _words(kind: str, text: str) -> str:
    # followup / plan_mode_respond carry JSON in newer versions, plain text in older ones.
    info = _json(text)
    if kind in ("followup", "plan_mode_respond") and isinstance(info, dict):
        main = info.get("question") or info.get("response") or ""
        options = info.get("options") or info.get("suggest") or []
        listed = [o if isinstance(o, str) else str(o.get("answer", o)) if isinstance(o, dict) else str(o) for o in options] if isinstance(options, list) else []
        return "\n".join([str(main)] + [f"- {o}" for o in listed]).strip()
    return text


class _Converter:
    def __init__(self, records: list[Any], notes: ImportNotes) -> None:
        self.records = records
        self.notes = notes
        self.builder = HistoryBuilder(notes)
        self.requests: list[RequestUsage] = []
        # Open calls: canonical id -> output texts recorded for it so far.
        self.pending: dict[str, list[str]] = {}
        self.usage: Usage | None = None
        self.reply_open = False
        self.seen_request = False
        # Records whose ``text`` was neither a string nor a number (an object, a list, a boolean).
        self.odd_texts = 0

    # -- building ----------------------------------------------------------------------------
    def _assistant(self, block: Block, ts: Any, n: int) -> None:
        merge = self.reply_open
        # The request's usage goes on the first message of its reply; merged blocks join that message.
        self.builder.add("assistant", [block], key=f"ui{n}", timestamp=parse_timestamp(ts), usage=self.usage, merge=merge)
        self.usage = None
        self.reply_open = True

    def _user(self, text: str, ts: Any, n: int) -> None:
        last = self.builder.messages[-1] if self.builder.messages else None
        block = TextBlock(text=text)
        if last is not None and last.id == self.builder.open_results_id:
            # Feedback given on a tool call goes with its result, in the same user turn.
            self.builder.messages[-1] = last.model_copy(update={"content": last.content + (block,)})
        else:
            self.builder.add("user", [block], key=f"ui{n}", timestamp=parse_timestamp(ts))
        self.builder.close_results()
        self.reply_open = False

    def _call(self, name: str, tool_input: dict[str, Any], ts: Any, n: int) -> None:
        use = self.builder.use(None, name, tool_input, key=f"ui{n}")
        self._assistant(use, ts, n)
        self.pending[use.id] = []

    def _next_request_text(self, n: int) -> str | None:
        # The request that answers a call is the next one from here, this record included.
        for rec in self.records[n:]:
            if isinstance(rec, dict) and rec.get("say") == "api_req_started":
                info = _json(rec.get("text"))
                req = info.get("request") if isinstance(info, dict) else None
                return _LOADING.sub("", req) if isinstance(req, str) and req.strip() else None
        return None

    def _close(self, n: int) -> None:
        if not self.pending:
            return
        request = None
        for tool_id, outputs in list(self.pending.items()):
            content = "\n".join(outputs).strip()
            if not content:
                request = request if request is not None else self._next_request_text(n)
                content = request or _NO_OUTPUT
            self.builder.result(tool_id, content, key=f"ui{n}.r", canonical=True)
        self.pending.clear()
        self.reply_open = False

    def _output(self, text: str, kind: str) -> None:
        if not self.pending:
            self.notes.skip(f"{kind}:orphan")
            return
        last = next(reversed(self.pending))
        self.pending[last].append(text)

    def _odd_text(self, raw: Any) -> str:
        """A ``text`` that is not a string: a number is read as its text (counted); anything else is none."""
        if raw is None:
            return ""
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            number_note(self.notes)
            return str(raw)
        self.odd_texts += 1
        return ""

    # -- records -----------------------------------------------------------------------------
    def record(self, n: int, rec: Any) -> None:
        if not isinstance(rec, dict) or rec.get("type") not in ("say", "ask"):
            self.notes.skip("record:invalid")
            return
        side = rec["type"]
        kind = rec.get(side)
        kind = kind if isinstance(kind, str) else "missing"
        raw_text = rec.get("text")
        text: str = raw_text if isinstance(raw_text, str) else self._odd_text(raw_text)
        ts = rec.get("ts")
        if kind == "api_req_started":
            self._close(n)
            info = _json(text)
            self.requests.append(request_usage(info))
            self.usage = self.requests[-1].usage
            self.reply_open = False
            self.seen_request = True
        elif kind in ("text", "task") and side == "say" and not self.seen_request and not self.builder.messages:
            if text.strip():
                self._user(text, ts, n)
        elif kind == "user_feedback" and side == "say":
            self._close(n)
            if text.strip():
                self._user(text, ts, n)
        elif kind in _WORDS:
            words = _words(kind, text)
            if words.strip():
                self._assistant(TextBlock(text=words), ts, n)
            else:
                self.notes.skip(f"{side}:{kind}:empty")
        elif kind == "reasoning" and side == "say":
            if text.strip():
                self._assistant(ThinkingBlock(thinking=text), ts, n)
        elif kind in _CALL_KINDS:
            self._call_record(side, kind, text, ts, n)
        elif kind in ("command_output", "mcp_server_response"):
            self._output(text, f"{side}:{kind}")
        else:
            self.notes.skip(f"{side}:{kind}")

    def _call_record(self, side: str, kind: str, text: str, ts: Any, n: int) -> None:
        """A record that starts a tool call (one of ``_CALL_KINDS``); it answers the calls before it."""
        if kind == "tool":
            info = _json(text)
            if not isinstance(info, dict):
                self.notes.skip(f"{side}:tool:invalid")
                return
            self._close(n)
            self._call(*tool_call(info), ts, n)
        elif kind == "command":
            self._close(n)
            self._call("execute_command", {"command": text}, ts, n)
        else:  # use_mcp_server
            info = _json(text)
            self._close(n)
            info = info if isinstance(info, dict) else {"raw": text}
            self._call("use_mcp_tool", {k: v for k, v in info.items() if k != "type"}, ts, n)

    def finish(self) -> list[Message]:
        # Calls still open at the end keep what they printed; with nothing recorded they stay unanswered.
        for tool_id, outputs in list(self.pending.items()):
            if outputs:
                self.builder.result(tool_id, "\n".join(outputs), key="end.r", canonical=True)
        if self.odd_texts:
            self.notes.warnings.append(f"{self.odd_texts} of {len(self.records)} records have a text that is no string nor number: read as empty")
        return self.builder.finish()


def convert_ui(records: list[Any], notes: ImportNotes) -> UiConversation:
    """The conversation a ``ui_messages.json`` list shows, and the usage of each request in order."""
    conv = _Converter(records, notes)
    for n, rec in enumerate(records):
        conv.record(n, rec)
    messages = conv.finish()
    return UiConversation(messages=messages, requests=conv.requests)
