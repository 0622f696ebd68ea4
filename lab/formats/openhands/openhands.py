"""OpenHands event histories.

Accepted sources:

* evaluation ``output.jsonl``: one record per line, each ``{instance_id,
  instruction, metadata, history: [events], ...}``. Each record is one
  session: the first record becomes the transcript, every further record a
  sidechain keyed by its instance id (or ``record-N``), noted in warnings;
* a JSON document: a bare list of events, a single record, or the older
  history of ``[action, observation]`` pairs.

An event is an action (``action`` key) or an observation (``observation``
key), with ``id``, ``source`` (agent / user / environment), ``timestamp``.

* ``system`` action -> system message; its ``args.tools`` -> ``Transcript.tools``.
* ``message`` action -> user text (source user, with image placeholders) or
  assistant text (source agent).
* Tool actions (run, read, edit, write, browse, think, finish, ...) -> a
  tool_use in an assistant message. With ``tool_call_metadata`` the model's
  call id, function name and arguments are used, and the model's text (the
  ``thought``) leads the message; actions of one model response (same
  response id) share one assistant message. Without metadata the id is
  derived from the event id, the name is the action type and the input is
  ``args`` minus bookkeeping keys; ``think``/``finish`` without metadata are
  plain assistant text.
* Observations link to their action by ``tool_call_metadata.tool_call_id`` or
  by ``cause`` (the action's event id) and become tool_result blocks; ``error``
  observations and failed commands (``success: false``) have ``is_error``.
  An error observation that links to nothing is shown to the model as user
  text (as OpenHands does) and noted.
* A ``condensation`` action that carries a ``summary`` (the LLM summarizing
  condenser's ``CondensationAction``: ``forgotten_event_ids`` or
  ``forgotten_events_start_id``/``end_id``, ``summary``, ``summary_offset``)
  becomes a boundary followed by the summary as a user message tagged
  ``summary``. One without a summary that forgot events (the agent-reset
  condenser and the amortized-forgetting one write no summary)
  is a boundary too, followed by a note in the summary's place; one that
  forgot nothing is counted. ``condensation_request`` (the agent asking to
  condense) is bookkeeping, counted: the condensation that answers it is
  what changed the context.
* ``recall`` and other bookkeeping actions, their observations, and unknown
  event kinds are skipped and counted.

Detection (``sniff``): 95 for records with a ``history`` of events that have
``source`` and ``action``/``observation``, or a bare list of such events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, Message, TextBlock, ToolSpec, Transcript, TranscriptMeta
from ...errors import TranscriptError
from ..history_builder import as_dict, HistoryBuilder, Loc, image_from_url, need_dict, openai_usage, parse_arguments, parse_timestamp, text_block, tool_specs
from .. import session_pick
from ..jsonio import gc_paused, iter_jsonl, read_json
from ..registry import FileHead, Format, SessionSource

__all__ = [
    "FORMAT", "read", "read_output_jsonl", "list_records", "read_record", "each_record", "from_events", "from_document", "sniff", "add_condensation",
    "CONDENSATION_STRATEGY",
]  # fmt: skip

NAME = "openhands"

# Actions that only steer the agent loop; they never reach the model as a tool call.
_BOOKKEEPING = {"recall", "change_agent_state", "null", "condensation", "condensation_request", "system_info"}
# The strategy name of the boundary an imported OpenHands condensation leaves (V0 and V1).
CONDENSATION_STRATEGY = "openhands_condensation"
# args keys that describe how OpenHands ran an action, not what the model asked for.
_INTERNAL_ARGS = {"thought", "is_input", "blocking", "is_static", "cwd", "hidden", "confirmation_state", "impl_source", "security_risk"}


class _Session:
    """One history being converted; remembers which action each event id was."""

    def __init__(self, notes: ImportNotes, id_prefix: str) -> None:
        self.b = HistoryBuilder(notes, id_prefix=id_prefix)
        self.notes = notes
        self.by_event: dict[Any, str] = {}  # action event id -> source tool call id
        self.skipped_events: set[Any] = set()
        self.response_id: str | None = None
        self.tools: list[ToolSpec] = []


def add_condensation(b: HistoryBuilder, key: str, stamp: datetime | None, summary: str | None, forgotten: int | None) -> None:
    """An OpenHands condensation: a boundary marker, then the summary (or a note) as user text.

    OpenHands keeps some events verbatim around the summary (the first few and the most recent
    ones); the import cannot tell which from the event stream alone, so the boundary sits where
    the condensation happened, as the Claude Code and Codex importers place theirs.

    Without a summary (the agent-reset condenser, or a summarizer whose model returned no text)
    events were still forgotten: the model stopped seeing them, so it is a boundary all the same.
    OpenHands keeps the user's messages through such a reset; a replay that honours the boundary
    drops them, so a note stands in as the user turn that opens the kept history (undo drops it).
    """
    count = f"{forgotten} event(s) forgotten" if forgotten is not None else "events forgotten"
    boundary = Boundary(trigger="import", strategy=CONDENSATION_STRATEGY, timestamp=stamp)
    if summary:
        marker = f"[Conversation condensed by OpenHands: {count}]"
        text = summary
    else:
        marker = f"[Conversation condensed by OpenHands: {count}, no summary]"
        text = f"[Earlier conversation forgotten by the OpenHands condenser: {forgotten if forgotten is not None else 'some'} event(s), no summary]"
    b.compaction(boundary, marker, text, key=key, timestamp=stamp)


def _forgotten(args: dict[str, Any]) -> int | None:
    """How many events a V0 CondensationAction forgot (an id list, or an inclusive id range)."""
    ids = args.get("forgotten_event_ids")
    if isinstance(ids, list):
        return len(ids)
    start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
    if isinstance(start, int) and isinstance(end, int) and not isinstance(start, bool) and not isinstance(end, bool) and end >= start:
        return end - start + 1
    return None


def _response(meta: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(response id, the model's message) from tool_call_metadata.model_response."""
    resp = meta.get("model_response")
    if not isinstance(resp, dict):
        return None, {}
    choices = resp.get("choices")
    msg = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    rid = resp.get("id")
    return (rid if isinstance(rid, str) else None), (msg if isinstance(msg, dict) else {})


def _condensation(s: _Session, args: dict[str, Any], key: str, stamp: datetime | None) -> bool:
    """Add a condensation that summarized or forgot events; False for one that did neither (bookkeeping)."""
    summary = args.get("summary") if isinstance(args.get("summary"), str) else None
    forgotten = _forgotten(args)
    if not (summary or forgotten):
        return False
    add_condensation(s.b, key, stamp, summary, forgotten)
    s.response_id = None
    return True


def _action(s: _Session, ev: dict[str, Any], loc: Loc, key: str) -> None:
    kind = ev["action"]
    args = as_dict(ev.get("args"))
    stamp = parse_timestamp(ev.get("timestamp"))
    source = ev.get("source")
    b = s.b
    if kind == "system":
        text = args.get("content") if isinstance(args.get("content"), str) else ev.get("message")
        b.add("system", text_block(text), key=key, timestamp=stamp)
        s.tools = tool_specs(args.get("tools"))
        return
    if kind == "condensation" and _condensation(s, args, key, stamp):
        return
    if kind in _BOOKKEEPING:
        if isinstance(ev.get("id"), (int, str)):
            s.skipped_events.add(ev["id"])
        s.notes.skip(f"action:{kind}")
        return
    if kind == "message":
        text = args.get("content") if isinstance(args.get("content"), str) else ev.get("message")
        if source == "user":
            blocks: list[Block] = list(text_block(text))
            urls = args.get("image_urls")
            for url in urls if isinstance(urls, list) else []:
                blocks.append(image_from_url(url))
            b.add("user", blocks, key=key, timestamp=stamp)
        else:
            b.add("assistant", text_block(text), key=key, timestamp=stamp)
        s.response_id = None
        return
    raw_meta = ev.get("tool_call_metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else None
    thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
    if meta is None and kind in ("think", "finish"):
        text = thought or args.get("final_thought") or ev.get("message")
        b.add("assistant", text_block(text), key=key, timestamp=stamp)
        s.response_id = None
        return
    blocks = []
    merge = False
    usage = None
    if meta is not None:
        call_id, name = meta.get("tool_call_id"), meta.get("function_name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise loc.at("tool_call_metadata").error("tool call metadata without id or name", expected="'tool_call_id' and 'function_name' strings")
        rid, model_msg = _response(meta)
        merge = rid is not None and rid == s.response_id
        raw_args: Any = None
        for tc in model_msg.get("tool_calls") or []:
            if isinstance(tc, dict) and tc.get("id") == call_id and isinstance(tc.get("function"), dict):
                raw_args = tc["function"].get("arguments")
        inputs = (
            parse_arguments(raw_args, s.notes, loc.at("tool_call_metadata").at("model_response"))
            if raw_args is not None
            else {k: v for k, v in args.items() if k not in _INTERNAL_ARGS}
        )
        if not merge:
            said = model_msg.get("content")
            blocks += text_block(said if isinstance(said, str) and said else thought)
            resp = meta.get("model_response")
            usage = openai_usage(resp.get("usage")) if isinstance(resp, dict) else None
        s.response_id = rid
    else:
        call_id, name = None, kind
        inputs = {k: v for k, v in args.items() if k not in _INTERNAL_ARGS}
        blocks += text_block(thought)
        s.response_id = None
    use = b.use(call_id, name, inputs, key=key)
    blocks.append(use)
    if isinstance(ev.get("id"), (int, str)):
        s.by_event[ev["id"]] = call_id or use.id
    b.add("assistant", blocks, key=key, timestamp=stamp, usage=usage, merge=merge)


def _observation(s: _Session, ev: dict[str, Any], loc: Loc, key: str) -> None:
    kind = ev["observation"]
    stamp = parse_timestamp(ev.get("timestamp"))
    content, message = ev.get("content"), ev.get("message")
    text: str = content if isinstance(content, str) else (message if isinstance(message, str) else "")
    raw_meta = ev.get("tool_call_metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else None
    call_id = meta.get("tool_call_id") if meta else None
    cause = ev.get("cause")
    if not isinstance(cause, (int, str)):
        cause = None
    if not isinstance(call_id, str):
        call_id = s.by_event.get(cause) if cause is not None else None
    is_error = kind == "error" or ev.get("success") is False
    if call_id is not None:
        s.b.result(call_id, text, key=key, is_error=is_error, timestamp=stamp)
        s.response_id = None
    elif cause in s.skipped_events or kind in _BOOKKEEPING or kind in ("agent_state_changed", "user_rejected"):
        s.notes.skip(f"observation:{kind}")
    elif kind == "error" and text:
        s.b.add("user", [TextBlock(text=text)], key=key, timestamp=stamp)
        s.notes.warnings.append(f"{loc.where}: error observation linked to no action; kept as user text")
        s.response_id = None
    else:
        s.notes.skip(f"observation:{kind} (unlinked)")


def _events(events: list[Any], loc: Loc) -> list[tuple[Any, Loc]]:
    """Flatten the older ``[[action, observation], ...]`` history into events."""
    flat: list[tuple[Any, Loc]] = []
    for i, ev in enumerate(events):
        if isinstance(ev, list):
            flat += [(e, loc.at(i).at(j)) for j, e in enumerate(ev) if e]
        else:
            flat.append((ev, loc.at(i)))
    return flat


def from_events(
    events: list[Any],
    *,
    file: str | None = None,
    loc: Loc | None = None,
    id_prefix: str = "",
    notes: ImportNotes | None = None,
) -> tuple[list[Message], list[ToolSpec]]:
    """Convert one history; returns (messages, tool specs)."""
    notes = notes if notes is not None else ImportNotes()
    s = _Session(notes, id_prefix)
    base = loc or Loc(file, "$")
    for n, (ev, where) in enumerate(_events(events, base)):
        ev = need_dict(ev, where, "event")
        key = f"e{ev['id']}" if isinstance(ev.get("id"), int) else f"e{n}"
        if isinstance(ev.get("action"), str):
            _action(s, ev, where, key)
        elif isinstance(ev.get("observation"), str):
            _observation(s, ev, where, key)
        else:
            notes.skip("event:unknown")
    return s.b.finish(), s.tools


def _record_meta(rec: dict[str, Any], meta: TranscriptMeta) -> None:
    iid = rec.get("instance_id")
    meta.session_id = iid if isinstance(iid, str) else meta.session_id
    cfg = rec.get("metadata", {}).get("llm_config") if isinstance(rec.get("metadata"), dict) else None
    if isinstance(cfg, dict) and isinstance(cfg.get("model"), str):
        meta.model = cfg["model"]
    meta.title = f"OpenHands: {iid}" if isinstance(iid, str) else "OpenHands session"


def _history(rec: dict[str, Any], loc: Loc) -> list[Any]:
    history = rec.get("history")
    if not isinstance(history, list):
        raise loc.at("history").error("record without a history list", expected="'history': a list of events")
    return history


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A bare list of events or a single evaluation record."""
    t = Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file))
    loc = Loc(file, "$")
    if isinstance(doc, list):
        events = doc
    elif isinstance(doc, dict):
        events = _history(doc, loc)
        _record_meta(doc, t.meta)
        loc = loc.at("history")
    else:
        raise TranscriptError("not an OpenHands history", file=file, where="$", expected="a list of events or a record with 'history'")
    t.messages, t.tools = from_events(events, loc=loc, notes=t.notes)
    t.notes.records_read = len(events)
    return t


def _merge_notes(into: ImportNotes, side: ImportNotes, name: str) -> None:
    # Sidechains reuse tool call ids (every session starts at toolu_01): say whose they are.
    for kind, n in side.skipped.items():
        into.skip(kind, n)
    into.warnings += [f"{name}: {w}" for w in side.warnings]
    into.orphan_tool_results += [f"{name}: {i}" for i in side.orphan_tool_results]
    into.unanswered_tool_uses += [f"{name}: {i}" for i in side.unanswered_tool_uses]
    into.dropped += [f"{name}: {d}" for d in side.dropped]


def read_output_jsonl(path: Path) -> Transcript:
    """Evaluation output: the first record is the transcript, the rest sidechains."""
    file = str(path)
    t = Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file))
    n = 0
    # An output.jsonl still being written may end in a record cut off mid-write: the reader stops
    # before it with a warning in the notes.
    for lineno, rec in iter_jsonl(path, notes=t.notes):
        loc = Loc(file, "$", lineno)
        rec = need_dict(rec, loc, "record")
        history = _history(rec, loc)
        iid = rec.get("instance_id")
        name = iid if isinstance(iid, str) and iid not in t.sidechains else f"record-{n + 1}"
        if n == 0:
            _record_meta(rec, t.meta)
            t.messages, t.tools = from_events(history, loc=loc.at("history"), notes=t.notes)
        else:
            side = ImportNotes()
            t.sidechains[name], _ = from_events(history, loc=loc.at("history"), id_prefix=f"{name}/", notes=side)
            _merge_notes(t.notes, side, name)
        n += 1
        t.notes.records_read += len(history)
    if n == 0:
        raise TranscriptError("no records", file=file, expected="one OpenHands evaluation record per line")
    if n > 1:
        t.notes.warnings.append(f"{n} records: the first is the transcript, the other {n - 1} are sidechains keyed by instance id")
    return t


# -- picking one record of an output.jsonl ---------------------------------------------------------


def _by_instance_id(iids: list[Any]) -> bool:
    return all(isinstance(i, str) and i for i in iids) and len(set(iids)) == len(iids)


def _ids(iids: list[Any]) -> list[str]:
    """The records' ids: their instance ids when every record has a distinct one, else their index in file order."""
    return [str(i) for i in iids] if _by_instance_id(iids) else [str(n) for n in range(len(iids))]


def _output_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of an output.jsonl; a file of one document (a list of events, a pretty-printed record) holds one session."""
    file = str(path)
    notes = ImportNotes()
    try:
        for lineno, rec in iter_jsonl(path, notes=notes):
            yield lineno, need_dict(rec, Loc(file, "$", lineno), "record")
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        # Not JSONL: one JSON document is one history; anything else keeps the JSONL reader's error.
        try:
            read_json(path)
        except TranscriptError:
            raise exc from None
        raise TranscriptError(
            "one OpenHands history, not an output.jsonl of several records: there is no session to pick",
            file=file,
            expected="an evaluation output.jsonl, one record per line",
        ) from None


def list_records(path: Path) -> list[session_pick.SessionInfo]:
    """The records of an evaluation output.jsonl as sessions, the last in the file first (no record says when it ran)."""
    rows = [(rec.get("instance_id"), rec.get("history")) for _, rec in _output_records(Path(path))]
    ids = _ids([iid for iid, _ in rows])
    listed = [
        session_pick.SessionInfo(
            id=sid, title=f"OpenHands: {iid}" if isinstance(iid, str) else None,
            messages=len(history) if isinstance(history, list) else 0, updated=None, format=NAME,
        )
        for sid, (iid, history) in zip(ids, rows, strict=True)
    ]
    return listed[::-1]


def read_record(path: Path, session: str) -> Transcript:
    """The record ``session`` (an id ``list_records`` gives) of an output.jsonl, alone: no sidechains from the others."""
    path = Path(path)
    file = str(path)
    iids: list[Any] = []
    # One pass: which id scheme applies is known only at the end, so both possible matches are kept.
    by_iid: tuple[int, dict[str, Any]] | None = None
    by_index: tuple[int, dict[str, Any]] | None = None
    with gc_paused():
        for n, (lineno, rec) in enumerate(_output_records(path)):
            iid = rec.get("instance_id")
            iids.append(iid)
            if by_iid is None and iid == session:
                by_iid = (lineno, rec)
            if str(n) == session:
                by_index = (lineno, rec)
    ids = _ids(iids)
    found = by_iid if _by_instance_id(iids) else by_index
    if found is None or session not in ids:
        raise session_pick.unknown_session(session, ids[::-1], file=file, what="this OpenHands output.jsonl")
    lineno, rec = found
    return _one_record(rec, Loc(file, "$", lineno))


def _one_record(rec: dict[str, Any], loc: Loc) -> Transcript:
    """One record of an output.jsonl as a transcript of its own."""
    t = Transcript(meta=TranscriptMeta(source_format=NAME, source_path=loc.file))
    history = _history(rec, loc)
    _record_meta(rec, t.meta)
    t.messages, t.tools = from_events(history, loc=loc.at("history"), notes=t.notes)
    t.notes.records_read = len(history)
    return t


def each_record(path: Path) -> Iterator[tuple[str, Transcript | TranscriptError]]:
    """Every record of an output.jsonl, read in one pass, as (its ``list_records`` id, its transcript or why
    it cannot be read): what a compare of the whole evaluation reads, instead of one pass per record."""
    path = Path(path)
    file = str(path)
    iids: list[Any] = []
    read: list[Transcript | TranscriptError] = []
    with gc_paused():
        for lineno, rec in _output_records(path):
            iids.append(rec.get("instance_id"))
            try:
                read.append(_one_record(rec, Loc(file, "$", lineno)))
            except TranscriptError as e:
                read.append(e)
    # Which ids apply is known only once every record is read.
    yield from zip(_ids(iids), read, strict=True)


def _is_output_jsonl(path: Path) -> bool:
    # A JSON list of events is one history; an object first may be JSONL records (or one pretty-printed record).
    try:
        with Path(path).open("rb") as fh:
            return not fh.read(64).lstrip().startswith(b"[")
    except OSError:
        return Path(path).is_file()


def read(path: Path) -> Transcript:
    with Path(path).open("rb") as fh:
        start = fh.read(64).lstrip()
    if start.startswith(b"["):
        return from_document(read_json(path), file=str(path))
    try:
        with gc_paused():
            return read_output_jsonl(path)
    except TranscriptError as exc:
        if exc.where != "line 1":
            raise
        # A pretty-printed single record is not JSONL.
        return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_EVENT = re.compile(r'"source"\s*:\s*"(?:agent|user|environment)"')
_HEAD_KIND = re.compile(r'"(?:action|observation)"\s*:\s*"[a-z_]+"')


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and "source" in e and (isinstance(e.get("action"), str) or isinstance(e.get("observation"), str))


def _score(value: Any) -> int:
    if isinstance(value, dict):
        history = value.get("history")
        if isinstance(history, list) and history:
            first = history[0][0] if isinstance(history[0], list) and history[0] else history[0]
            return 95 if _is_event(first) else 0
        return 0
    if isinstance(value, list) and value:
        first = value[0][0] if isinstance(value[0], list) and value[0] else value[0]
        return 95 if _is_event(first) else 0
    return 0


def sniff(probe: FileHead) -> int:
    value = probe.first_value()
    if value is not None:
        return _score(value)
    head = probe.head
    if _HEAD_EVENT.search(head) and _HEAD_KIND.search(head):
        return 95 if re.search(r'"history"\s*:\s*\[|^\s*\[', head) else 60
    return 0


FORMAT = Format(
    name=NAME,
    description="OpenHands event histories (evaluation output.jsonl or a JSON list of events)",
    sniff=sniff,
    read=read,
    sessions=SessionSource(what="an OpenHands evaluation output.jsonl", holds=_is_output_jsonl, list=list_records, read=read_record, each=each_record),
)
