"""Continue sessions (continuedev/continue): ``~/.continue/sessions/<sessionId>.json``.

The VS Code / JetBrains extension and the ``cn`` CLI save each chat session as one
JSON document, the ``Session`` of ``core/index.d.ts``: ``{sessionId, title,
workspaceDirectory, history: [ChatHistoryItem], mode?, chatModelTitle?, usage?}``
(``core/util/history.ts`` writes it; ``cn serve``'s ``/state`` snapshot wraps it as
``{session, ...}``, also read). A ``ChatHistoryItem`` is ``{message, contextItems,
editorState?, promptLogs?, toolCallState? | toolCallStates?, reasoning?,
conversationSummary?}``; its ``message`` a ``ChatMessage`` with ``role`` user,
assistant, thinking, system or tool and ``content`` a string or a list of parts
(``{type: "text", text}``, ``{type: "imageUrl", imageUrl: {url}}``). The same
folder's ``sessions.json`` is an index (``[{sessionId, title, dateCreated,
workspaceDirectory}]``), no session: reading it is a ``TranscriptError`` naming
the session files beside it.

The shapes moved over Continue's versions, and each is read:

* 2024 (0.8, chat only): string or part contents, ``promptLogs`` as
  ``[prompt, completion]`` pairs, no tools;
* early 2025 (agent mode): an assistant's ``toolCalls`` with one
  ``toolCallState``, the output in the ``tool`` message Continue added after it;
* mid 2025: one ``toolCallState`` whose ``output`` (context items) Continue
  turns into the tool message each request (``gui/src/redux/util/
  constructMessages.ts``); tool items in the history are no longer sent;
* late 2025: ``toolCallStates`` (parallel calls), ``usage`` on assistant
  messages, ``conversationSummary`` (compaction), ``Session.usage`` totals.

Mapping (what ``constructMessages`` sends the model):

* user -> user text; its ``contextItems`` (files, snippets, @-mentions) were
  sent ahead of the typed text, so each becomes a text block before it;
  ``imageUrl`` parts -> image placeholders.
* assistant -> text and tool calls (``toolCalls[].function``; arguments
  JSON-decoded, text that is no JSON object kept under ``_raw`` with a warning);
  a ``thinking`` message or an item's ``reasoning.text`` -> a thinking block
  (``signature`` kept). Continue stores one model response as several items
  (thinking, then text, then the tool call), so consecutive ones form one
  assistant message.
* tool results, paired by ``toolCallId``: a ``tool`` message answers its call;
  a call no tool message answered is answered from its state as Continue does:
  the output's context items (joined by a blank line; a terminal command's
  with their ``[Status: ...]``), "The user cancelled this tool call." for
  ``canceled`` (an error), "There was an error calling the tool." for an
  ``errored`` one without output, "No tool output" for one ``done`` without
  it. A call that never ran (no state, or ``generating`` / ``generated`` /
  ``calling``) is answered "No tool output" if the session went on (as
  Continue sent it), with a warning; at the end of the session it stays
  unanswered, with a warning.
* system -> a system message.
* Compaction: an item's ``conversationSummary`` means Continue sends nothing
  up to that item again, only the summary in its system prompt: a boundary
  marker follows the item, then the summary as user text (tagged
  ``summary``). ``cn``'s compaction writes an assistant message starting
  ``[COMPACTED HISTORY]``: a marker goes before it, and it is tagged
  ``summary``. A replay undoes both with the marker.
* A session written by ``cn`` (its user items copy their content into
  ``editorState``) is read as ``core/util/messageConversion.ts`` sends it:
  context items as ``<context name=...>`` text, tool outputs joined by a
  newline, "Tool cancelled" for a call without output.
* Usage: an assistant message's ``usage`` (``promptTokens``,
  ``completionTokens``, ``promptTokensDetails.cachedTokens`` /
  ``cacheWriteTokens``); ``Session.usage``, the whole session's, is a warning.
* Counted in ``notes.skipped``, never content: unknown roles
  (``role:<r> (unknown role)``), unknown parts (``part:<t> (unknown type)``),
  empty messages, redacted thinking, tool messages of no known call, entries
  that are no history item. ``notes.records_read`` counts items and parts.
* meta: ``sessionId`` (else the file name), ``title``, ``workspaceDirectory``
  as cwd (a ``file://`` URI as its path; another scheme gives none), and the
  model: the first prompt log's ``completionOptions.model``, else the
  session's ``chatModelTitle``, else a prompt log's ``modelTitle`` (names the
  user gave, which may not be model ids).

Detection: 96 for a session (``history`` mostly items with a ``message``
dict), 90 for one with an empty history and its ``sessionId`` and
``workspaceDirectory``, 95 for the ``sessions.json`` index, 90 for a session
of Continue before 0.8 (refused, clearly); 85 for a document too large to
probe whose head shows ``"sessionId"``, a ``"history"`` list and ``"contextItems"``.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import (
    UNNAMED_TOOL,
    HistoryBuilder,
    Loc,
    image_from_url,
    parse_arguments,
    parse_timestamp,
    parts_text,
    opt_str,
    as_dict,
    token_count,
    path_from_uri,
)
from ..jsonio import read_json
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "NAME", "STRATEGY", "CLI_STRATEGY", "is_item", "from_document", "read", "sniff"]

NAME = "continue"
# The strategies of the boundaries Continue's compactions leave: the extension's summary, cn's.
STRATEGY = "continue_summary"
CLI_STRATEGY = "continue_cli_compaction"

_ROLES = frozenset({"user", "assistant", "thinking", "system", "tool"})
# Continue's own words for a call's output it did not have (core/tools/constants.ts).
_NO_OUTPUT = "No tool output"
_CANCELLED = "The user cancelled this tool call."
_ERRORED = "There was an error calling the tool."
# What cn sends for a call without output (core/util/messageConversion.ts).
_CLI_NO_OUTPUT = "Tool cancelled"
# How constructMessages puts a summary into the system prompt, its space included.
_SUMMARY_PREFIX = "Previous conversation summary:\n\n "
_CLI_MARKER = "[COMPACTED HISTORY]"
# The built-in tool whose output items carry a status Continue appends (renderContextItemsWithStatus).
_TERMINAL = "run_terminal_command"


def is_item(entry: Any) -> bool:
    """Whether ``entry`` is a ChatHistoryItem: ``{message: {role, ...}, ...}``."""
    return isinstance(entry, dict) and isinstance(entry.get("message"), dict) and isinstance(entry["message"].get("role"), str)


def _session_of(doc: Any) -> dict[str, Any] | None:
    """The Session in ``doc``: the document itself, or the ``session`` of a ``cn serve`` state snapshot."""
    if isinstance(doc, dict):
        if isinstance(doc.get("history"), list):
            return doc
        inner = doc.get("session")
        if isinstance(inner, dict) and isinstance(inner.get("history"), list):
            return inner
    return None


def _is_index(doc: Any) -> bool:
    """``sessions.json``: a list of session metadata (``session_id`` / ``date_created`` before 0.8)."""
    if not isinstance(doc, list) or not doc:
        return False
    head = doc[:20]

    def meta(entry: Any) -> bool:
        return (
            isinstance(entry, dict)
            and "history" not in entry
            and (isinstance(entry.get("sessionId"), str) or isinstance(entry.get("session_id"), str))
            and ("dateCreated" in entry or "date_created" in entry)
        )

    return sum(map(meta, head)) * 2 > len(head)


def _is_old(doc: Any) -> bool:
    # Continue before 0.8 (its Python server) saved a FullState: {history: {timeline, current_index}, session_info}.
    return isinstance(doc, dict) and isinstance(doc.get("history"), dict) and ("timeline" in doc["history"] or isinstance(doc.get("session_info"), dict))


def _usage(raw: Any) -> Usage | None:
    u = as_dict(raw)
    prompt, output = token_count(u.get("promptTokens")), token_count(u.get("completionTokens"))
    details = as_dict(u.get("promptTokensDetails"))
    cached, written = token_count(details.get("cachedTokens")), token_count(details.get("cacheWriteTokens"))
    # Continue's Usage follows OpenAI's, whose prompt count holds the cached tokens; its Anthropic adapter
    # puts Anthropic's input_tokens there (cache left out) and reports cacheWriteTokens beside it.
    anthropic = "cacheWriteTokens" in details or cached > prompt
    usage = Usage(input_tokens=prompt if anthropic else prompt - cached, output_tokens=output, cache_read_tokens=cached, cache_write_tokens=written)
    return usage if usage.total else None


def _states(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The item's tool call states by call id: ``toolCallStates`` (late 2025) or the one ``toolCallState``."""
    raw = item.get("toolCallStates")
    states = raw if isinstance(raw, list) else [item.get("toolCallState")]
    out: dict[str, dict[str, Any]] = {}
    for raw_state in states:
        state = as_dict(raw_state)
        sid = opt_str(state.get("toolCallId")) or opt_str(as_dict(state.get("toolCall")).get("id"))
        if sid is not None and sid not in out:
            out[sid] = state
    return out


class _Session:
    """The items of one session, turned into an alternating history."""

    def __init__(self, notes: ImportNotes, cli: bool) -> None:
        self.notes = notes
        self.cli = cli
        self.b = HistoryBuilder(notes)
        # Calls of the newest assistant message not answered yet: (canonical id, source id, name, state).
        self.pending: list[tuple[str, str | None, str, dict[str, Any] | None]] = []
        self.models: list[str] = []
        self.titles: list[str] = []

    # -- content -----------------------------------------------------------------
    def _parts(self, content: Any) -> list[Block]:
        if isinstance(content, str):
            return [TextBlock(text=content)] if content.strip() else []
        if content is None:
            return []
        if not isinstance(content, list):
            self.notes.skip(f"content:{type(content).__name__} (unknown type)")
            return []
        blocks: list[Block] = []
        for part in content:
            p = as_dict(part)
            kind = opt_str(p.get("type"))
            if kind == "text":
                text = p.get("text")
                if isinstance(text, str) and text.strip():
                    blocks.append(TextBlock(text=text))
            elif kind == "imageUrl":
                blocks.append(image_from_url(as_dict(p.get("imageUrl")).get("url")))
            else:
                self.notes.skip(f"part:{kind or 'unknown'} (unknown type)")
        return blocks

    def _context(self, item: dict[str, Any], content: Any) -> list[Block]:
        """The attached context items, as the text the model saw ahead of the user's words."""
        items = [c for c in item.get("contextItems") or [] if isinstance(c, dict)] if isinstance(item.get("contextItems"), list) else []
        if self.cli and not isinstance(content, str):
            # cn puts context in front of string content only; with parts it sends none of it.
            if items:
                self.notes.skip("contextItem (not sent)", len(items))
            return []
        blocks: list[Block] = []
        for c in items:
            text = c["content"] if isinstance(c.get("content"), str) else ""
            if self.cli:
                blocks.append(TextBlock(text=f'<context name="{c.get("name")}">\n{text}\n</context>\n\n'))
            elif text.strip():
                # The extension sends each item as its own text part, "<content>\n", before the typed text;
                # one block per item keeps a large file apart for the stages that clear or spill blocks.
                blocks.append(TextBlock(text=f"{text}\n"))
        return blocks

    # -- tool calls ----------------------------------------------------------------
    def _calls(self, msg: dict[str, Any], item: dict[str, Any], key: str, loc: Loc) -> list[Block]:
        states = _states(item)
        raw = msg.get("toolCalls")
        where = loc.at("message").at("toolCalls")
        calls = [(c, opt_str(c.get("id")), where.at(n)) for n, c in enumerate(raw) if isinstance(c, dict)] if isinstance(raw, list) else []
        seen = {sid for _, sid, _ in calls}
        # Late Continue sends a call for every state, also one whose message lost its toolCalls.
        calls += [(as_dict(state.get("toolCall")), sid, loc.at("toolCallStates")) for sid, state in states.items() if sid not in seen]
        blocks: list[Block] = []
        for n, (call, sid, at) in enumerate(calls):
            state = states.get(sid) if sid is not None else None
            fn = as_dict(call.get("function"))
            name = opt_str(fn.get("name")) or opt_str(as_dict(as_dict(as_dict(state).get("toolCall")).get("function")).get("name"))
            if name is None:
                self.notes.warnings.append(f"{at.where}: a tool call without a name: kept as {UNNAMED_TOOL!r}")
                name = UNNAMED_TOOL
            args = fn.get("arguments")
            if args is None and state is not None:
                args = as_dict(as_dict(state.get("toolCall")).get("function")).get("arguments")
            use = self.b.use(sid, name, parse_arguments(args, self.notes, at.at("function").at("arguments")), key=f"{key}.{n}")
            self.pending.append((use.id, sid, name, state))
            blocks.append(use)
        return blocks

    def _render(self, output: list[Any], name: str) -> str:
        items = [as_dict(o) for o in output]
        if self.cli:
            return "\n".join(o["content"] if isinstance(o.get("content"), str) else "" for o in items)
        texts = []
        for o in items:
            text = o["content"] if isinstance(o.get("content"), str) else ""
            if name == _TERMINAL and opt_str(o.get("status")):
                text += f"\n[Status: {o['status']}]"
            texts.append(text)
        return "\n\n".join(texts)

    def _from_state(self, name: str, state: dict[str, Any] | None) -> tuple[str | None, bool]:
        """What Continue sent for a call no tool message answered: (text, is_error), text None if it never ran."""
        if state is None:
            return None, False
        status, output = state.get("status"), state.get("output")
        if status == "canceled":
            return (_CLI_NO_OUTPUT if self.cli else _CANCELLED), True
        if isinstance(output, list) and (output or not self.cli):
            return self._render(output, name), status == "errored"
        if status == "errored":
            return (_CLI_NO_OUTPUT if self.cli else _ERRORED), True
        if status == "done":
            return (_CLI_NO_OUTPUT if self.cli else _NO_OUTPUT), False
        return None, False

    def flush(self, *, moved_on: bool) -> None:
        """Answer the newest message's calls that no tool message answered, from their states."""
        for canonical, _, name, state in self.pending:
            text, is_error = self._from_state(name, state)
            if text is None:
                status = opt_str(as_dict(state).get("status")) or "no state"
                if not moved_on:
                    self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no output ({status}): the session ends with it unanswered")
                    continue
                text = _CLI_NO_OUTPUT if self.cli else _NO_OUTPUT
                self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no output ({status}); answered {text!r}, as Continue sends it")
            self.b.result(canonical, text, key=f"{canonical}.output", is_error=is_error, canonical=True)
        self.pending.clear()

    # -- items ---------------------------------------------------------------------
    def tool(self, msg: dict[str, Any], key: str) -> None:
        sid = opt_str(msg.get("toolCallId"))
        found = next((p for p in reversed(self.pending) if sid is not None and p[1] == sid), None)
        if found is None:
            # A result without its call would make every later request invalid: counted, not kept.
            self.notes.skip("message:tool (unknown call)")
            self.notes.orphan_tool_results.append(sid or "?")
            return
        self.pending.remove(found)
        errored = as_dict(found[3]).get("status") == "errored"
        self.b.result(found[0], parts_text(msg.get("content")), key=key, is_error=errored, canonical=True)

    def user(self, item: dict[str, Any], msg: dict[str, Any], key: str) -> None:
        content = msg.get("content")
        blocks = self._context(item, content) + self._parts(content)
        if not blocks:
            self.notes.skip("message:user (empty)")
            return
        self.b.user_turn(blocks, key=key)

    def assistant(self, item: dict[str, Any], msg: dict[str, Any], key: str, loc: Loc) -> None:
        role = msg["role"]
        blocks: list[Block] = []
        reasoning = as_dict(item.get("reasoning"))
        stamp: datetime | None = parse_timestamp(reasoning.get("startAt"))
        redacted = False
        if role == "thinking":
            text = parts_text(msg.get("content"))
            if text.strip():
                blocks.append(ThinkingBlock(thinking=text, signature=opt_str(msg.get("signature"))))
            elif opt_str(msg.get("redactedThinking")):
                # The lab has no block for encrypted thinking, whose text nobody can read or count: counted instead.
                self.notes.skip("thinking:redacted")
                redacted = True
        else:
            if isinstance(reasoning.get("text"), str) and reasoning["text"].strip():
                blocks.append(ThinkingBlock(thinking=reasoning["text"]))
            blocks += self._parts(msg.get("content"))
        blocks += self._calls(msg, item, key, loc)
        if not blocks:
            if not redacted:
                self.notes.skip(f"message:{role} (empty)")
            return
        text = parts_text(msg.get("content")) if role == "assistant" else ""
        if text.startswith(_CLI_MARKER):
            self._boundary(key, CLI_STRATEGY, "[Conversation compacted by Continue (cn)]")
            self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=_usage(msg.get("usage")), tag="summary")
            return
        # One response is stored as several items (thinking, text, tool call): one assistant turn.
        self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=_usage(msg.get("usage")), merge=True)

    def system(self, msg: dict[str, Any], key: str) -> None:
        blocks = self._parts(msg.get("content"))
        if blocks:
            self.b.add("system", blocks, key=key)
        else:
            self.notes.skip("message:system (empty)")

    def summary(self, text: str, key: str) -> None:
        self.flush(moved_on=True)
        self._boundary(key, STRATEGY, "[Conversation summarized by Continue]")
        self.b.add("user", [TextBlock(text=_SUMMARY_PREFIX + text)], key=f"{key}.summary", tag="summary")

    def _boundary(self, key: str, strategy: str, text: str) -> None:
        self.b.boundary(Boundary(trigger="import", strategy=strategy, messages_removed=self.b.unmarked()), text, key=key)

    def models_of(self, item: dict[str, Any]) -> None:
        logs = item.get("promptLogs")
        for log in logs if isinstance(logs, list) else []:
            # 2024's prompt logs are [prompt, completion] pairs, with no model.
            model = opt_str(as_dict(as_dict(log).get("completionOptions")).get("model"))
            if model is not None and model not in self.models:
                self.models.append(model)
            title = opt_str(as_dict(log).get("modelTitle"))
            if title is not None and title not in self.titles:
                self.titles.append(title)


def _is_cli(history: list[Any]) -> bool:
    # cn copies a user message's content into editorState; the extension keeps the editor's document there.
    return any(
        is_item(it) and it["message"]["role"] == "user" and isinstance(it.get("editorState"), (str, list)) and it["editorState"] == it["message"].get("content")
        for it in history
    )


def _session_usage(session: dict[str, Any], notes: ImportNotes) -> None:
    u = as_dict(session.get("usage"))
    parts = [f"{k} {u[k]}" for k in ("promptTokens", "completionTokens") if token_count(u.get(k))]
    cost = u.get("totalCost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
        parts.append(f"cost ${cost:.4f}")
    if parts:
        notes.warnings.append(f"Continue recorded usage for the whole session: {', '.join(parts)}")


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """A Continue session document (or a ``cn serve`` state snapshot holding one)."""
    if _is_index(doc):
        ids = [str(as_dict(e).get("sessionId") or as_dict(e).get("session_id")) for e in doc if isinstance(e, dict)]
        shown = ", ".join(f"{i}.json" for i in ids[:3]) + (", ..." if len(ids) > 3 else "")
        raise TranscriptError(
            f"this is Continue's session index (sessions.json, {len(ids)} session(s)), not a session",
            file=file, where="$", expected=f"one session file from the same folder, <sessionId>.json: {shown}",
        )  # fmt: skip
    if _is_old(doc):
        raise TranscriptError(
            "a session of Continue before 0.8 (its Python server's history timeline), which this reader does not read",
            file=file, where="$.history", expected="a session of Continue 0.8 or later {sessionId, title, workspaceDirectory, history: [...]}",
        )  # fmt: skip
    session = _session_of(doc)
    if session is None:
        raise TranscriptError("not a Continue session", file=file, where="$", expected="a session {sessionId, title, workspaceDirectory, history: [...]}")
    history: list[Any] = session["history"]
    path = "$.history" if session is doc else "$.session.history"
    base = Loc(file, path)
    notes = ImportNotes(records_read=len(history))
    s = _Session(notes, _is_cli(history))
    count = 0
    for i, item in enumerate(history):
        if not is_item(item):
            notes.skip(f"item:{'unknown' if isinstance(item, dict) else 'non_object'}")
            continue
        count += 1
        msg, loc = item["message"], base.at(i)
        role, key = msg["role"], opt_str(msg.get("id")) or f"m{i}"
        if isinstance(msg.get("content"), list):
            notes.records_read += max(0, len(msg["content"]) - 1)
        s.models_of(item)
        if role == "tool":
            s.tool(msg, key)
        elif role in _ROLES:
            s.flush(moved_on=True)
            if role == "user":
                s.user(item, msg, key)
            elif role == "system":
                s.system(msg, key)
            else:
                s.assistant(item, msg, key, loc)
        else:
            notes.skip(f"role:{role} (unknown role)")
        summary = item.get("conversationSummary")
        if isinstance(summary, str) and summary.strip():
            s.summary(summary, key)
    s.flush(moved_on=False)
    messages = s.b.finish()
    if not count:
        raise TranscriptError("no Continue history items found", file=file, where=path, expected="items shaped {message: {role, content}, contextItems}")
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(f"{count} Continue history items but none that was sent to the model", file=file, where=path, expected="user or assistant messages")
    _session_usage(session, notes)
    named = s.models or [t for t in (opt_str(session.get("chatModelTitle")),) if t] or s.titles
    if len(s.models) > 1:
        notes.warnings.append(f"models used: {', '.join(s.models)}")
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=opt_str(session.get("sessionId")) or (Path(file).stem if file else None),
        title=opt_str(session.get("title")) or "Continue session",
        model=named[0] if named else None,
        cwd=path_from_uri(session.get("workspaceDirectory")),
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


def read(path: Path) -> Transcript:
    return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_ID = re.compile(r'"sessionId"\s*:\s*"')
_HEAD_HISTORY = re.compile(r'"history"\s*:\s*\[\s*\{')
# Every history item carries its context items (an empty list when none were attached).
_HEAD_CONTEXT = re.compile(r'"contextItems"\s*:\s*\[')


def _mostly_items(history: list[Any]) -> bool:
    head = history[:20]
    items = [e for e in head if is_item(e)]
    # A role of a later Continue is still an item; one of the roles known here says it is Continue's.
    return len(items) * 2 > len(head) and any(e["message"]["role"] in _ROLES for e in items)


def sniff(probe: FileHead) -> int:
    doc = probe.document
    session = _session_of(doc)
    if session is not None:
        if _mostly_items(session["history"]):
            return 96
        empty = not session["history"] and opt_str(session.get("sessionId")) is not None and "workspaceDirectory" in session
        return 90 if empty else 0
    if _is_index(doc):
        return 95
    if _is_old(doc):
        return 90
    if doc is None and probe.shape == "json" and not probe.records and all(k.search(probe.head) for k in (_HEAD_ID, _HEAD_HISTORY, _HEAD_CONTEXT)):
        return 85
    return 0


FORMAT = Format(
    name=NAME,
    description="Continue sessions (~/.continue/sessions/<sessionId>.json, from the IDE extensions and cn)",
    sniff=sniff,
    read=read,
    more_specific_than=REQUEST_BODIES,
)
