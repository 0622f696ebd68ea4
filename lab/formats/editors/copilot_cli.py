"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/<sessionId>/events.jsonl`` (older CLIs: ``<sessionId>.jsonl``).

Every line is one event ``{type, data, id, timestamp, parentId}``; the shapes
follow the event types the Copilot SDKs generate (``session_events``).

Mapping:

* the ``summary`` of the ``workspace.yaml`` beside ``events.jsonl`` is the title;
  ``session.start``: the session id, the CLI version and the working directory
  (``data.context.cwd``) go into the meta; ``session.model_change`` (and
  ``assistant.usage``) name the model.
* ``user.message``: a user turn. Its ``transformedContent``, when the CLI
  recorded one, is what the model was sent (the words with what the CLI added);
  else ``content``.
* ``assistant.reasoning``: thinking, joined to the response that follows it.
* ``assistant.message``: assistant text plus a tool_use per ``toolRequests``
  entry (``{toolCallId, name, arguments}``; arguments as an object or JSON text).
* ``tool.execution_complete``: the result of its ``toolCallId``:
  ``result.content`` (else ``detailedContent``), or ``error.message`` with
  ``is_error`` when ``success`` is false.
* ``assistant.usage``: that model call's tokens on the latest assistant message.
  ``inputTokens`` is the whole prompt, the cached part included (``cacheReadTokens``
  says how much of it came from the cache), so the uncached input is what is
  left after the cache reads and writes.
* ``session.compaction_complete`` that succeeded: a boundary, then its
  ``summaryContent`` as a user message tagged ``summary`` (a note in its place
  when it recorded none), so a replay can undo it: the events before it are
  all still in the file. ``session.truncation`` (the CLI dropped messages to
  fit its limit without a summary) and ``session.error`` become warnings.
* Events of a subagent (``data.parentToolCallId`` set) belong to that agent's
  own context: counted as ``subagent:<type>``, never put in the main thread.
* Turn markers, ``tool.execution_start`` (the call is in its
  ``assistant.message``), session bookkeeping and unknown types are counted as
  ``event:<type>``; lines that are no events as ``record:<kind>``.

Detection: 98 when the first records are such events (each ``type`` with a
``data`` object) and one of them is a type only Copilot CLI writes
(``assistant.*``, ``tool.execution_*``, ``session.start`` with a ``producer``),
above Managed Agents' 97 for dotted ``user.message`` events.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ...core.messages import Block, Boundary, ImportNotes, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, document_or_log, opt_str, parse_arguments, parse_timestamp, text_block, token_count
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "COMPACTION_STRATEGY", "from_events", "read", "sniff"]

NAME = "copilot_cli"
COMPACTION_STRATEGY = "copilot_cli_compaction"
# Types only Copilot CLI writes (Managed Agents shares user.message and session.* names, never these).
_OWN_TYPES = frozenset(
    {"assistant.message", "assistant.reasoning", "assistant.turn_start", "assistant.turn_end", "assistant.usage",
     "tool.execution_start", "tool.execution_complete", "session.compaction_complete", "session.truncation"}
)  # fmt: skip


class _Session:
    """One event stream being turned into a history."""

    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.meta = TranscriptMeta(source_format=NAME, title="GitHub Copilot CLI session")
        self.thinking: list[Block] = []
        self.events = 0

    def event(self, ev: dict[str, Any], loc: Loc, key: str) -> None:
        kind, data = ev["type"], ev["data"]
        self.events += 1
        stamp = parse_timestamp(ev.get("timestamp"))
        if opt_str(data.get("parentToolCallId")):
            self.notes.skip(f"subagent:{kind}")
            return
        if kind == "user.message":
            text = opt_str(data.get("transformedContent")) or opt_str(data.get("content"))
            blocks = list[Block](text_block(text))
            if blocks:
                self.b.user_turn(blocks, key=key, timestamp=stamp)
            else:
                self.notes.skip("user.message:empty")
        elif kind == "assistant.reasoning":
            self.thinking += [ThinkingBlock(thinking=t) for t in [opt_str(data.get("content"))] if t]
        elif kind == "assistant.message":
            self.assistant(data, loc, key, stamp)
        elif kind == "tool.execution_complete":
            self.result(data, loc, key, stamp)
        elif kind == "assistant.usage":
            self.usage(data)
        elif kind == "session.start":
            self.start(data)
            self.notes.skip(f"event:{kind}")
        elif kind == "session.model_change":
            self.meta.model = opt_str(data.get("newModel")) or self.meta.model
            self.notes.skip(f"event:{kind}")
        elif kind == "session.compaction_complete" and data.get("success") is True:
            self.compaction(data, key, stamp)
        elif kind == "session.truncation":
            removed = token_count(data.get("messagesRemovedDuringTruncation"))
            self.notes.warnings.append(
                f"{loc.where}: Copilot CLI truncated {removed or 'some'} message(s) to fit its limit, without a summary; "
                "this history is the untruncated one"
            )
            self.notes.skip(f"event:{kind}")
        elif kind == "session.error":
            self.notes.warnings.append(f"{loc.where}: Copilot CLI session error: {opt_str(data.get('message')) or 'no message'}")
            self.notes.skip(f"event:{kind}")
        else:
            self.notes.skip(f"event:{kind}")

    def start(self, data: dict[str, Any]) -> None:
        self.meta.session_id = opt_str(data.get("sessionId"))
        version = opt_str(data.get("copilotVersion"))
        if version:
            self.meta.title = f"GitHub Copilot CLI {version} session"
        context = data.get("context")
        cwd = opt_str(context.get("cwd")) if isinstance(context, dict) else None
        if cwd:
            self.meta.cwd = cwd
        self.meta.model = opt_str(data.get("selectedModel")) or self.meta.model

    def assistant(self, data: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        blocks: list[Block] = self.thinking
        self.thinking = []
        reasoning = opt_str(data.get("reasoningText"))
        if reasoning and not blocks:
            blocks.append(ThinkingBlock(thinking=reasoning))
        blocks += text_block(opt_str(data.get("content")))
        requests = data.get("toolRequests")
        for i, req in enumerate(requests if isinstance(requests, list) else []):
            if not isinstance(req, dict) or not opt_str(req.get("toolCallId")) or not opt_str(req.get("name")):
                self.notes.skip("toolRequest:malformed")
                continue
            args = parse_arguments(req.get("arguments"), self.notes, loc.at("data").at("toolRequests").at(i).at("arguments"))
            blocks.append(self.b.use(req["toolCallId"], req["name"], args, key=f"{key}.{i}"))
        if blocks:
            self.b.add("assistant", blocks, key=key, timestamp=stamp)
        else:
            self.notes.skip("assistant.message:empty")

    def result(self, data: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        call_id = opt_str(data.get("toolCallId"))
        if call_id is None:
            raise loc.at("data").error("tool.execution_complete without a toolCallId", expected="a string 'toolCallId'")
        failed = data.get("success") is False
        result, error = data.get("result"), data.get("error")
        text = None
        if isinstance(result, dict):
            text = opt_str(result.get("content")) or opt_str(result.get("detailedContent"))
        if text is None and isinstance(error, dict):
            text = opt_str(error.get("message"))
        if text is None and isinstance(error, str):
            text = error
        self.b.result(call_id, text or "", key=key, is_error=failed, timestamp=stamp)

    def usage(self, data: dict[str, Any]) -> None:
        read, written = token_count(data.get("cacheReadTokens")), token_count(data.get("cacheWriteTokens"))
        usage = Usage(
            input_tokens=max(token_count(data.get("inputTokens")) - read - written, 0),
            output_tokens=token_count(data.get("outputTokens")),
            cache_read_tokens=read,
            cache_write_tokens=written,
        )
        if usage.total:
            self.b.set_last_usage(usage)
        self.meta.model = self.meta.model or opt_str(data.get("model"))

    def compaction(self, data: dict[str, Any], key: str, stamp: datetime | None) -> None:
        before = token_count(data.get("preCompactionTokens"))
        boundary = Boundary(trigger="import", strategy=COMPACTION_STRATEGY, timestamp=stamp, tokens_before=before)
        removed = token_count(data.get("messagesRemoved"))
        summary = opt_str(data.get("summaryContent")) or (
            f"[Copilot CLI compacted the conversation ({removed or 'some'} message(s) removed); its summary is not in the file]"
        )
        self.b.compaction(boundary, "[Conversation compacted by Copilot CLI]", summary, key=key, timestamp=stamp)


def _event(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("type"), str) and isinstance(record.get("data"), dict)


def _convert(records: Any, notes: ImportNotes, file: str | None) -> Transcript:
    s = _Session(notes)
    for n, (record, loc) in enumerate(records):
        if _event(record):
            s.event(record, loc, f"e{n}")
        else:
            notes.skip(f"record:{record.get('type') if isinstance(record, dict) and isinstance(record.get('type'), str) else type(record).__name__}")
    if not s.events:
        raise TranscriptError("no Copilot CLI events found", file=file, expected="events {type, data} such as user.message or assistant.message")
    s.meta.source_path = file
    return Transcript(meta=s.meta, messages=s.b.finish(), notes=notes)


def from_events(events: list[Any], *, file: str | None = None) -> Transcript:
    """Convert a list of events (as the JSONL's lines, parsed)."""
    notes = ImportNotes(records_read=len(events))
    base = Loc(file, "$")
    return _convert(((ev, base.at(i)) for i, ev in enumerate(events)), notes, file)


def _workspace_summary(path: Path) -> str | None:
    """The session's title as the CLI keeps it: ``summary`` in the ``workspace.yaml`` beside ``events.jsonl``."""
    meta = path.with_name("workspace.yaml")
    if path.name != "events.jsonl" or not meta.is_file():
        return None
    try:
        data = yaml.safe_load(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return opt_str(data.get("summary")) if isinstance(data, dict) else None


def read(path: Path) -> Transcript:
    file = str(path)
    notes = ImportNotes()
    doc, records = document_or_log(path, notes, "Copilot CLI events", lambda first: False)
    if records is None:
        if not isinstance(doc, list):
            raise TranscriptError("not a Copilot CLI event log", file=file, where="$", expected="one event {type, data} per line")
        t = from_events(doc, file=file)
    else:
        t = _convert(records, notes, file)
    t.meta.title = _workspace_summary(Path(path)) or t.meta.title
    return t


def _score(records: list[Any]) -> int:
    events = [r for r in records if _event(r)]
    if not events or len(events) * 2 < len(records):
        return 0
    own = any(
        r["type"] in _OWN_TYPES or (r["type"] == "session.start" and ("producer" in r["data"] or "copilotVersion" in r["data"]))
        for r in events
    )
    return 98 if own else 0


def sniff(probe: FileHead) -> int:
    if probe.records:
        return _score(probe.records)
    if isinstance(probe.document, list):
        return _score(probe.document[:50])
    return 0


FORMAT = Format(
    name=NAME,
    description="GitHub Copilot CLI session events (~/.copilot/session-state/<id>/events.jsonl)",
    sniff=sniff,
    read=read,
    # More specific: its dotted event types ({type, data, id, timestamp}) also fit Managed Agents' events.
    more_specific_than=("managed_agents",),
)
