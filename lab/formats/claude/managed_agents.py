"""Claude Managed Agents session events (the ``/v1/sessions/{id}/events`` stream).

A Managed Agents session is a log of typed events, ``{id, type,
processed_at, ...}``, whose ``type`` is ``{domain}.{action}``: ``user.*`` (what
the client sent), ``agent.*`` (what the agent did), ``span.*`` (timing and
usage of each model request) and ``session.*`` (status changes and errors).
Shapes follow the public API reference and the SDK's generated types
(``anthropic.types.beta.sessions.beta_managed_agents_*``).

Accepted sources: a JSON list of events, JSONL with one event per line, the
list endpoint's page ``{"data": [...]}`` (``{"events": [...]}`` too), and any
of these with each event wrapped as ``{role, kind, time, raw}`` (the event in
``raw``; ``time`` stands in for a missing ``processed_at``).

Mapping:

* ``agent.message`` -> assistant text (``redacted`` blocks are counted);
  ``agent.tool_use`` / ``agent.mcp_tool_use`` / ``agent.custom_tool_use`` ->
  tool_use blocks whose id is the event id; ``agent.thinking`` with text ->
  a thinking block (the API's own event is a progress signal without content,
  so it is counted instead).
* The agent events between ``span.model_request_start`` and its
  ``span.model_request_end`` form one assistant message: one model request.
  The end event's ``model_usage`` becomes that message's ``Usage``. Without
  span events, consecutive agent events form one message.
* ``agent.tool_result`` (``tool_use_id``), ``agent.mcp_tool_result``
  (``mcp_tool_use_id``), ``user.custom_tool_result`` (``custom_tool_use_id``)
  and ``user.tool_result`` -> tool_result blocks, consecutive ones in one user
  message. A ``user.tool_confirmation`` that denies a call answers it with an
  error result carrying ``deny_message``; a call still unanswered when the
  conversation moves on is answered "no result recorded" (with a warning), so
  every request the history implies is valid.
* ``user.message`` -> user text (after pending tool results, in their
  message); ``system.message`` -> a system message.
* ``user.define_outcome`` -> a user turn with its ``description`` (the task:
  the agent begins work on it, and a session may hold no ``user.message`` at
  all; dropped, the user's task is lost and the history opens on an assistant
  turn). Its rubric is the grader's, not the agent's input: counted
  (``user.define_outcome rubric``). Any other ``user.*`` event that carries
  text (``content`` blocks, or a ``text``, ``message``, ``prompt`` or
  ``description`` string) is a user turn too; one without text (an
  interrupt) is counted by its type.
* ``session.*`` and other status or span events are never messages: each is
  counted in ``notes.skipped`` by its type; ``session.error``,
  ``session.status_terminated`` and an idle ``retries_exhausted`` become
  warnings, as does ``agent.thread_context_compacted`` (the agent compacted
  its own context; this history is the uncompacted one).
* Events cross-posted from a subagent thread (``session_thread_id`` set) are
  not the primary thread's and are counted; unknown types are counted as
  ``event:<type>``; records that are not events as ``record:<kind>``.

Detection scores 97 when most of the first records are events with a known
type (above every chat-message sniffer: wrapped events carry a chat ``role``),
92 for a document too large to probe whose head shows several known types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImportNotes, ThinkingBlock, ToolUseBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, document_or_log, parse_timestamp, opt_str
from ..anthropic_blocks import convert_blocks, tool_result_text, usage_from
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "EVENT_TYPES", "unwrap", "from_events", "from_document", "read", "sniff"]

NAME = "managed_agents"

_TOOL_USES = frozenset({"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"})
# Result event type -> the field naming the tool use event it answers.
_RESULT_IDS = {
    "agent.tool_result": "tool_use_id",
    "agent.mcp_tool_result": "mcp_tool_use_id",
    "user.custom_tool_result": "custom_tool_use_id",
    "user.tool_result": "tool_use_id",
}
# Every type the API reference lists; detection trusts these, not just the dotted shape.
EVENT_TYPES = frozenset(
    {
        "user.message", "user.interrupt", "user.custom_tool_result", "user.tool_confirmation",
        "user.define_outcome", "user.tool_result",
        "agent.message", "agent.thinking", "agent.tool_use", "agent.tool_result", "agent.mcp_tool_use",
        "agent.mcp_tool_result", "agent.custom_tool_use", "agent.thread_context_compacted",
        "agent.thread_message_received", "agent.thread_message_sent",
        "session.status_running", "session.status_idle", "session.status_rescheduled",
        "session.status_terminated", "session.deleted", "session.updated", "session.error",
        "session.thread_created", "session.thread_status_running", "session.thread_status_idle",
        "session.thread_status_rescheduled", "session.thread_status_terminated",
        "span.model_request_start", "span.model_request_end", "span.outcome_evaluation_start",
        "span.outcome_evaluation_ongoing", "span.outcome_evaluation_end",
        "system.message",
    }
)  # fmt: skip
_CONTAINERS = ("data", "events")
# Where a ``user.*`` event other than a message carries its text (``user.define_outcome``: ``description``).
_USER_TEXT_FIELDS = ("description", "text", "message", "prompt")
_NO_RESULT = "[no tool result recorded in the session events]"
_DENIED = "Tool call denied by the permission policy"


def unwrap(record: Any) -> tuple[dict[str, Any], Any] | None:
    """``(event, fallback timestamp)`` when a record is an event, bare or wrapped as ``{role, kind, time, raw}``."""
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("type"), str) and "." in record["type"]:
        return record, None
    raw = record.get("raw")
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        # Some loggers store the event as its JSON text.
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, dict) and isinstance(raw.get("type"), str):
        return raw, record.get("time") or record.get("timestamp")
    return None


def _record_kind(record: Any) -> str:
    if isinstance(record, dict):
        for key in ("kind", "type"):
            if opt_str(record.get(key)):
                return str(record[key])
    return "unknown" if isinstance(record, dict) else "non_object"


class _Session:
    """One event stream being turned into an alternating history."""

    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.turn: list[Block] = []  # the assistant message being assembled
        self.turn_key: str | None = None
        self.turn_stamp: datetime | None = None
        self.in_span = False
        self.span_message: int | None = None  # index of the assistant message the open span produced
        self.answered: set[str] = set()
        self.denied: set[str] = set()
        self.uses: set[str] = set()  # tool use ids as the events spell them
        self.merged = 0  # model requests whose output joined the assistant message before them
        self.events = 0
        self.session_id: str | None = None

    # -- assistant turns -------------------------------------------------------
    def _flush(self) -> None:
        if not self.turn:
            return
        last = self.b.messages[-1] if self.b.messages else None
        merging = last is not None and last.role == "assistant"
        if merging:
            # A model request that follows another with no user turn between continues that turn.
            self.merged += 1
        else:
            self._close_pending(keep={b.id for b in self.turn if isinstance(b, ToolUseBlock)})
        self.b.add("assistant", self.turn, key=self.turn_key or "a", timestamp=self.turn_stamp, merge=True)
        if self.in_span and self.span_message is None:
            self.span_message = len(self.b.messages) - 1
        self.turn, self.turn_key, self.turn_stamp = [], None, None

    def _output(self, blocks: list[Block], key: str, stamp: datetime | None) -> None:
        if not blocks:
            return
        if not self.turn:
            self.turn_key, self.turn_stamp = key, stamp
        self.turn += blocks

    def _close_pending(self, keep: frozenset[str] | set[str] = frozenset()) -> None:
        """Answer calls the events never answered, so no request holds a call without its result.

        ``keep``: calls of the turn being assembled (the builder counts a call as pending
        from the moment its block is made, before its message is added).
        """
        for tid, name in self.b.pending():
            if tid in keep:
                continue
            why = _DENIED if tid in self.denied else _NO_RESULT
            self.b.result(tid, why, key=f"{tid}.missing", is_error=True, canonical=True)
            self.answered.add(tid)
            if tid not in self.denied:
                self.notes.warnings.append(f"tool call {tid!r} ({name}) has no result in the events; answered {_NO_RESULT!r}")

    def _span_end(self, ev: dict[str, Any], where: str) -> None:
        self._flush()
        usage = usage_from(ev.get("model_usage")) or usage_from(ev.get("usage"))
        if ev.get("is_error") is True:
            self.notes.warnings.append(f"{where}: a model request failed (span.model_request_end is_error)")
        if usage is not None and self.span_message is not None:
            i = self.span_message
            self.b.messages[i] = self.b.messages[i].model_copy(update={"usage": usage})
        elif usage is not None and not _empty(usage):
            self.notes.skip("usage:no_output")
        self.in_span, self.span_message = False, None

    # -- events ------------------------------------------------------------------
    def event(self, ev: dict[str, Any], fallback_stamp: Any, loc: Loc) -> None:
        n, self.events = self.events, self.events + 1
        kind = ev["type"]
        key = opt_str(ev.get("id")) or f"e{n}"
        stamp = parse_timestamp(ev.get("processed_at")) or parse_timestamp(fallback_stamp)
        if self.session_id is None:
            self.session_id = opt_str(ev.get("session_id"))
        if opt_str(ev.get("session_thread_id")) and (kind in _TOOL_USES or kind in _RESULT_IDS or kind == "user.tool_confirmation"):
            self.notes.skip(f"{kind} (subagent thread)")
        elif kind == "agent.message":
            self._output(convert_blocks(ev.get("content"), self.notes, loc.where), key, stamp)
        elif kind == "agent.thinking":
            self._thinking(ev, key, stamp)
        elif kind in _TOOL_USES:
            self._tool_use(ev, kind, key, stamp, loc)
        elif kind in _RESULT_IDS:
            self._result(ev, kind, key, stamp)
        elif kind == "user.tool_confirmation":
            self._confirmation(ev, key, stamp)
        elif kind in ("user.message", "system.message"):
            self._message(ev, kind, key, stamp, loc)
        elif kind.startswith("user.") and kind not in _RESULT_IDS:
            self._user_event(ev, kind, key, stamp, loc)
        elif kind == "span.model_request_start":
            self._flush()
            self.in_span, self.span_message = True, None
            self.notes.skip(kind)
        elif kind == "span.model_request_end":
            self._span_end(ev, loc.where)
            self.notes.skip(kind)
        elif kind in EVENT_TYPES:
            self._status(ev, kind, loc.where)
        else:
            self.notes.skip(f"event:{kind}")

    def _thinking(self, ev: dict[str, Any], key: str, stamp: datetime | None) -> None:
        text = opt_str(ev.get("thinking")) or "\n".join(
            b["thinking"] for b in ev.get("content") or [] if isinstance(b, dict) and opt_str(b.get("thinking"))
        )
        if text:
            self._output([ThinkingBlock(thinking=text, signature=opt_str(ev.get("signature")))], key, stamp)
        else:
            self.notes.skip("agent.thinking")

    def _tool_use(self, ev: dict[str, Any], kind: str, key: str, stamp: datetime | None, loc: Loc) -> None:
        name = opt_str(ev.get("name"))
        if name is None:
            self.notes.warnings.append(f"{loc.where}: {kind} event without a tool name: kept as an {UNNAMED_TOOL} call")
            name = UNNAMED_TOOL
        raw_input = ev.get("input")
        tool_input = raw_input if isinstance(raw_input, dict) else ({} if raw_input is None else {"value": raw_input})
        source_id = opt_str(ev.get("id"))
        use = self.b.use(source_id, name, tool_input, key=key)
        self.uses.add(source_id or use.id)
        self._output([use], key, stamp)
        if ev.get("evaluated_permission") == "deny":
            # The permission policy refused it: no tool_result event will follow.
            self.denied.add(use.id)

    def _result(self, ev: dict[str, Any], kind: str, key: str, stamp: datetime | None) -> None:
        call_id = opt_str(ev.get(_RESULT_IDS[kind])) or opt_str(ev.get("tool_use_id"))
        if call_id is None:
            self.notes.skip(f"{kind} (no tool use id)")
            return
        if call_id in self.answered:
            self.notes.skip(f"{kind} (already answered)")
            return
        if call_id not in self.uses:
            # A result without its call would make every later request invalid: counted, not kept.
            self.notes.skip(f"{kind} (unknown tool use)")
            self.notes.orphan_tool_results.append(call_id)
            return
        self._flush()
        self.answered.add(call_id)
        self.b.result(call_id, tool_result_text(ev.get("content")), key=key, is_error=ev.get("is_error") is True, timestamp=stamp)

    def _confirmation(self, ev: dict[str, Any], key: str, stamp: datetime | None) -> None:
        call_id = opt_str(ev.get("tool_use_id"))
        if ev.get("result") == "deny" and call_id in self.uses and call_id not in self.answered:
            self._flush()
            self.answered.add(call_id)
            reason = opt_str(ev.get("deny_message")) or "the user denied this tool call"
            self.b.result(call_id, f"Tool call denied: {reason}", key=key, is_error=True, timestamp=stamp)
        self.notes.skip("user.tool_confirmation")

    def _user_event(self, ev: dict[str, Any], kind: str, key: str, stamp: datetime | None, loc: Loc) -> None:
        """A ``user.*`` event other than a message: a user turn when it carries text, else counted by its type."""
        if kind == "user.define_outcome" and ev.get("rubric") is not None:
            self.notes.skip("user.define_outcome rubric")
        text = next((t for f in _USER_TEXT_FIELDS if (t := opt_str(ev.get(f))) is not None and t.strip()), None)
        if ev.get("content") is None and text is None:
            self.notes.skip(kind)
            return
        self._message(ev if ev.get("content") is not None else {**ev, "content": text}, kind, key, stamp, loc)

    def _message(self, ev: dict[str, Any], kind: str, key: str, stamp: datetime | None, loc: Loc) -> None:
        blocks = convert_blocks(ev.get("content"), self.notes, loc.where)
        if not blocks:
            self.notes.skip(f"{kind} (empty)")
            return
        self._flush()
        if kind == "system.message":
            self.b.add("system", blocks, key=key, timestamp=stamp)
            return
        self._close_pending()
        results = self.b.open_results_id
        if results is not None:
            # The user's words join the tool results before them: one user turn, as the API expects.
            last = self.b.messages[-1]
            self.b.messages[-1] = last.model_copy(update={"content": last.content + tuple(blocks)})
            self.b.close_results()
        else:
            self.b.add("user", blocks, key=key, timestamp=stamp)

    def _status(self, ev: dict[str, Any], kind: str, where: str) -> None:
        self.notes.skip(kind)
        if kind == "session.error":
            raw_err = ev.get("error")
            err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
            what = opt_str(err.get("type")) or "error"
            message = opt_str(err.get("message")) or ""
            self.notes.warnings.append(f"{where}: session error {what}{': ' + message if message else ''}")
        elif kind in ("session.status_terminated", "session.deleted"):
            self.notes.warnings.append(f"{where}: {kind}")
        elif kind == "session.status_idle":
            reason = ev.get("stop_reason")
            if isinstance(reason, dict) and reason.get("type") == "retries_exhausted":
                self.notes.warnings.append(f"{where}: session went idle after exhausting its retries")
        elif kind == "agent.thread_context_compacted":
            self.notes.warnings.append(f"{where}: the agent compacted its own context here; the history imported is the uncompacted one")

    def finish(self) -> list[Any]:
        self._flush()
        if self.merged:
            self.notes.warnings.append(
                f"{self.merged} model request(s) continued the assistant turn before them with no user turn between; merged into one assistant message"
            )
        return self.b.finish()


def _empty(usage: Usage) -> bool:
    return not (usage.input_tokens or usage.output_tokens or usage.cache_read_tokens or usage.cache_write_tokens)


def _convert(records: Iterable[tuple[Any, Loc]], notes: ImportNotes, file: str | None, session_id: str | None = None) -> Transcript:
    s = _Session(notes)
    for record, loc in records:
        hit = unwrap(record)
        if hit is None:
            notes.skip(f"record:{_record_kind(record)}")
            continue
        s.event(hit[0], hit[1], loc)
    messages = s.finish()
    if not s.events:
        raise TranscriptError("no Managed Agents events found", file=file, expected="events with a 'type' such as agent.message or user.message")
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(
            f"{s.events} Managed Agents events but no user or agent message among them", file=file,
            expected="user.message, agent.message or agent.tool_use events",
        )
    meta = TranscriptMeta(source_format=NAME, source_path=file, session_id=session_id or s.session_id, title="Claude Managed Agents session")
    return Transcript(meta=meta, messages=messages, notes=notes)


def from_events(events: list[Any], *, file: str | None = None, path: str = "$", session_id: str | None = None) -> Transcript:
    """Convert a list of events (bare or wrapped) found at JSON ``path``."""
    notes = ImportNotes(records_read=len(events))
    base = Loc(file, path)
    return _convert(((ev, base.at(i)) for i, ev in enumerate(events)), notes, file, session_id)


def _container(doc: dict[str, Any]) -> str | None:
    return next((k for k in _CONTAINERS if isinstance(doc.get(k), list)), None)


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A list of events, a ``{"data": [...]}`` page (or ``{"events": [...]}``), or one event."""
    if isinstance(doc, list):
        return from_events(doc, file=file)
    if isinstance(doc, dict):
        k = _container(doc)
        if k is not None:
            return from_events(doc[k], file=file, path=f"$.{k}", session_id=opt_str(doc.get("session_id")))
        if unwrap(doc) is not None:
            return from_events([doc], file=file)
    raise TranscriptError("not a Managed Agents event log", file=file, where="$", expected="a list of events, or {'data': [...]}")


def read(path: Path) -> Transcript:
    file = str(path)
    notes = ImportNotes()
    doc, records = document_or_log(path, notes, "Managed Agents events", lambda first: isinstance(first, dict) and _container(first) is not None)
    if records is None:
        return from_document(doc, file=file)
    return _convert(records, notes, file)


# -- detection -------------------------------------------------------------------

_HEAD_TYPE = re.compile(r'"type"\s*:\s*"((?:agent|user|session|span|system)\.[a-z_]+)"')


def _score(records: list[Any]) -> int:
    types = [hit[0]["type"] for hit in map(unwrap, records) if hit is not None]
    known = [t for t in types if t in EVENT_TYPES]
    if not known:
        return 0
    # Other records in the majority: some other log that mentions events, a weak claim.
    return 97 if len(types) * 2 >= len(records) else 40


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, list):
        return _score(doc[:50])
    if isinstance(doc, dict):
        k = _container(doc)
        if k is not None:
            return _score(doc[k][:50])
    if probe.records:
        return _score(probe.records)
    if doc is None:
        seen = {t for t in _HEAD_TYPE.findall(probe.head) if t in EVENT_TYPES}
        return 92 if len(seen) >= 2 else 0
    return 0


FORMAT = Format(
    name=NAME,
    description="Claude Managed Agents session events (JSON list, JSONL, {data: [...]} page; bare or {role, kind, time, raw})",
    sniff=sniff,
    read=read,
)
