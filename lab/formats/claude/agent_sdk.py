"""Claude Agent SDK sessions: ``claude -p --output-format stream-json --verbose`` and the SDK messages it carries.

The Agent SDK (Python ``claude_agent_sdk``, TypeScript ``@anthropic-ai/claude-agent-sdk``)
runs Claude Code as a subprocess and reads its stream-json output: one JSON
record a line, tagged by ``type``:

* ``system`` ``init``: ``session_id``, ``model``, ``cwd``, ``tools`` (names),
  ``mcp_servers``, ``permissionMode`` ... -> ``meta`` and ``tools``. Other
  ``system`` subtypes (``status``, ``hook_response``, ``task_*`` ...) are
  counted as ``system:<subtype>``; ``compact_boundary`` becomes a boundary.
* ``assistant``: ``{message: <Messages API response>, parent_tool_use_id,
  session_id, uuid}``. Claude Code writes one record per content block, all
  sharing ``message.id``; they are merged into one assistant message whose
  usage is the last record's (each repeats it), so it is counted once. A
  tool result the harness wrote between two blocks of one message (a tool it
  ran while the model was still streaming) moves after the merged message.
* ``user``: the prompt (when echoed) and tool results; consecutive ones make
  one user message.
* ``result``: the end of a run: ``subtype``, ``num_turns``, ``duration_ms``,
  ``total_cost_usd``, the run's total ``usage`` and its ``modelUsage`` (tokens
  and cost per model). It is no message: its figures become one line in
  ``notes.dropped`` (the run's totals, not one request's). A run that did not
  end in ``success`` is a warning, and so are its ``permission_denials``
  (tool calls the permission system refused, by tool and id).
* ``stream_event`` (``--include-partial-messages``): raw Messages API stream
  events of a message whose complete ``assistant`` records follow. They are
  superseded by those, so they are not counted as skipped (a streamed run has
  hundreds of them, which would make any import look like a misread); a
  message the stream never completed (a run cut off mid-reply) is assembled
  from its events.
* ``parent_tool_use_id`` set: the record belongs to a subagent run by that
  ``Task`` call; its messages go to ``Transcript.sidechains[parent_tool_use_id]``.

Other record types (``rate_limit_event``, ``tool_progress``, control
messages, unknown ones) are counted in ``notes.skipped`` by type.

Accepted containers: JSONL (a last line cut off mid-write is a warning), a
JSON list of records (``--output-format json --verbose``), and the same
records saved as Python SDK dataclass dumps (``dataclasses.asdict``: no
``type`` key, blocks without ``type``; ``AssistantMessage`` with ``content``,
``model``, ``usage``, ``message_id``; ``SystemMessage`` with ``subtype`` and
``data``; ``ResultMessage``; ``StreamEvent``), also with a ``type`` of the class
name (``{"type": "AssistantMessage", ...}``). Dumps are recognised by their
fields, so a plausible variant imports too.

When the stream starts with the agent's reply (``claude -p`` does not echo
the prompt), a placeholder user turn is put first, with a warning, so every
request the history implies starts with a user turn; a subagent thread gets
its ``Task`` call's prompt instead.

Detection: 97 when most of the first records are SDK records and one of them
shows what only the SDK writes (an ``init`` or ``result`` record, a
``parent_tool_use_id`` key, a snake_case ``session_id`` on a message record),
above Claude Code's 95 (whose sniffer also accepts these ``type``/``uuid``
records); 0 on anything carrying Claude Code's own keys (``parentUuid``,
``sessionId``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...core.messages import Boundary, ImportNotes, Message, ToolSpec, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..history_builder import Loc, parse_timestamp, opt_str, as_dict
from ..anthropic_blocks import block_dicts, usage_fields
from ..http.http_sse import anthropic_message
from ..jsonio import gc_paused, iter_log_lines, read_file_head, read_json
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "RECORD_TYPES", "normalize", "from_records", "read", "sniff"]

NAME = "claude_agent_sdk"
RECORD_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})
_MAIN = ""
# Python SDK class names, as users tag their dataclass dumps.
_CLASS_KINDS = {
    "SystemMessage": "system", "AssistantMessage": "assistant", "UserMessage": "user",
    "ResultMessage": "result", "StreamEvent": "stream_event",
}  # fmt: skip
# Keys only Claude Code's own session files carry: such records are that importer's.
_CLAUDE_CODE_KEYS = frozenset({"parentUuid", "sessionId", "isSidechain", "leafUuid"})
_NO_PROMPT = "[prompt not recorded: the stream starts with the agent's reply]"
# All an older SDK's UserMessage dump holds.
_OLD_USER_KEYS = frozenset({"content", "uuid"})


def _where(loc: Loc) -> str:
    # A JSONL record is its line; "line 7, $" says nothing more.
    return f"line {loc.line}" if loc.line is not None and loc.path == "$" else loc.where


# -- records in one shape ----------------------------------------------------------


def _typed_block(block: Any) -> Any:
    """A dataclass-dump block (no ``type``) with the type its fields imply; typed blocks as they are."""
    if not isinstance(block, dict) or "type" in block:
        return block
    if "tool_use_id" in block:
        return {"type": "tool_result", **block}
    if "thinking" in block:
        return {"type": "thinking", **block}
    if "id" in block and "name" in block:
        return {"type": "tool_use", **block}
    if "text" in block:
        return {"type": "text", **block}
    return block


def _content(value: Any) -> Any:
    return [_typed_block(b) for b in value] if isinstance(value, list) else value


def _dump_kind(rec: dict[str, Any]) -> str | None:
    """Which SDK message a dataclass dump (no stream ``type``) is, from its fields."""
    if "subtype" in rec:
        if "num_turns" in rec and "duration_ms" in rec:
            return "result"
        if isinstance(rec.get("data"), dict):
            return "system"
        return None
    if isinstance(rec.get("event"), dict) and "uuid" in rec:
        return "stream_event"
    if "content" in rec and "role" not in rec and "message" not in rec:
        if isinstance(rec.get("model"), str):
            return "assistant"
        if "parent_tool_use_id" in rec or "tool_use_result" in rec or rec.keys() <= _OLD_USER_KEYS:
            return "user"
    return None


def normalize(rec: Any) -> tuple[str, dict[str, Any]] | None:
    """``(kind, record in stream-json shape)`` for an SDK record, stream-json or dataclass dump; None otherwise."""
    if not isinstance(rec, dict) or not _CLAUDE_CODE_KEYS.isdisjoint(rec):
        # Claude Code's session entries share these types; that importer reads them.
        return None
    kind = rec.get("type")
    if isinstance(kind, str) and kind in _CLASS_KINDS:
        kind, rec = _CLASS_KINDS[kind], {k: v for k, v in rec.items() if k != "type"}
        if kind in ("system", "result") or "message" not in rec:
            return _from_dump(kind, rec)
    if isinstance(kind, str) and kind in RECORD_TYPES:
        if kind in ("assistant", "user") and not isinstance(rec.get("message"), dict):
            return None
        return str(kind), rec
    if kind is None:
        dump = _dump_kind(rec)
        if dump is not None:
            return _from_dump(dump, rec)
    return None


def _from_dump(kind: str, rec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    base: dict[str, Any] = {k: rec[k] for k in ("parent_tool_use_id", "session_id", "uuid", "timestamp") if k in rec}
    if kind == "system":
        # SystemMessage.data is the raw record the CLI wrote.
        data = as_dict(rec.get("data"))
        return kind, {**data, **base, "type": "system", "subtype": rec.get("subtype", data.get("subtype"))}
    if kind == "assistant":
        message = {"role": "assistant", "content": _content(rec.get("content")), "model": rec.get("model"),
                   "id": rec.get("message_id"), "usage": rec.get("usage")}  # fmt: skip
        return kind, {**base, "type": kind, "message": message, "error": rec.get("error")}
    if kind == "user":
        return kind, {**base, "type": kind, "message": {"role": "user", "content": _content(rec.get("content"))}}
    if kind == "result":
        out = {**rec, "type": "result"}
        if "modelUsage" not in out and "model_usage" in rec:
            out["modelUsage"] = rec["model_usage"]
        return kind, out
    return kind, {**rec, "type": kind}


# -- threads -----------------------------------------------------------------------


def _results_only(row: dict[str, Any]) -> bool:
    return row["role"] == "user" and row["tag"] is None and all(b["type"] == "tool_result" for b in row["content"])


class _Thread:
    """One thread's messages as field dicts, validated once at the end."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.last_assistant: int | None = None

    def _row(self, role: str, blocks: list[dict[str, Any]], key: str, stamp: Any, **extra: Any) -> dict[str, Any]:
        row = {"role": role, "content": blocks, "id": key, "timestamp": stamp, "usage": None, "tag": None, "boundary": None, "api_id": None}
        row.update(extra)
        self.rows.append(row)
        return row

    def assistant(self, blocks: list[dict[str, Any]], api_id: str | None, key: str, stamp: Any, usage: dict[str, int] | None) -> None:
        j = self.last_assistant
        if api_id is not None and j is not None and self.rows[j]["api_id"] == api_id:
            between = self.rows[j + 1 :]
            if all(_results_only(r) for r in between):
                # Another block of the same model response: it joins the message, and results the
                # harness wrote in between stay after it, where the API expects them.
                row = self.rows[j]
                row["content"] += blocks
                if usage is not None:
                    row["usage"] = usage
                return
        last = self.rows[-1] if self.rows else None
        if api_id is None and last is not None and last["role"] == "assistant" and last["api_id"] is None and last["tag"] is None:
            # Older SDK dumps have no message id: adjacent records are still one response, as a new
            # response always follows a user turn.
            last["content"] += blocks
            if usage is not None:
                last["usage"] = usage
            return
        self._row("assistant", blocks, key, stamp, usage=usage, api_id=api_id)
        self.last_assistant = len(self.rows) - 1

    def user(self, blocks: list[dict[str, Any]], key: str, stamp: Any) -> None:
        last = self.rows[-1] if self.rows else None
        if last is not None and last["role"] == "user" and last["tag"] is None and last["boundary"] is None:
            # Consecutive user records (one per tool result, or results then words) are one user turn.
            results = [b for b in blocks if b["type"] == "tool_result"]
            others = [b for b in blocks if b["type"] != "tool_result"]
            if results and not _results_only(last):
                # Results go before text in a user turn.
                first_text = next(i for i, b in enumerate(last["content"]) if b["type"] != "tool_result")
                last["content"][first_text:first_text] = results
                last["content"] += others
            else:
                last["content"] += blocks
            return
        self._row("user", blocks, key, stamp)

    def boundary(self, key: str, stamp: Any, trigger: Any, pre_tokens: Any) -> None:
        kind = "manual" if trigger == "manual" else "auto" if trigger == "auto" else "import"
        tokens = pre_tokens if isinstance(pre_tokens, int) and not isinstance(pre_tokens, bool) and pre_tokens >= 0 else 0
        text = {"type": "text", "text": f"[Conversation compacted by the Agent SDK ({trigger if isinstance(trigger, str) else 'unknown'})]"}
        boundary = {"trigger": kind, "strategy": "claude_agent_sdk_compact", "timestamp": parse_timestamp(stamp), "tokens_before": tokens}
        self._row("system", [text], key, stamp, tag="boundary", boundary=boundary)
        self.last_assistant = None


# -- the result record's extras ----------------------------------------------------------------

_DENIALS_LISTED = 5
# modelUsage's per-model counters (camelCase, as the CLI writes them), in the order they are listed.
_MODEL_COUNTS = (("inputTokens", "in"), ("outputTokens", "out"), ("cacheReadInputTokens", "cache read"), ("cacheCreationInputTokens", "cache write"))


def _model_usage(value: Any) -> list[str]:
    """A result's ``modelUsage`` (tokens and cost per model the run called, subagents' included), one line each."""
    if not isinstance(value, dict):
        return []
    out = []
    for model, counts in value.items():
        if not isinstance(model, str) or not isinstance(counts, dict):
            continue
        facts = [f"{label} {n}" for key, label in _MODEL_COUNTS if isinstance(n := counts.get(key), int) and not isinstance(n, bool)]
        cost = counts.get("costUSD")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            facts.append(f"${cost:g}")
        out.append(f"{model} ({', '.join(facts)})" if facts else model)
    return out


def _denials(value: Any) -> list[str]:
    """A result's ``permission_denials``: each refused call as its tool name and id."""
    if not isinstance(value, list):
        return []
    return [f"{opt_str(d.get('tool_name')) or 'a tool'} ({opt_str(d.get('tool_use_id')) or 'no id'})" for d in value if isinstance(d, dict)]


class _Session:
    """One file's records, sorted into the main thread and one thread per subagent call."""

    def __init__(self, notes: ImportNotes, file: str | None) -> None:
        self.notes = notes
        self.file = file
        self.threads: dict[str, _Thread] = {_MAIN: _Thread()}
        self.init: dict[str, Any] | None = None
        self.session_id: str | None = None
        self.model: str | None = None
        self.sdk_records = 0
        # Per thread: (message id, stream events) of the message being streamed.
        self.streams: dict[str, tuple[str | None, list[dict[str, Any]], Loc]] = {}
        self.completed: set[str] = set()  # message ids some complete assistant record carried
        self.assembled = 0
        # Subagent thread (parent_tool_use_id) -> its records: said in the notes, never part of the main context.
        self.side_records: dict[str, int] = {}

    def _thread(self, rec: dict[str, Any]) -> tuple[str, _Thread]:
        key = opt_str(rec.get("parent_tool_use_id")) or _MAIN
        if key not in self.threads:
            self.threads[key] = _Thread()
        return key, self.threads[key]

    def record(self, rec: Any, loc: Loc, n: int) -> None:
        hit = normalize(rec)
        if hit is None:
            self.notes.skip(f"record:{_record_kind(rec)}")
            return
        kind, rec = hit
        self.sdk_records += 1
        side = opt_str(rec.get("parent_tool_use_id"))
        if side is not None:
            self.side_records[side] = self.side_records.get(side, 0) + 1
        if self.session_id is None:
            self.session_id = opt_str(rec.get("session_id"))
        key = opt_str(rec.get("uuid")) or f"r{n}"
        stamp = rec.get("timestamp")
        if kind == "assistant":
            self._assistant(rec, key, stamp, loc)
        elif kind == "user":
            blocks = block_dicts(rec["message"].get("content"), self.notes, loc.at("message").at("content").where)
            if blocks:
                self._thread(rec)[1].user(blocks, key, stamp)
            else:
                self.notes.skip("user (empty)")
        elif kind == "system":
            self._system(rec, key, stamp, loc)
        elif kind == "result":
            self._result(rec, loc)
        else:
            self._stream_event(rec, loc)

    def _assistant(self, rec: dict[str, Any], key: str, stamp: Any, loc: Loc) -> None:
        message = rec["message"]
        api_id = opt_str(message.get("id"))
        thread_key, thread = self._thread(rec)
        if api_id is not None:
            self.completed.add(api_id)
        open_stream = self.streams.get(thread_key)
        if open_stream is not None and (api_id is None or open_stream[0] == api_id):
            # Superseded: the complete record carries what was streamed (without an id, the record
            # of the thread's message being streamed is that message).
            del self.streams[thread_key]
        if self.model is None:
            self.model = opt_str(message.get("model"))
        error = opt_str(rec.get("error"))
        if error is not None:
            self.notes.warnings.append(f"{_where(loc)}: the assistant message reports an error ({error})")
        blocks = block_dicts(message.get("content"), self.notes, loc.at("message").at("content").where)
        if not blocks:
            self.notes.skip("assistant (empty)")
            return
        thread.assistant(blocks, api_id, key, stamp, usage_fields(message.get("usage")))

    def _system(self, rec: dict[str, Any], key: str, stamp: Any, loc: Loc) -> None:
        subtype = opt_str(rec.get("subtype")) or "unknown"
        if subtype == "init":
            if self.init is None:
                self.init = rec
                self.session_id = opt_str(rec.get("session_id")) or self.session_id
            else:
                if opt_str(rec.get("session_id")) not in (None, self.session_id):
                    self.notes.warnings.append(f"{_where(loc)}: a second session starts here ({rec.get('session_id')}); read into the same history")
                self.notes.skip("system:init (repeated)")
        elif subtype == "compact_boundary":
            meta = as_dict(rec.get("compact_metadata"))
            self._thread(rec)[1].boundary(f"{key}-boundary", stamp, meta.get("trigger"), meta.get("pre_tokens"))
        else:
            self.notes.skip(f"system:{subtype}")

    def _result(self, rec: dict[str, Any], loc: Loc) -> None:
        subtype = opt_str(rec.get("subtype")) or "unknown"
        parts = [f"{_where(loc)}: result record ({subtype})"]
        turns, ms, cost = rec.get("num_turns"), rec.get("duration_ms"), rec.get("total_cost_usd")
        if isinstance(turns, int):
            parts.append(f"{turns} turns")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool):
            parts.append(f"{ms / 1000:.1f} s")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            parts.append(f"total_cost_usd {cost:g}")
        usage = usage_fields(rec.get("usage"))
        if usage is not None:
            parts.append("usage " + ", ".join(f"{k} {v}" for k, v in usage.items()))
        models = _model_usage(rec.get("modelUsage"))
        if models:
            parts.append("by model: " + "; ".join(models))
        self.notes.dropped.append("; ".join(parts) + " (the run's totals, not one request's)")
        denied = _denials(rec.get("permission_denials"))
        if denied:
            listed = ", ".join(denied[:_DENIALS_LISTED]) + (f" and {len(denied) - _DENIALS_LISTED} more" if len(denied) > _DENIALS_LISTED else "")
            self.notes.warnings.append(f"{_where(loc)}: the permission system refused {len(denied)} tool call(s): {listed}")
        if subtype != "success" or rec.get("is_error") is True:
            self.notes.warnings.append(f"{_where(loc)}: the run ended with {subtype}{' (is_error)' if rec.get('is_error') is True else ''}")

    def _stream_event(self, rec: dict[str, Any], loc: Loc) -> None:
        event = rec.get("event")
        if not isinstance(event, dict):
            self.notes.skip("stream_event (no event)")
            return
        thread_key = opt_str(rec.get("parent_tool_use_id")) or _MAIN
        if event.get("type") == "message_start":
            self._close_stream(thread_key)
            start = as_dict(event.get("message"))
            self.streams[thread_key] = (opt_str(start.get("id")), [event], loc)
            return
        open_stream = self.streams.get(thread_key)
        if open_stream is not None:
            open_stream[1].append(event)
        # Events outside a message (after its complete records superseded it) carry nothing new.

    def _close_stream(self, thread_key: str) -> None:
        """Assemble a streamed message no complete record carried (a reply cut off mid-stream)."""
        open_stream = self.streams.pop(thread_key, None)
        if open_stream is None:
            return
        api_id, events, loc = open_stream
        if api_id is not None and api_id in self.completed:
            return
        body = anthropic_message(events, self.notes, loc)
        blocks = block_dicts(body.get("content"), self.notes, _where(loc)) if body else []
        if not blocks:
            return
        self.assembled += 1
        thread = self.threads.setdefault(thread_key, _Thread())
        thread.assistant(blocks, api_id, f"{api_id or 'stream'}-partial", None, usage_fields(body.get("usage") if body else None))

    def finish(self) -> Transcript:
        for thread_key in list(self.streams):
            self._close_stream(thread_key)
        if not self.sdk_records:
            raise TranscriptError("no Claude Agent SDK records found", file=self.file, expected="stream-json records with a 'type' of system, assistant, user or result")
        if self.assembled:
            self.notes.warnings.append(f"{self.assembled} message(s) assembled from stream events: the stream ended before their complete records")
        main = self.threads[_MAIN]
        prompts = _task_prompts(main.rows)
        seen: set[str] = set()
        messages = self._messages(main, _MAIN, None, seen)
        sidechains: dict[str, list[Message]] = {}
        for key, thread in self.threads.items():
            if key != _MAIN:
                msgs = self._messages(thread, key, prompts.get(key), seen)
                if msgs:
                    sidechains[key] = msgs
        if self.side_records:
            self.notes.warnings.append(
                f"{sum(self.side_records.values())} sidechain records in {len(self.side_records)} subagent threads, not part of the main context: "
                "kept as the transcript's sidechains, never replayed; `python -m lab sessions FILE` lists the threads, --session ID reads one"
            )
        if not any(m.role in ("user", "assistant") for m in messages) and not sidechains:
            raise TranscriptError(
                f"{self.sdk_records} Agent SDK records but no user or assistant message among them", file=self.file,
                expected="assistant and user records (a lone result record is what --output-format json prints; use stream-json --verbose)",
            )
        init = self.init or {}
        meta = TranscriptMeta(
            source_format=NAME, session_id=self.session_id, model=opt_str(init.get("model")) or self.model,
            cwd=opt_str(init.get("cwd")), title="Claude Agent SDK session", source_path=self.file,
        )  # fmt: skip
        return Transcript(meta=meta, messages=messages, tools=_tools(init.get("tools"), self.notes), sidechains=sidechains, notes=self.notes)

    def _messages(self, thread: _Thread, key: str, prompt: str | None, seen: set[str]) -> list[Message]:
        rows = thread.rows
        first = next((r for r in rows if r["role"] != "system"), None)
        if first is not None and first["role"] == "assistant":
            # The API needs a user turn first; claude -p does not echo the prompt.
            text = prompt or _NO_PROMPT
            rows.insert(0, {"role": "user", "content": [{"type": "text", "text": text}], "id": f"{key or 'main'}-prompt", "timestamp": None,
                            "usage": None, "tag": None if prompt else "placeholder", "boundary": None, "api_id": None})  # fmt: skip
            if prompt is None:
                where = f"sidechain {key}" if key else "the main thread"
                self.notes.warnings.append(f"{where} starts with the agent's reply: a placeholder user turn stands for the prompt")
        out: list[Message] = []
        uses: set[str] = set()
        answered: set[str] = set()
        for row in rows:
            mid, n = row["id"], 1
            while mid in seen:
                n += 1
                mid = f"{row['id']}#{n}"
            seen.add(mid)
            fields = {k: v for k, v in row.items() if k != "api_id"}
            fields["id"] = mid
            fields["timestamp"] = parse_timestamp(row["timestamp"])
            if fields["boundary"] is not None:
                fields["boundary"] = Boundary(**fields["boundary"])
            for b in row["content"]:
                if b["type"] == "tool_use":
                    uses.add(b["id"])
                elif b["type"] == "tool_result":
                    if b["tool_use_id"] not in uses:
                        self.notes.orphan_tool_results.append(b["tool_use_id"])
                    answered.add(b["tool_use_id"])
            out.append(Message.model_validate(fields))
        self.notes.unanswered_tool_uses += [u for u in uses if u not in answered]
        return out


def _task_prompts(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The prompt of every subagent call in a thread, by its tool_use id."""
    prompts: dict[str, str] = {}
    for row in rows:
        for b in row["content"]:
            if b["type"] == "tool_use" and isinstance(b["input"].get("prompt"), str) and b["input"]["prompt"].strip():
                prompts[b["id"]] = b["input"]["prompt"]
    return prompts


def _tools(raw: Any, notes: ImportNotes) -> list[ToolSpec]:
    """The init record's tools: names (the stream's spelling) or definitions with a name."""
    if not isinstance(raw, list):
        return []
    specs: list[ToolSpec] = []
    for tool in raw:
        name = tool if isinstance(tool, str) else tool.get("name") if isinstance(tool, dict) else None
        if isinstance(name, str) and name:
            desc = tool.get("description") if isinstance(tool, dict) else None
            specs.append(ToolSpec(name=name, description=desc if isinstance(desc, str) else ""))
        else:
            notes.skip("tool:invalid")
    return specs


def _record_kind(rec: Any) -> str:
    if not isinstance(rec, dict):
        return "non_object"
    kind = rec.get("type")
    return kind if isinstance(kind, str) and kind else "unknown"


# -- reading -----------------------------------------------------------------------


def from_records(records: Iterable[tuple[Any, Loc]], notes: ImportNotes, file: str | None = None) -> Transcript:
    """Convert SDK records (each with where it was read) into a transcript."""
    s = _Session(notes, file)
    with gc_paused():
        for n, (rec, loc) in enumerate(records):
            if isinstance(rec, dict) and "parentUuid" in rec:
                # Claude Code's own session entries: their parentUuid chain, which this reader does
                # not follow, decides which are the conversation (rewinds, retries).
                raise loc.error("a Claude Code session entry (parentUuid), not an Agent SDK message", expected="Agent SDK stream-json records")
            s.record(rec, loc, n)
        return s.finish()


def read(path: Path) -> Transcript:
    path = Path(path)
    file = str(path)
    notes = ImportNotes()
    if read_file_head(path).shape == "jsonl":

        def lines() -> Iterator[tuple[Any, Loc]]:
            for line_no, rec in iter_log_lines(path, notes):
                yield rec, Loc(file, "$", line_no)

        return from_records(lines(), notes, file)
    doc = read_json(path)
    base = Loc(file)
    if isinstance(doc, dict):
        # One record on its own (what --output-format json prints is a lone result record).
        notes.records_read = 1
        return from_records([(doc, base)], notes, file)
    if not isinstance(doc, list):
        raise TranscriptError("not an Agent SDK message log", file=file, where="$", expected="JSONL of SDK messages, or a JSON list of them")
    notes.records_read = len(doc)
    return from_records(((rec, base.at(i)) for i, rec in enumerate(doc)), notes, file)


# -- detection ---------------------------------------------------------------------

_HEAD_INIT = re.compile(r'"type"\s*:\s*"system"\s*,\s*"subtype"\s*:\s*"init"')


def _only_sdk(rec: dict[str, Any], kind: str) -> bool:
    """Whether a record shows what only the Agent SDK writes."""
    if kind == "system":
        return rec.get("subtype") == "init" and "session_id" in rec
    if kind == "result":
        return "num_turns" in rec or "total_cost_usd" in rec
    return "parent_tool_use_id" in rec or "session_id" in rec


def _only_sdk_dump(rec: dict[str, Any], kind: str) -> bool:
    """The same for a dataclass dump: its system, result and stream records, or a message's SDK fields."""
    return kind in ("system", "result", "stream_event") or "parent_tool_use_id" in rec or "message_id" in rec


def _score(records: list[Any]) -> int:
    if not records:
        return 0
    if any(isinstance(r, dict) and not _CLAUDE_CODE_KEYS.isdisjoint(r) for r in records):
        return 0
    hits = [(hit, rec) for rec in records if (hit := normalize(rec)) is not None]
    if not hits or len(hits) * 2 < len(records):
        return 0
    if not any(_only_sdk(rec, hit[0]) if "type" in rec else _only_sdk_dump(rec, hit[0]) for hit, rec in hits):
        return 0
    if all(hit[0] == "result" for hit, _ in hits):
        # Only a result record (--output-format json): ours to refuse with a useful message.
        return 50
    return 97


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, list):
        return _score(doc[:50])
    if isinstance(doc, dict) and probe.records is None:
        return _score([doc])
    if probe.records:
        return _score(probe.records)
    if doc is None and probe.shape == "json":
        head = probe.head
        if _HEAD_INIT.search(head) and '"session_id"' in head and '"parentUuid"' not in head:
            return 92
    return 0


FORMAT = Format(
    name=NAME,
    description="Claude Agent SDK sessions (claude -p --output-format stream-json --verbose, SDK message lists and dataclass dumps)",
    sniff=sniff,
    read=read,
    # More specific: stream-json records carry Claude Code's own entry shapes.
    more_specific_than=("claude_code",),
)
