"""HTTP logs of model requests: claude-trace's ``.claude-trace/log-*.jsonl`` and proxy dumps.

Each record is one request and its response: ``{request: {timestamp, method,
url, headers, body}, response: {timestamp, status_code, headers, body,
body_raw, events}, logged_at}`` (``response`` null when none came back).
Accepted containers: JSONL with one record per line (a last line cut off
mid-write is a warning), a JSON array of records, ``{"rawPairs": [...]}``, or
one record. A body may be a dict or JSON text; a streamed response is read
from ``events``, ``body_raw`` or a text body and assembled in ``http_sse``.

The URL's path names the API: ``.../messages`` (and Bedrock's ``/invoke``)
Anthropic Messages, ``.../chat/completions`` Chat Completions,
``.../responses`` Responses. Other URLs (count_tokens, telemetry, batches) are
skipped and counted as ``non_model_request``; lines that are no record as
``unknown_record``.

Every request carries the whole history so far, so a conversation is the
request with the longest history plus its response, and the requests whose
history is a prefix of it (its thread, below). A log can hold several: a
claude-trace log holds Claude Code's side requests (quota checks, topic and
title generation) beside the main conversation, and a proxy log whatever its
clients sent (Claude Code and opencode, each with its own side requests).
The requests are grouped into conversations (``_conversations``: each is the
longest request left, with its thread and compactions, repeated until none is
left), named by index in log order ("0", "1", ...). The session read is the
longest: the most messages, then the most requests (a conversation that grew
over several requests, not a one-shot side request of the same length), then
the newest. ``sessions(path)`` lists them all (a conversation of one request
that offers no tools and is not the default as kind ``side request``: a batch
run leaves those out), ``load(path, session=ID)`` reads another, and a warning
names them.
A client that compacts (Claude Code) starts a new thread whose first message
is its continuation summary ("This session is being continued from a
previous conversation..."): the conversation is then every such segment in
log order, each the longest request of its thread, joined by a boundary
marker (strategy ``claude_code_compact``) and with the continuation summary
tagged ``summary``, as the Claude Code importer writes a compaction, so a
replay can undo it. The compaction request itself (the history plus Claude
Code's "create a detailed summary of the conversation" instruction) gives the
history before it; its instruction and the summary it got back are not
conversation.
Requests whose history is a prefix of it (same system prompt, same first
message, same message at their last position; ``cache_control`` markers,
which clients move between requests, ignored) form its thread; the others are
other conversations and side requests (title generation, quota checks). Neither
the thread's earlier requests (each a prefix of the conversation: nothing of
them is lost) nor the other conversations' requests are skipped records: one
line of ``notes.dropped`` counts them ("28 earlier requests of this
conversation ..., 6 requests of other conversations ..."). Counted as skipped,
a log of 20 requests or more would weigh them against the one conversation in
the misread check (``lab.formats.sanity``) and be refused. The response to a thread request with ``n`` messages is
message ``n`` of the conversation: it gets that response's usage, so a replay
sees the recorded usage of every request, and the request and response times
become the messages' timestamps. Non-2xx responses are counted as
``error_response`` with a warning line each (a prompt-too-long refusal says
so; an authentication failure gives its status only, since such bodies can
quote the refused key).

Headers are never read: they hold API keys. Neither is the URL's query,
which can hold one too; notes name the URL's path only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...core.messages import Boundary, ImportNotes, Message, TextBlock, Transcript, TranscriptMeta, Usage
from ...core.ptl import text_is_ptl
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, openai_usage, parse_timestamp, text_parts, tool_specs
from ..claude.anthropic import request_to_transcript
from .http_sse import assemble, stream_events
from ..jsonio import iter_log_lines, leading_char, read_file_head, read_json
from ..openai.openai_chat import add_message
from ..openai.openai_responses import add_item
from ..registry import FileHead, Format, REQUEST_BODIES, SessionSource
from .. import session_pick

__all__ = ["FORMAT", "NAME", "api_of", "read", "read_conversation", "list_sessions", "sniff"]

NAME = "http_log"

_LABELS = {"anthropic": "Anthropic Messages", "chat": "OpenAI Chat Completions", "responses": "OpenAI Responses"}
# Bedrock names the model in the path: /model/<id>/invoke or /invoke-with-response-stream.
_BEDROCK = re.compile(r"/model/[^/]+/invoke(?:-with-response-stream)?$")
_WARNINGS_LISTED = 5
# An error body can quote the key it refused ("Incorrect API key provided: sk-..."): auth failures
# are reported by status alone, and key-like words are cut from any other message.
_AUTH_STATUSES = {401, 403, 407}
_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|key|sess)[-_][A-Za-z0-9_\-*.]{6,}|\bBearer\s+\S+", re.I)


def api_of(url: Any) -> str | None:
    """Which model API a request URL calls ("anthropic", "chat", "responses"), or None for any other URL."""
    if not isinstance(url, str):
        return None
    try:
        path = urlsplit(url).path.rstrip("/")
    except ValueError:
        return None
    if path.endswith("/messages") or _BEDROCK.search(path):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


def _path(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "?"


@dataclass
class _Call:
    """One model request of the log and what came back."""

    loc: Loc
    api: str
    body: dict[str, Any]
    history: list[Any]
    response: dict[str, Any] | None
    sent: Any
    received: Any
    reply: dict[str, Any] | None = None
    fingerprints: dict[int, str] = field(default_factory=dict)
    # Whether ``reply`` was read from ``response`` (it may stay None: no readable response).
    replied: bool = False

    def read_reply(self, notes: ImportNotes) -> dict[str, Any] | None:
        if not self.replied:
            self.reply, self.replied = _reply(self, notes), True
        return self.reply

    @property
    def n(self) -> int:
        return len(self.history)

    @property
    def system(self) -> Any:
        return self.body.get("instructions") if self.api == "responses" else self.body.get("system")

    def system_print(self) -> str:
        """The system prompt's fingerprint, made once: grouping a log into conversations asks it of every request often."""
        if -1 not in self.fingerprints:
            self.fingerprints[-1] = _fingerprint(self.system)
        return self.fingerprints[-1]

    def fingerprint(self, index: int) -> str:
        if index not in self.fingerprints:
            self.fingerprints[index] = _fingerprint(self.history[index])
        return self.fingerprints[index]


def _strip(value: Any) -> Any:
    # Clients move cache_control markers to the newest messages on every request, and a client that marks a
    # message sends its text content as a block there, as a plain string elsewhere: both are the same message.
    if isinstance(value, dict):
        return {k: _strip([{"type": "text", "text": v}] if k == "content" and isinstance(v, str) else v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _fingerprint(value: Any) -> str:
    return json.dumps(_strip(value), sort_keys=True, ensure_ascii=False, default=str)


# -- reading records ---------------------------------------------------------------


def _records(path: Path, notes: ImportNotes) -> Iterator[tuple[Loc, Any]]:
    file = str(path)
    if leading_char(path) == "{" and read_file_head(path).shape == "jsonl":
        for line_no, value in iter_log_lines(path, notes):
            yield Loc(file, "$", line=line_no), value
        return
    doc = read_json(path)
    base = "$"
    if isinstance(doc, dict) and isinstance(doc.get("rawPairs"), list):
        doc, base = doc["rawPairs"], "$.rawPairs"
    items = doc if isinstance(doc, list) else [doc]
    notes.records_read += len(items)
    for i, value in enumerate(items):
        yield (Loc(file, f"{base}[{i}]") if isinstance(doc, list) else Loc(file, "$")), value


def _request_of(rec: Any) -> dict[str, Any] | None:
    if isinstance(rec, dict) and isinstance(rec.get("request"), dict) and isinstance(rec["request"].get("url"), str):
        return rec["request"]
    return None


def _json_body(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _history(api: str, body: dict[str, Any]) -> list[Any] | None:
    if api == "responses":
        raw = body.get("input")
        return [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else raw if isinstance(raw, list) else None
    raw = body.get("messages")
    return raw if isinstance(raw, list) else None


def _status(response: dict[str, Any] | None) -> int | None:
    if response is None:
        return None
    code = response.get("status_code", response.get("status"))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _error_message(response: dict[str, Any]) -> str:
    body = _json_body(response.get("body", response.get("body_raw")))
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str):
        return body
    return "no error message"


def _calls(path: Path, notes: ImportNotes) -> list[_Call]:
    calls: list[_Call] = []
    errors: list[str] = []
    no_response = 0
    for loc, rec in _records(path, notes):
        request = _request_of(rec)
        if request is None:
            notes.skip("unknown_record")
            continue
        api = api_of(request["url"])
        if api is None:
            notes.skip("non_model_request")
            continue
        where = loc.at("request").at("body")
        body = _json_body(request.get("body"))
        history = _history(api, body) if isinstance(body, dict) else None
        if not isinstance(body, dict) or history is None:
            notes.skip("unreadable_body")
            notes.warnings.append(f"{where.where}: request body is not a {_LABELS[api]} request; skipped")
            continue
        response = rec.get("response") if isinstance(rec.get("response"), dict) else None
        status = _status(response)
        if response is None:
            no_response += 1
        elif status is not None and not 200 <= status < 300:
            notes.skip("error_response")
            message = "authentication refused" if status in _AUTH_STATUSES else _KEY_LIKE.sub("[key]", " ".join(_error_message(response).split()))[:200]
            hint = " (the provider refused the context as too long)" if text_is_ptl(message) else ""
            errors.append(f"{loc.where}: HTTP {status} from {_path(request['url'])}: {message}{hint}")
            response = None
        received = response.get("timestamp") if response is not None else None
        sent = request.get("timestamp", rec.get("logged_at"))
        calls.append(_Call(where, api, body, history, response, sent, received))
    notes.warnings += errors[:_WARNINGS_LISTED]
    if len(errors) > _WARNINGS_LISTED:
        notes.warnings.append(f"... and {len(errors) - _WARNINGS_LISTED} more error responses")
    if no_response:
        notes.warnings.append(f"{no_response} model requests have no recorded response")
    return calls


def _reply(call: _Call, notes: ImportNotes) -> dict[str, Any] | None:
    """The response as the body an unstreamed call returns, or None when there is none to read."""
    resp = call.response
    if resp is None:
        return None
    loc = Loc(call.loc.file, call.loc.path.replace(".request.body", ".response"), call.loc.line)
    events = resp.get("events")
    if isinstance(events, list) and events:
        return assemble(call.api, stream_events(events, notes), notes, loc)
    body, raw = resp.get("body"), resp.get("body_raw")
    if isinstance(body, str):
        parsed = _json_body(body)
        body, raw = (parsed, raw) if isinstance(parsed, dict) else (None, raw if isinstance(raw, str) else body)
    if isinstance(body, dict):
        return body
    if isinstance(raw, str) and raw.strip():
        return assemble(call.api, stream_events(raw, notes), notes, loc)
    return None


# -- choosing the conversation -----------------------------------------------------


def _thread(calls: list[_Call]) -> tuple[_Call, list[_Call]]:
    """The conversation's request (longest history, newest on a tie) and the requests of its thread, in log order."""
    final = calls[0]
    for c in calls:
        if c.n >= final.n:
            final = c
    if final.n == 0:
        return final, [final]
    system = final.system_print()
    thread = []
    for c in calls:
        if c is final or (
            c.api == final.api
            and 0 < c.n <= final.n
            and c.fingerprint(0) == final.fingerprint(0)
            and c.fingerprint(c.n - 1) == final.fingerprint(c.n - 1)
            and c.system_print() == system
        ):
            thread.append(c)
    return final, thread


def _follow_previous(calls: list[_Call], notes: ImportNotes) -> None:
    """Responses requests that continue a stored response (``previous_response_id``) get their whole history.

    The provider keeps what came before such a request; when the earlier request and its response are in the
    log, the history is that request's (itself followed the same way) plus that response's output plus this
    input, so the conversation is read as if every request had sent it whole.
    """
    if not any(c.api == "responses" and isinstance(c.body.get("previous_response_id"), str) for c in calls):
        return  # nothing continues a stored response: no reply needs reading for its id
    by_id: dict[str, _Call] = {}
    for c in calls:
        if c.api != "responses":
            continue
        previous = c.body.get("previous_response_id")
        if isinstance(previous, str) and previous in by_id:
            before = by_id[previous]
            output = (before.read_reply(notes) or {}).get("output")
            full = [*before.history, *(output if isinstance(output, list) else []), *c.history]
            c.body = {k: v for k, v in c.body.items() if k != "previous_response_id"} | {"input": full}
            c.history = full
            c.fingerprints = {}
        reply = c.read_reply(notes)
        if isinstance(reply, dict) and isinstance(reply.get("id"), str):
            by_id[reply["id"]] = c


# Claude Code opens a compacted session's new thread with this summary, and asks for the summary with this instruction.
_CONTINUATION = re.compile(r"^\s*This session is being continued from a previous conversation", re.I)
_SUMMARY_ASK = re.compile(r"create a detailed summary of the conversation", re.I)


def _continues(call: _Call) -> bool:
    """Whether the request's thread starts with a continuation summary: it follows a compaction."""
    return call.n > 0 and isinstance(call.history[0], dict) and any(_CONTINUATION.match(t) for t in text_parts(call.history[0].get("content")))


def _segments(calls: list[_Call]) -> list[tuple[_Call, list[_Call]]]:
    """The conversation's compaction segments in log order, each (its request, the requests of its thread)."""
    final, thread = _thread(calls)
    segments = [(final, thread)]
    if final.n == 0:
        return segments
    at = {id(c): i for i, c in enumerate(calls)}
    used = {id(c) for c in thread}
    system = final.system_print()
    # Backwards: the thread a continuation continues is the one its newest earlier main-agent request is in.
    while _continues(segments[0][0]):
        start = min(at[id(c)] for c in segments[0][1])
        before = [c for c in calls[:start] if id(c) not in used and c.api == final.api and c.n > 0]
        main = [c for c in before if c.system_print() == system]
        if not main:
            break
        group = [c for c in before if c.fingerprint(0) == main[-1].fingerprint(0)]
        segment = _thread(group)
        segments.insert(0, segment)
        used |= {id(c) for c in segment[1]}
    # Forwards: a continuation that started after the newest segment's last request.
    while True:
        end = max(at[id(c)] for c in segments[-1][1])
        after = [c for c in calls[end + 1 :] if id(c) not in used and c.api == final.api and _continues(c)]
        if not after:
            break
        segment = _thread([c for c in after if c.fingerprint(0) == after[0].fingerprint(0)])
        segments.append(segment)
        used |= {id(c) for c in segment[1]}
    return segments


def _before_compaction(call: _Call) -> _Call:
    """The request that asked for a compaction's summary, as the history it summarised: no instruction, no reply."""
    if call.n > 1 and call.history[-1].get("role") == "user" and any(_SUMMARY_ASK.search(t) for t in text_parts(call.history[-1].get("content"))):
        history = call.history[:-1]
        key = "input" if call.api == "responses" else "messages"
        return _Call(call.loc, call.api, {**call.body, key: history}, history, None, call.sent, None, None)
    return call


def _joined(parts: list[Transcript]) -> Transcript:
    """Segments' transcripts as one: a boundary marker before each continuation, its summary tagged."""
    messages = list(parts[0].messages)
    for k, part in enumerate(parts[1:], start=1):
        rest = list(part.messages)
        while rest and rest[0].role == "system":
            rest.pop(0)  # the same system prompt, sent again with the new thread
        stamp = rest[0].timestamp if rest else None
        marker = Message(role="system", content=(TextBlock(text="[Conversation compacted by the client]"),), id=f"compaction-{k}-boundary",
                         tag="boundary", boundary=Boundary(trigger="auto", strategy="claude_code_compact", timestamp=stamp))
        if rest:
            rest[0] = rest[0].model_copy(update={"tag": "summary"})
        messages += [marker, *rest]
    last = parts[-1]
    return last.model_copy(update={"messages": messages})


def _annotations(thread: list[_Call], n: int) -> list[dict[str, Any]]:
    """For each of the conversation's ``n`` source messages: when it was first sent, and for a
    response of a thread request, that response's usage and arrival time."""
    marks: list[dict[str, Any]] = [{} for _ in range(n)]
    for c in thread:  # in log order, so the first request holding a message sent it
        if c.sent is not None:
            for i in range(min(c.n, n)):
                marks[i].setdefault("sent", c.sent)
        if c.n < n and c.reply is not None:
            usage = c.reply.get("usage")
            if isinstance(usage, dict):
                marks[c.n]["usage"] = usage  # a later request of the same length (a retry) wins
            if c.received is not None:
                marks[c.n]["received"] = c.received
    return marks


def _annotate(message: Any, mark: dict[str, Any]) -> Any:
    """A source message with its recorded usage and time, in the fields the importers read."""
    if not isinstance(message, dict):
        return message  # the importer reports it where it is
    out = dict(message)
    if message.get("role") == "assistant" and "usage" in mark:
        out.setdefault("usage", mark["usage"])
    stamp = mark.get("received", mark.get("sent"))
    if stamp is not None:
        out.setdefault("timestamp", stamp)
    return out


# -- building the transcript -------------------------------------------------------


def _anthropic(final: _Call, thread: list[_Call], notes: ImportNotes) -> Transcript:
    marks = _annotations(thread, final.n)
    messages = [_annotate(m, marks[i]) for i, m in enumerate(final.history)]
    reply = final.reply
    if reply is not None and reply.get("content") is not None:
        messages.append({"role": "assistant", "content": reply["content"], "usage": reply.get("usage"), "timestamp": final.received or final.sent})
    body = {**final.body, "messages": messages}
    t = request_to_transcript(body, file=final.loc.file, where=final.loc.where, notes=notes)
    if t.meta.model is None and reply is not None and isinstance(reply.get("model"), str):
        t.meta.model = reply["model"]
    return t


def _chat(final: _Call, thread: list[_Call], notes: ImportNotes) -> Transcript:
    b = HistoryBuilder(notes)
    marks = _annotations(thread, final.n)
    base = final.loc.at("messages")
    for i, m in enumerate(final.history):
        add_message(b, _annotate(m, marks[i]), base.at(i), f"m{i}")
    reply = final.reply
    choices = reply.get("choices") if reply is not None else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict):
        loc = Loc(final.loc.file, final.loc.path.replace(".request.body", ".response"), final.loc.line)
        msg = {**choices[0]["message"], "role": "assistant", "usage": reply.get("usage") if reply else None}
        add_message(b, msg, loc, f"m{final.n}", parse_timestamp(final.received or final.sent))
    model = final.body.get("model") if isinstance(final.body.get("model"), str) else None
    meta = TranscriptMeta(source_format=NAME, source_path=final.loc.file, model=model)
    return Transcript(meta=meta, messages=b.finish(), tools=tool_specs(final.body.get("tools")), notes=notes)


def _responses(final: _Call, thread: list[_Call], notes: ImportNotes) -> Transcript:
    b = HistoryBuilder(notes)
    instructions = final.body.get("instructions")
    if isinstance(instructions, str) and instructions:
        b.add("system", [TextBlock(text=instructions)], key="instructions")
    if isinstance(final.body.get("previous_response_id"), str):
        notes.warnings.append(
            f"{final.loc.where}: the request continues a stored response (previous_response_id) that is not in this log; "
            "the items before it are kept by the provider"
        )
    marks = _annotations(thread, final.n)
    base = final.loc.at("input")
    items = [(item, marks[i], base.at(i)) for i, item in enumerate(final.history)]
    reply = final.reply
    output = reply.get("output") if reply is not None else None
    if reply is not None and isinstance(output, list):
        # The response's first output item opens the assistant turn its usage belongs to.
        mark = {"usage": reply.get("usage"), "received": final.received or final.sent}
        out = Loc(final.loc.file, final.loc.path.replace(".request.body", ".response"), final.loc.line).at("output")
        items += [(item, mark if j == 0 else {"received": mark["received"]}, out.at(j)) for j, item in enumerate(output)]
    usage_at: dict[int, Usage] = {}
    for k, (item, mark, loc) in enumerate(items):
        stamp = parse_timestamp(mark.get("received", mark.get("sent")))
        add_item(b, item, loc, f"i{k}", stamp)
        usage = openai_usage(mark.get("usage"))
        if usage is not None and b.messages and b.messages[-1].role == "assistant":
            usage_at.setdefault(len(b.messages) - 1, usage)
    messages = b.finish()
    for pos, usage in usage_at.items():
        messages[pos] = messages[pos].model_copy(update={"usage": usage})
    model = final.body.get("model") if isinstance(final.body.get("model"), str) else None
    meta = TranscriptMeta(source_format=NAME, source_path=final.loc.file, model=model)
    return Transcript(meta=meta, messages=messages, tools=tool_specs(final.body.get("tools")), notes=notes)


_BUILDERS = {"anthropic": _anthropic, "chat": _chat, "responses": _responses}


# -- conversations ----------------------------------------------------------------


@dataclass
class _Conversation:
    """One conversation of the log: its compaction segments (each its request and thread), in log order."""

    segments: list[tuple[_Call, list[_Call]]]
    # Where its first request is in the log, and its newest.
    first: int
    last: int
    id: str = ""

    @property
    def requests(self) -> int:
        return sum(len(thread) for _, thread in self.segments)

    @property
    def messages(self) -> int:
        """Its messages before import: each segment's longest history, plus the last one's response."""
        final = self.segments[-1][0]
        return sum(f.n for f, _ in self.segments) + (final.response is not None)

    def rank(self) -> tuple[int, int, int]:
        return (self.messages, self.requests, self.last)


def _conversations(calls: list[_Call]) -> list[_Conversation]:
    """Every conversation of the log, in log order of its first request, each named by that index."""
    at = {id(c): i for i, c in enumerate(calls)}
    pool = list(calls)
    found: list[_Conversation] = []
    while pool:
        segments = _segments(pool)
        mine = {id(c) for _, thread in segments for c in thread}
        spots = [at[k] for k in mine]
        found.append(_Conversation(segments, min(spots), max(spots)))
        pool = [c for c in pool if id(c) not in mine]
    found.sort(key=lambda c: c.first)
    for k, conv in enumerate(found):
        conv.id = str(k)
    return found


def _no_requests(path: Path) -> TranscriptError:
    return TranscriptError(
        "no model request in the log",
        file=str(path),
        expected="records {request: {url, body}, response} whose url ends in /messages, /chat/completions or /responses",
    )


def _first_text(conv: _Conversation) -> str | None:
    final = conv.segments[0][0]
    for message in final.history:
        if isinstance(message, dict) and message.get("role") in ("user", None):
            for text in text_parts(message.get("content")):
                if text.strip():
                    line = " ".join(text.split())
                    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return None


# A listed title is one line of at most this many characters; a warning names at most this many other conversations.
_TITLE_CHARS = 80
_OTHERS_NAMED = 3


def _describe(conv: _Conversation) -> str:
    model = conv.segments[-1][0].body.get("model")
    return f"{conv.id!r} ({conv.messages} messages, {conv.requests} request{'s' if conv.requests != 1 else ''}{', ' + model if isinstance(model, str) else ''})"


def list_sessions(path: Path) -> list[session_pick.SessionInfo]:
    """The conversations of the log, as ``sessions(path)`` lists them (ids in log order; see the module docstring)."""
    path = Path(path)
    calls = _calls(path, ImportNotes())
    if not calls:
        raise _no_requests(path)
    _follow_previous(calls, ImportNotes())
    convs = _conversations(calls)
    chosen = max(convs, key=_Conversation.rank)
    out = []
    for conv in convs:
        # A title, quota or topic request: one request, and no tools offered (an agent's turn offers its tools).
        side = conv is not chosen and conv.requests == 1 and not conv.segments[-1][0].body.get("tools")
        newest = calls[conv.last]
        out.append(
            session_pick.SessionInfo(
                id=conv.id, title=_first_text(conv), messages=conv.messages, updated=session_pick.iso_time(newest.received or newest.sent),
                format=NAME, kind="side request" if side else None,
            )  # fmt: skip
        )
    return out


def read_conversation(path: Path, session: str) -> Transcript:
    """The conversation ``session`` (an id ``list_sessions`` gives) of the log."""
    return _read(Path(path), str(session))


def read(path: Path) -> Transcript:
    """The log's longest conversation (see the module docstring)."""
    return _read(Path(path), None)


def _read(path: Path, session: str | None) -> Transcript:
    notes = ImportNotes()
    calls = _calls(path, notes)
    if not calls:
        raise _no_requests(path)
    _follow_previous(calls, notes)
    convs = _conversations(calls)
    if session is None:
        conv = max(convs, key=_Conversation.rank)
    else:
        picked = [c for c in convs if c.id == session]
        if not picked:
            raise session_pick.unknown_session(session, [c.id for c in convs], file=str(path), what="this HTTP log")
        conv = picked[0]
    segments = conv.segments
    in_conversation = 0
    parts: list[Transcript] = []
    for k, (final, thread) in enumerate(segments):
        for c in thread:
            c.read_reply(notes)
        in_conversation += len(thread)
        if k < len(segments) - 1:
            final = _before_compaction(final)
        parts.append(_BUILDERS[final.api](final, thread, notes))
    side = len(calls) - in_conversation
    earlier = in_conversation - len(segments)
    if earlier or side:
        said = [f"{earlier} earlier request(s) of this conversation (each a prefix of it: their messages are all in it)"] if earlier else []
        said += [f"{side} request(s) of other conversations and side requests (`python -m lab sessions FILE` lists them)"] if side else []
        notes.dropped.append(f"not read as messages: {'; '.join(said)}")
    if len(convs) > 1:
        others = [c for c in convs if c is not conv]
        named = ", ".join(_describe(c) for c in sorted(others, key=_Conversation.rank, reverse=True)[:_OTHERS_NAMED])
        how = "the longest" if session is None else "as asked"
        notes.warnings.append(
            f"this HTTP log holds {len(convs)} conversations (side requests among them); read {how}, {_describe(conv)}; "
            f"others: {named}{', ...' if len(others) > _OTHERS_NAMED else ''}; pick one with --session ID (all ids: `python -m lab sessions PATH`)"
        )
    t = _joined(parts) if len(parts) > 1 else parts[0]
    t.meta.source_format = NAME
    t.meta.source_path = str(path)
    compactions = f", {len(parts) - 1} compaction{'s' if len(parts) > 2 else ''}" if len(parts) > 1 else ""
    t.meta.title = f"HTTP log ({_LABELS[segments[-1][0].api]}): {in_conversation} requests in the conversation{compactions}, {side} side requests"
    return t


# -- detection -------------------------------------------------------------------

_HEAD_PAIR = re.compile(r'"request"\s*:\s*\{')
_HEAD_URL = re.compile(r'"url"\s*:\s*"[^"?]*(?:/messages|/chat/completions|/responses|/invoke(?:-with-response-stream)?)(?:\?[^"]*)?"')


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, dict) and isinstance(doc.get("rawPairs"), list):
        records: list[Any] = doc["rawPairs"][:20]
    elif isinstance(doc, list):
        records = doc[:20]
    else:
        records = list(probe.records or [])
    if records:
        requests = [r for r in map(_request_of, records) if r is not None]
        if not requests or 2 * len(requests) < len(records):
            return 0
        # Records of requests to other endpoints only (telemetry first) are still a log of ours.
        return 95 if any(api_of(r["url"]) for r in requests) else 50
    if probe.shape == "json" and _HEAD_PAIR.search(probe.head) and _HEAD_URL.search(probe.head):
        return 90
    return 0


FORMAT = Format(
    name=NAME,
    description="HTTP logs of model requests and responses (claude-trace .claude-trace/log-*.jsonl, proxy dumps)",
    sniff=sniff,
    read=read,
    sessions=SessionSource(what="an HTTP log of model requests (claude-trace, a proxy dump)", holds=lambda p: Path(p).is_file(), list=list_sessions, read=read_conversation),
    more_specific_than=REQUEST_BODIES,
)
