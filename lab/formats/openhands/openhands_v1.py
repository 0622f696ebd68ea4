"""OpenHands V1 conversations (the software-agent-sdk event model).

V1 persists a conversation as one JSON file per event (``events/event-NNNNN-<id>.json``
next to ``base_state.json``); the agent server, the CLI's JSON mode and exports
hand the same events over as lists or streams. Every event names its class in
``kind`` and has ``id``, ``timestamp``, ``source`` (agent / user / environment).

Accepted sources: a JSON list of events, a JSONL file with one event per line, a
``{"events": [...]}`` document, the agent server's event page ``{"items": [...]}``
and a single event file; a persisted conversation folder through ``read_folder``
(``lab.formats.load`` of the folder).

* ``SystemPromptEvent`` -> system message (``system_prompt``, then
  ``dynamic_context``); its ``tools`` -> ``Transcript.tools``.
* ``MessageEvent`` -> user or assistant text from ``llm_message`` (image parts as
  placeholders, ``extended_content`` appended as the SDK does when it sends the
  message); thinking blocks, ``reasoning_content`` or a Responses reasoning
  summary -> ``ThinkingBlock``.
* ``ActionEvent`` -> a tool_use with the event's ``tool_call_id`` and
  ``tool_name``; its input is the model's ``tool_call.arguments`` (else the
  ``action`` minus its ``kind``). The model's ``thought`` text and reasoning
  lead the assistant message; actions of one model response (same
  ``llm_response_id``) share one assistant message.
* ``ObservationEvent`` -> a tool_result paired by ``tool_call_id`` (else by
  ``action_id``): the observation's content as the SDK sends it (images as
  markers; an error's ``[An error occurred during execution.]`` header; a
  terminal's working-directory, interpreter and exit-code lines), older
  ``output``/``error`` fields too; ``is_error`` from the observation.
* ``AgentErrorEvent`` and ``UserRejectObservation`` -> an error tool_result when
  their ``tool_call_id`` is a call of this history; otherwise counted.
* ``Condensation`` with a ``summary`` -> a boundary followed by the summary as a
  user message tagged ``summary``. One that forgets events without a summary
  (the agent-reset condenser) is a boundary too, followed by a note tagged
  ``summary`` as its user turn; one that forgets nothing is counted.
* ``ACPToolCallEvent`` (an ACP server's own tool calls, streamed pending ->
  completed under one id) -> one tool_use and tool_result per call from its
  last event (``title``, ``raw_input``, ``raw_output`` or ``content``); the
  earlier updates are counted.
* Usage: a conversation folder's ``base_state.json`` (or a document's
  ``stats``) holds one ``TokenUsage`` per model call; each lands on the
  assistant message of its ``llm_response_id``, cache reads and writes apart.
* Every other kind (``CondensationRequest``, ``PauseEvent``,
  ``ConversationStateUpdateEvent``, ``TokenEvent``, ``WarningEvent``,
  ``AskUserRequestEvent``, ...) is skipped and counted by kind.

Detection (``sniff``): 95 when the first event has a known V1 ``kind``; for a
document too large to parse while probing, 90 when its head shows V1 event
kinds and fields, 85 when it shows only a SystemPromptEvent's prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any

from ...core.messages import Block, ImageBlock, ImportNotes, Role, TextBlock, ThinkingBlock, ToolSpec, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, as_dict, image_from_url, need_dict, opt_str, parse_arguments, parse_timestamp, tool_specs
from ..anthropic_blocks import image_marker
from ..jsonio import gc_paused, iter_jsonl, leading_char, read_json
from .openhands import add_condensation
from ..registry import Format, FileHead

__all__ = ["FORMAT", "is_conversation_folder", "KINDS", "read", "from_events", "from_document", "read_folder", "event_files", "state_usages", "sniff"]

NAME = "openhands_v1"

# Event classes of openhands-sdk (openhands/sdk/event/) and the agent server; any of them
# identifies a V1 history.
KINDS = frozenset(
    {
        "SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
        "UserRejectObservation", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
        "PauseEvent", "InterruptEvent", "ConversationStateUpdateEvent", "ConversationErrorEvent",
        "TokenEvent", "LLMCompletionLogEvent", "HookExecutionEvent", "StreamingDeltaEvent",
        "ACPToolCallEvent", "ServerErrorEvent", "ConversationIterationLimitEvent", "WarningEvent",
        "AskUserRequestEvent", "AskUserResponseEvent",
    }
)  # fmt: skip
# Kinds that add messages: ACP tool calls buffered before one of them belong to the turn before it.
_CONVERTED = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation", "Condensation"})
# Keys of a document that wraps the event list: an export, and the agent server's event page.
_CONTAINERS = ("events", "items")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _parts(content: Any) -> list[Block]:
    """SDK content (a string, or a list of TextContent / ImageContent dicts) as blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)] if content else []
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str) and part:
            blocks.append(TextBlock(text=part))
        elif isinstance(part, dict):
            if part.get("type") == "image" or "image_urls" in part:
                urls = part.get("image_urls")
                blocks += [image_from_url(u) for u in (urls if isinstance(urls, list) else [])]
            elif isinstance(part.get("text"), str) and part["text"]:
                blocks.append(TextBlock(text=part["text"]))
    return blocks


def _text(content: Any) -> str:
    """Content flattened to the text of a tool result; images become markers."""
    texts: list[str] = []
    for b in _parts(content):
        if isinstance(b, TextBlock):
            texts.append(b.text)
        elif isinstance(b, ImageBlock):
            texts.append(image_marker(b))
    return "\n".join(texts)


def _thinking(source: dict[str, Any], notes: ImportNotes) -> list[Block]:
    """The model's reasoning: Anthropic thinking blocks, else reasoning_content, else a Responses summary."""
    blocks: list[Block] = []
    raw = source.get("thinking_blocks")
    for tb in raw if isinstance(raw, list) else []:
        if isinstance(tb, dict) and isinstance(tb.get("thinking"), str) and tb["thinking"]:
            sig = tb.get("signature")
            blocks.append(ThinkingBlock(thinking=tb["thinking"], signature=sig if isinstance(sig, str) else None))
        elif isinstance(tb, dict) and tb.get("type") == "redacted_thinking":
            notes.skip("redacted_thinking")
    if blocks:
        return blocks
    reasoning = source.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        return [ThinkingBlock(thinking=reasoning)]
    item = as_dict(source.get("responses_reasoning_item"))
    texts = [t for key in ("summary", "content") if isinstance(item.get(key), list) for t in item[key] if isinstance(t, str) and t]
    return [ThinkingBlock(thinking="\n".join(texts))] if texts else []


def _tools(raw: Any) -> list[ToolSpec]:
    """Tool definitions: SDK ToolDefinition dumps (``title``, no schema) or OpenAI tool params."""
    specs: list[ToolSpec] = []
    for t in raw if isinstance(raw, list) else []:
        if not isinstance(t, dict):
            continue
        if isinstance(t.get("function"), dict) or isinstance(t.get("name"), str):
            specs += tool_specs([t])
        elif isinstance(t.get("title"), str):
            # The tool's name is a class attribute in the SDK, so a dump carries only its title.
            specs.append(ToolSpec(name=t["title"], description=_str(t.get("description"))))
    return specs


class _Session:
    """One V1 history being converted, event by event."""

    def __init__(self, notes: ImportNotes, usages: dict[str, Usage] | None = None) -> None:
        self.b = HistoryBuilder(notes)
        self.usages = usages or {}  # llm_response_id -> what that model call cost
        self.notes = notes
        self.tools: list[ToolSpec] = []
        self.calls: set[str] = set()  # tool call ids of the actions seen so far
        self.by_action: dict[str, str] = {}  # action event id -> tool call id
        self.response_id: str | None = None
        self.events = 0
        # ACP tool calls of the current run, by call id, in first-seen order: (last event, its key, stamp).
        self.acp: dict[str, tuple[dict[str, Any], str, datetime | None]] = {}

    def event(self, ev: Any, loc: Loc) -> None:
        ev = need_dict(ev, loc, "event")
        n, self.events = self.events, self.events + 1
        eid = ev.get("id")
        key = eid if isinstance(eid, str) and eid else (f"e{eid}" if isinstance(eid, int) else f"e{n}")
        kind = ev.get("kind")
        stamp = parse_timestamp(ev.get("timestamp"))
        if kind != "ActionEvent":
            self.response_id = None
        if kind == "ACPToolCallEvent":
            self._acp_call(ev, key, stamp)
            return
        if isinstance(kind, str) and kind in _CONVERTED:
            self.flush_acp()
        if kind == "SystemPromptEvent":
            blocks = _parts([ev.get("system_prompt"), ev.get("dynamic_context")])
            self.b.add("system", blocks, key=key, timestamp=stamp)
            self.tools = _tools(ev.get("tools"))
        elif kind == "MessageEvent":
            self._message(ev, key, stamp)
        elif kind == "ActionEvent":
            self._action(ev, loc, key, stamp)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            self._observation(ev, kind, key, stamp)
        elif kind == "Condensation":
            self._condensation(ev, key, stamp)
        else:
            self.notes.skip(kind if isinstance(kind, str) and kind else "unknown")

    def _acp_call(self, ev: dict[str, Any], key: str, stamp: datetime | None) -> None:
        """An ACP server's tool call: it streams pending -> completed events under one id; the last one holds the I/O."""
        call_id = opt_str(ev.get("tool_call_id"))
        if call_id is None:
            self.notes.skip("ACPToolCallEvent (no call id)")
            return
        first = self.acp.get(call_id)
        if first is not None:
            self.notes.skip("ACPToolCallEvent (progress update)")
        self.acp[call_id] = (ev, first[1] if first else key, first[2] if first else stamp)

    def flush_acp(self) -> None:
        """The buffered ACP calls as one assistant turn of tool uses, then their results.

        ACP tool calls never reach the OpenHands LLM (the ACP server runs its own model), but they are
        what that agent called and read: kept as calls, a replay counts and compacts their output.
        """
        if not self.acp:
            return
        calls, self.acp = list(self.acp.items()), {}
        for n, (call_id, (ev, key, stamp)) in enumerate(calls):
            name = opt_str(ev.get("title")) or opt_str(ev.get("tool_kind")) or UNNAMED_TOOL
            raw = ev.get("raw_input")
            inputs = raw if isinstance(raw, dict) else ({} if raw is None else {"input": raw})
            self.b.add("assistant", [self.b.use(call_id, name, inputs, key=key)], key=key, timestamp=stamp, merge=n > 0)
            self.calls.add(call_id)
        for call_id, (ev, key, stamp) in calls:
            self.b.result(call_id, _acp_output(ev), key=f"{key}.result", is_error=ev.get("is_error") is True, timestamp=stamp)

    def _condensation(self, ev: dict[str, Any], key: str, stamp: datetime | None) -> None:
        ids = ev.get("forgotten_event_ids")
        forgotten = len(ids) if isinstance(ids, list) else None
        summary = ev.get("summary")
        if (isinstance(summary, str) and summary) or forgotten:
            add_condensation(self.b, key, stamp, summary if isinstance(summary, str) else None, forgotten)
        else:
            self.notes.skip("Condensation (nothing forgotten)")

    def _message(self, ev: dict[str, Any], key: str, stamp: datetime | None) -> None:
        msg = as_dict(ev.get("llm_message"))
        raw_role = msg.get("role")
        role: Role = raw_role if raw_role in ("user", "assistant", "system") else ("user" if ev.get("source") == "user" else "assistant")
        blocks = _thinking(msg, self.notes) if role == "assistant" else []
        blocks += _parts(msg.get("content")) + _parts(ev.get("extended_content"))
        if not blocks:
            self.notes.skip("MessageEvent (empty)")
            return
        rid = ev.get("llm_response_id")
        usage = self.usages.get(rid) if role == "assistant" and isinstance(rid, str) else None
        self.b.add(role, blocks, key=key, timestamp=stamp, usage=usage)

    def _action(self, ev: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        call = as_dict(ev.get("tool_call"))
        name = ev.get("tool_name") if isinstance(ev.get("tool_name"), str) and ev["tool_name"] else call.get("name")
        if not isinstance(name, str) or not name:
            self.notes.warnings.append(f"{loc.where}: action event without a tool name: kept as an {UNNAMED_TOOL} call")
            name = UNNAMED_TOOL
        call_id = ev.get("tool_call_id") if isinstance(ev.get("tool_call_id"), str) else call.get("id")
        if "arguments" in call:
            inputs = parse_arguments(call["arguments"], self.notes, loc.at("tool_call").at("arguments"))
        else:
            inputs = {k: v for k, v in as_dict(ev.get("action")).items() if k != "kind"}
        rid = ev.get("llm_response_id") if isinstance(ev.get("llm_response_id"), str) else None
        merge = rid is not None and rid == self.response_id
        blocks: list[Block] = [] if merge else _thinking(ev, self.notes)
        blocks += _parts(ev.get("thought"))
        use = self.b.use(call_id if isinstance(call_id, str) and call_id else None, name, inputs, key=key)
        blocks.append(use)
        # Observations answer the call id as the source spelled it; a derived id answers itself.
        source_id = call_id if isinstance(call_id, str) and call_id else use.id
        self.calls.add(source_id)
        if isinstance(ev.get("id"), str):
            self.by_action[ev["id"]] = source_id
        usage = self.usages.get(rid) if rid is not None and not merge else None
        self.b.add("assistant", blocks, key=key, timestamp=stamp, merge=merge, usage=usage)
        self.response_id = rid

    def _observation(self, ev: dict[str, Any], kind: str, key: str, stamp: datetime | None) -> None:
        call_id = ev.get("tool_call_id")
        if not (isinstance(call_id, str) and call_id in self.calls):
            action_id = ev.get("action_id")
            call_id = self.by_action.get(action_id) if isinstance(action_id, str) else None
        if call_id is None:
            self.notes.skip(f"{kind} (unlinked)")
            return
        if kind == "AgentErrorEvent":
            text, is_error = _str(ev.get("error")), True
        elif kind == "UserRejectObservation":
            # The text the SDK sends the model for a rejected action.
            text, is_error = f"Action rejected: {_str(ev.get('rejection_reason')) or 'User rejected the action'}", True
        else:
            text, is_error = _observation_text(ev.get("observation"))
            extra = _text(ev.get("extended_content"))
            text = f"{text}\n{extra}" if text and extra else text or extra
        self.b.result(call_id, text, key=key, is_error=is_error, timestamp=stamp)


def _acp_block(block: Any) -> str:
    """Text of one ACP tool-call content block (text, a diff, or content wrapping either); snake or camel case."""
    block = as_dict(block)
    kind = block.get("type")
    if kind == "content":
        return _acp_block(block.get("content"))
    if kind == "diff":
        new = block.get("new_text", block.get("newText"))
        return "\n".join(t for t in (_str(block.get("path")), _str(new)) if t)
    return _str(block.get("text")) if kind == "text" else ""


def _acp_output(ev: dict[str, Any]) -> str:
    """What an ACP tool call returned: its raw output, else the text of its content blocks."""
    raw = ev.get("raw_output")
    if isinstance(raw, str):
        return raw
    if raw is not None:
        return json.dumps(raw, ensure_ascii=False)
    content = ev.get("content")
    return "\n".join(t for t in (_acp_block(b) for b in (content if isinstance(content, list) else [])) if t)


# What Observation.to_llm_content puts before an error's content (tool/schema.py, ERROR_MESSAGE_HEADER).
_ERROR_HEADER = "[An error occurred during execution.]\n"
_TERMINAL_KINDS = ("TerminalObservation", "ExecuteBashObservation")


# How the browser tool tells a screenshot's type from its base64 data.
_SCREENSHOT_TYPES = (("/9j/", "image/jpeg"), ("iVBORw0KGgo", "image/png"), ("R0lGODlh", "image/gif"), ("UklGR", "image/webp"))


def _screenshot_type(data: str) -> str:
    return next((mime for prefix, mime in _SCREENSHOT_TYPES if data.startswith(prefix)), "image/png")


def _terminal_text(text: str, meta: dict[str, Any]) -> str:
    """A terminal's output with the PS1 metadata lines TerminalObservation.to_llm_content sends after it."""
    out = f"{_str(meta.get('prefix'))}{text}{_str(meta.get('suffix'))}"
    if _str(meta.get("working_dir")):
        out += f"\n[Current working directory: {meta['working_dir']}]"
    if _str(meta.get("py_interpreter_path")):
        out += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    code = meta.get("exit_code")
    # -1: the command hit the soft timeout and still runs; the SDK then names no exit code.
    if isinstance(code, int) and not isinstance(code, bool) and code != -1:
        out += f"\n[Command finished with exit code {code}]"
    return out


def _observation_text(obs: Any) -> tuple[str, bool]:
    """(text, is_error) of an observation as the SDK sends it; older observations kept text in output/error."""
    if isinstance(obs, str):
        return obs, False
    obs = as_dict(obs)
    text = _text(obs.get("content"))
    error = obs.get("error")
    is_error = obs.get("is_error") is True or error is True or (isinstance(error, str) and bool(error))
    if "content" not in obs or (not text and any(_str(obs.get(k)) for k in ("output", "error"))):
        return "\n".join(t for t in (_str(obs.get("output")), _str(error)) if t), is_error
    meta = obs.get("metadata")
    if obs.get("kind") in _TERMINAL_KINDS and isinstance(meta, dict):
        text = _terminal_text(text, meta)
    shot = obs.get("screenshot_data")
    if isinstance(shot, str) and shot:
        # A browser observation sends its screenshot after its text, as an image (tools/browser_use/definition.py).
        marker = image_marker(ImageBlock(media_type=_screenshot_type(shot), size_bytes=len(shot) * 3 // 4, source="base64"))
        text = f"{text}\n{marker}" if text else marker
    return (_ERROR_HEADER + text if obs.get("is_error") is True else text), is_error


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(raw: dict[str, Any]) -> Usage | None:
    """One call's TokenUsage (llm/utils/metrics.py) as canonical usage.

    litellm counts cache reads and writes inside ``prompt_tokens``; ACP agents report them beside
    it, which shows as a prompt smaller than the cache terms: then the prompt is all fresh input.
    """
    prompt, read, write = _int(raw.get("prompt_tokens")), _int(raw.get("cache_read_tokens")), _int(raw.get("cache_write_tokens"))
    output = _int(raw.get("completion_tokens"))
    if not (prompt or output or read or write):
        return None
    fresh = prompt - read - write if prompt >= read + write else prompt
    return Usage(input_tokens=fresh, output_tokens=output, cache_read_tokens=read, cache_write_tokens=write)


def state_usages(state: Any) -> dict[str, Usage]:
    """Per-response usage from a conversation state's ``stats`` (base_state.json), keyed by response id.

    Every LLM of the conversation (agent, condenser, ...) keeps its own Metrics under its usage id;
    the SDK before 1.1 called the map ``service_to_metrics``.
    """
    stats = as_dict(as_dict(state).get("stats"))
    found: dict[str, Usage] = {}
    for key in ("usage_to_metrics", "service_to_metrics"):
        for metrics in as_dict(stats.get(key)).values():
            calls = as_dict(metrics).get("token_usages")
            for raw in calls if isinstance(calls, list) else []:
                rid = raw.get("response_id") if isinstance(raw, dict) else None
                usage = _usage(raw) if isinstance(rid, str) and rid else None
                if usage is not None and isinstance(rid, str):
                    found.setdefault(rid, usage)
    return found


def _convert(
    events: Iterable[tuple[Any, Loc]], meta: TranscriptMeta, notes: ImportNotes | None = None, usages: dict[str, Usage] | None = None
) -> Transcript:
    # ``notes``: ones the event source already writes to (a JSONL reader's warnings).
    t = Transcript(meta=meta) if notes is None else Transcript(meta=meta, notes=notes)
    s = _Session(t.notes, usages)
    for ev, loc in events:
        s.event(ev, loc)
    s.flush_acp()
    t.messages, t.tools = s.b.finish(), s.tools
    t.notes.records_read = s.events
    return t


def _meta(file: str | None, doc: dict[str, Any] | None = None) -> TranscriptMeta:
    meta = TranscriptMeta(source_format=NAME, source_path=file, title="OpenHands V1 conversation")
    for k in ("conversation_id", "id"):
        if doc is not None and isinstance(doc.get(k), str) and doc[k]:
            meta.session_id = doc[k]
            break
    return meta


def _container(doc: dict[str, Any]) -> tuple[str, list[Any]] | None:
    if "kind" in doc:
        return None
    for k in _CONTAINERS:
        if isinstance(doc.get(k), list):
            return k, doc[k]
    return None


def from_events(events: list[Any], *, file: str | None = None) -> Transcript:
    """Convert a list of V1 events."""
    base = Loc(file, "$")
    return _convert(((ev, base.at(i)) for i, ev in enumerate(events)), _meta(file))


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A list of events, ``{"events": [...]}`` / ``{"items": [...]}``, or a single event."""
    if isinstance(doc, list):
        return from_events(doc, file=file)
    if isinstance(doc, dict):
        found = _container(doc)
        if found is not None:
            k, events = found
            base = Loc(file, "$").at(k)
            return _convert(((ev, base.at(i)) for i, ev in enumerate(events)), _meta(file, doc), usages=state_usages(doc))
        if isinstance(doc.get("kind"), str):
            return _convert([(doc, Loc(file, "$"))], _meta(file))
    raise TranscriptError("not an OpenHands V1 history", file=file, where="$", expected="a list of events, or a document with 'events'")


def read(path: Path) -> Transcript:
    file = str(path)
    if leading_char(path) == "[":
        return from_document(read_json(path), file=file)
    # A JSONL of a conversation still running may end in a line cut off mid-write: the reader stops
    # before it with a warning in these notes.
    notes = ImportNotes()
    records = iter_jsonl(path, notes=notes)
    try:
        lineno, first = next(records)
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        # A pretty-printed document is not JSONL.
        return from_document(read_json(path), file=file)
    if _container(first) is not None:
        # A one-line {"events": [...]} document: read as a document, so any line after it is an error.
        del records  # the generator closes its file when dropped
        return from_document(read_json(path), file=file)
    events = chain([(lineno, first)], records)
    with gc_paused():
        return _convert(((rec, Loc(file, "$", n)) for n, rec in events), _meta(file), notes)


def event_files(folder: Path) -> list[Path]:
    """The event files of a persisted conversation folder (or its ``events/`` subfolder), in order.

    The SDK names them ``event-NNNNN-<id>.json``, the index padded to at least five
    digits and not capped (conversation/persistence_const.py): past 99999 events the
    names are longer, so the order is the index's number, not the name's. An empty
    list: the folder is not a conversation.
    """
    for where in (folder / "events", folder):
        if where.is_dir():
            files = sorted((p for p in where.glob("event-*.json") if p.is_file()), key=_file_order)
            if files:
                return files
    return []


_FILE_INDEX = re.compile(r"^event-(\d+)-")


def _file_order(path: Path) -> tuple[int, int, str]:
    m = _FILE_INDEX.match(path.name)
    # A name without an index sorts after the numbered ones, by name.
    return (0, int(m.group(1)), path.name) if m else (1, 0, path.name)


def _state(folder: Path, notes: ImportNotes) -> dict[str, Any]:
    """The conversation's ``base_state.json`` (id, agent and its LLM, usage stats); {} when absent.

    A damaged state only costs the usage figures: the events are the history, so it is a warning.
    """
    # Given the events/ subfolder itself, the state sits beside it.
    for where in (folder, folder.parent) if folder.name == "events" else (folder,):
        path = where / "base_state.json"
        if path.is_file():
            try:
                state = read_json(path)
            except TranscriptError as exc:
                notes.warnings.append(f"{path.name}: not readable ({exc.reason}); imported without its usage figures")
                return {}
            return as_dict(state)
    return {}


def read_folder(folder: Path) -> Transcript:
    """A persisted V1 conversation: ``base_state.json`` beside an ``events/`` folder of one event per file.

    Per-response token usage comes from the state's stats and lands on the assistant message
    of that response (``llm_response_id``).
    """
    files = event_files(folder)
    if not files:
        raise TranscriptError("a folder that holds no OpenHands V1 event files", file=str(folder),
                              expected="a conversation folder with events/event-*.json, or a transcript file")
    pairs = []
    for f in files:
        doc = read_json(f)
        if not isinstance(doc, dict):
            raise TranscriptError("an event file that is not a JSON object", file=str(f), where="$", expected="one V1 event")
        pairs.append((doc, Loc(str(f), "$")))
    notes = ImportNotes()
    state = _state(folder, notes)
    meta = _meta(str(folder), state)
    model = as_dict(as_dict(state.get("agent")).get("llm")).get("model")
    meta.model = model if isinstance(model, str) and model else None
    return _convert(pairs, meta, notes, state_usages(state))


# -- detection -------------------------------------------------------------------

_HEAD_KIND = re.compile(r'"kind"\s*:\s*"(' + "|".join(sorted(KINDS)) + r')"')
_HEAD_EVENT = re.compile(r'"(?:tool_call_id|llm_message|system_prompt|llm_response_id)"\s*:')
# A first SystemPromptEvent can outgrow the head (prompt plus tool descriptions) before its "kind"
# (pydantic writes it last) shows; its prompt as a TextContent object is distinctive enough.
_HEAD_PROMPT = re.compile(r'"system_prompt"\s*:\s*\{\s*"(?:cache_prompt|type|text)"')


def _is_event(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("kind"), str) and value["kind"] in KINDS


def _score(value: Any) -> int:
    if isinstance(value, list):
        return 95 if value and _is_event(value[0]) else 0
    if isinstance(value, dict):
        found = _container(value)
        if found is not None:
            events = found[1]
            return 95 if events and _is_event(events[0]) else 0
        return 95 if _is_event(value) else 0
    return 0


def sniff(probe: FileHead) -> int:
    value = probe.first_value()
    if value is not None:
        return _score(value)
    head = probe.head
    if _HEAD_KIND.search(head) and _HEAD_EVENT.search(head):
        return 90
    return 85 if _HEAD_PROMPT.search(head) else 0


def is_conversation_folder(path: Path) -> bool:
    """Whether ``load`` reads ``path`` by its path, as this format's folder."""
    return path.is_dir() and bool(event_files(path))


FORMAT = Format(
    name=NAME,
    description="OpenHands V1 conversations (software-agent-sdk events: JSON list, JSONL or {events: [...]})",
    sniff=sniff,
    read=read,
    kinds=frozenset({"file", "folder"}),
    finds=is_conversation_folder,
    read_found=read_folder,
)
