"""GitHub Copilot Chat sessions of VS Code: ``chatSessions/<sessionId>.json`` and ``.jsonl``.

VS Code keeps each chat of a workspace in ``User/workspaceStorage/<hash>/chatSessions/``
(an empty window's in ``User/globalStorage/emptyWindowChatSessions/``). Before 1.109 a
session is one JSON document, the chat model's ``ISerializableChatData``
(``src/vs/workbench/contrib/chat/common/chatModel.ts``, versions 1-3): ``{version,
sessionId, creationDate, customTitle?, requesterUsername, responderUsername,
initialLocation, requests: [...]}``. From 1.109 it is ``<sessionId>.jsonl``, an
append-only mutation log of the same object (``model/objectMutationLog.ts``): a first
line ``{kind: 0, v: state}``, then ``{kind: 1, k: path, v}`` (set), ``{kind: 2, k:
path, v?, i?}`` (push onto the array at ``path``, after cutting it to ``i`` items) and
``{kind: 3, k: path}`` (delete). The log is replayed into the document and read as one
(its schema leaves ``requesterUsername`` out).

A request is ``{requestId, message: {text, parts} | text, variableData: {variables},
response: [parts], result: {timings, errorDetails?, metadata?}, modelId?, timestamp?,
agent, ...}``. What the file holds and what reaches the model are not the same:

* the Copilot extension (microsoft/vscode-copilot-chat) stores in
  ``result.metadata`` what its prompt held: ``renderedUserMessage`` (the user turn
  as sent: attachments, editor context, reminders and the typed text; parts ``{type:
  1, text}``, images ``{type: 2, imageUrl}``, cache breakpoints ``{type: 3}``),
  ``toolCallRounds`` (``[{id, response, toolCalls: [{id, name, arguments}],
  thinking?, usage?}]``, one per model call) and ``toolCallResults`` (``{callId:
  {content: [parts]}}``, each part a text ``{value: "..."}`` or a prompt-tsx tree
  ``{value: {node}}`` whose text leaves are the output). These are read first.
* ``response`` is what the chat view rendered: markdown ``{value}`` (a bare string in
  old files), ``{kind: "toolInvocationSerialized", toolId, toolCallId,
  invocationMessage, pastTenseMessage, resultDetails?}`` (its call id is VS Code's,
  not the model's), ``thinking``, ``inlineReference``, and parts the user saw only
  (``textEditGroup`` edits, ``codeblockUri``, ``undoStop``, progress and
  confirmation parts). It is read only for a request without ``toolCallRounds`` (a
  chat of Copilot before it stored them, another participant): the markdown and
  inline references (as their name in backticks) as text, thinking parts, and each
  tool invocation as a call with ``resultDetails.input`` as its arguments, answered by
  its ``resultDetails.output`` texts; an invocation without recorded output stays
  unanswered, with a warning (VS Code kept only what it showed).
* not read: the system prompt and the tool definitions (not in the file), and
  ``renderedGlobalContext`` (the OS and workspace listing Copilot puts into its first
  user message), so a replayed prompt is smaller than Copilot's by those.

Mapping, per request:

* user: ``renderedUserMessage`` when stored, else each attached variable whose
  ``value`` is text (a pasted snippet, a prompt file), one block each, then
  ``message.text``. A variable that only names a file (``value`` a URI) carries no
  content: nothing is made up for it.
* each tool call round: an assistant message (thinking, ``response`` text, the calls
  with their JSON arguments; text that is no JSON object is kept under ``_raw``; a
  call's id without the ``__vscode-<n>`` suffix Copilot strips before sending, unless
  the model reused the id), then
  the results from ``toolCallResults`` (text parts joined by a newline). A call with no
  stored result stays unanswered, with a warning: Copilot refuses to render such a
  call again ("Missing tool call result"), so nothing was ever sent for it.
* the last round's ``response`` is the final text. ``result.errorDetails`` (a
  failed or filtered request) is a warning; so is a cancelled request.
* a request marked ``shouldBeRemovedOnSend`` / ``isHidden`` (undone by a checkpoint
  restore) was dropped from every later prompt: it is skipped and counted.
* Compaction: ``metadata.summary`` / ``summaries`` (``{toolCallRoundId, text}``,
  Copilot's conversation-history summarization) mean nothing up to that round is sent
  again, only the summary: a boundary marker (strategy ``copilot_summary``) follows the
  round, then the summary as user text tagged ``summary``. A summary of a round of an
  earlier request puts its marker before this request.
* timestamps: a request's ``timestamp`` (its user message) and
  ``modelState.completedAt`` (its last assistant message).
* usage: a round's ``usage`` (OpenAI-shaped) on its assistant message, else the
  request's ``result.usage`` / ``usage`` (``promptTokens``, ``completionTokens``) on
  the request's last assistant message.
* Counted in ``notes.skipped``, never content: response parts the model never sees
  (``part:<kind> (shown only)``), unknown kinds (``part:<kind> (unknown kind)``),
  rendered thinking of a request whose rounds hold none (``part:thinking (no round
  holds it)``: which round it was is not recorded), encrypted thinking, result parts
  that are no text, requests that are no request.
* meta: ``sessionId`` (else the file name), ``customTitle``, the first ``modelId``;
  cwd unknown (the file does not hold it).

Detection: 96 for a document whose ``requests`` are mostly ``{requestId, message}``
items beside ``version`` / ``requesterUsername`` / ``responderUsername``, and for a log
whose first line ``{kind: 0, v}`` holds such a session (often still without requests)
and more lines follow; 90 for a session with no request and nothing after it (refused
clearly: it holds nothing); 85 for a file too large to probe whose head shows the
session's keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ...core.messages import Block, Boundary, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import (
    UNNAMED_TOOL,
    HistoryBuilder,
    Loc,
    as_dict,
    document_or_log,
    image_from_url,
    openai_usage,
    opt_str,
    parse_arguments,
    parse_timestamp,
    token_count,
)
from ..registry import Format, FileHead

__all__ = ["FORMAT", "NAME", "STRATEGY", "is_session", "replay_log", "from_document", "read", "sniff"]

NAME = "copilot_chat"
# The strategy of the boundary Copilot's conversation-history summarization leaves.
STRATEGY = "copilot_summary"

# Response parts VS Code renders for the user and never sends back (chatSessionOperationLog.ts lists the kinds).
_SHOWN_ONLY = frozenset(
    {
        "textEditGroup", "notebookEditGroup", "codeblockUri", "undoStop", "prepareToolInvocation", "progressMessage",
        "progressTaskSerialized", "confirmation", "warning", "command", "extensions", "pullRequest", "treeData",
        "multiDiffData", "mcpServersStarting", "elicitationSerialized", "questionCarousel", "clearToPreviousToolInvocation",
        "workspaceEdit", "hook", "disabledClaudeHooks", "planReview", "references", "codeCitation",
    }
)  # fmt: skip
# Parts that carry the model's words, read when no tool call rounds are stored.
_SPOKEN = frozenset({"markdownContent", "markdownVuln", "inlineReference", "thinking", "toolInvocationSerialized", "toolInvocation"})
_SESSION_KEYS = ("version", "requesterUsername", "responderUsername")
# ResponseModelState values (chatModel.ts): pending, complete, cancelled, failed, needs input.
_CANCELLED, _FAILED = 2, 3


# -- the mutation log ---------------------------------------------------------------------------


def _step(container: Any, key: Any, loc: Loc) -> Any:
    if isinstance(container, dict) and isinstance(key, str):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(container):
        return container[key]
    raise loc.error(f"the path step {key!r} leads nowhere in the session state", expected="a path to an existing object or array")


def _parent(state: Any, path: list[Any], loc: Loc) -> Any:
    node = state
    for key in path[:-1]:
        node = _step(node, key, loc)
    return node


def _set(state: Any, path: list[Any], value: Any, loc: Loc, *, delete: bool = False) -> None:
    parent, key = _parent(state, path, loc), path[-1]
    if isinstance(parent, dict) and isinstance(key, str):
        if delete:
            parent.pop(key, None)
        else:
            parent[key] = value
    elif isinstance(parent, list) and isinstance(key, int) and not isinstance(key, bool) and 0 <= key <= len(parent):
        if delete:
            # VS Code deletes by setting undefined, which JSON keeps as null inside an array.
            value = None
        if key == len(parent):
            parent.append(value)
        else:
            parent[key] = value
    else:
        raise loc.error(f"cannot set {key!r} on a {type(parent).__name__}", expected="a path to a property of an object or an item of an array")


def _push(state: Any, path: list[Any], values: Any, cut: Any, loc: Loc) -> None:
    parent, key = _parent(state, path, loc), path[-1]
    target = _step(parent, key, loc) if isinstance(parent, (dict, list)) else None
    if target is None:
        target = []
    if not isinstance(target, list):
        raise loc.error(f"push onto a {type(target).__name__}", expected="a path to an array")
    if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
        del target[cut:]
    if isinstance(values, list):
        target.extend(values)
    _set(state, path, target, loc)


def replay_log(records: Iterable[tuple[Any, Loc]], notes: ImportNotes, *, file: str | None = None) -> dict[str, Any]:
    """The session a mutation log builds: its ``kind: 0`` state with every later entry applied."""
    state: dict[str, Any] | None = None
    for rec, loc in records:
        if not isinstance(rec, dict) or not isinstance(rec.get("kind"), int):
            if state is None:
                # The first line decides: a line that is no log entry is some other document.
                raise loc.error("not a VS Code chat session, nor its mutation log", expected="a session {version, sessionId, responderUsername, requests: [...]} or a log whose first line is {kind: 0, v: session}")
            raise loc.error("not a mutation log entry", expected="an entry {kind: 0..3, k?, v?}")
        kind = rec["kind"]
        if kind == 0:
            if not isinstance(rec.get("v"), dict):
                raise loc.at("v").error("the initial state is no object", expected="the session object")
            state = rec["v"]
            continue
        if state is None:
            raise loc.error("a change before the initial state", expected="a first line {kind: 0, v: session}")
        path = rec.get("k")
        if not isinstance(path, list):
            raise loc.at("k").error("the entry has no path", expected="a list of keys and indexes")
        if not path:
            # The root holds no key field, so VS Code never writes a root change; one would replace the state.
            if kind == 1 and isinstance(rec.get("v"), dict):
                state = rec["v"]
            else:
                notes.skip(f"log:kind {kind} at the root")
            continue
        if kind == 1:
            _set(state, path, rec.get("v"), loc)
        elif kind == 2:
            _push(state, path, rec.get("v"), rec.get("i"), loc)
        elif kind == 3:
            _set(state, path, None, loc, delete=True)
        else:
            notes.skip(f"log:kind {kind} (unknown kind)")
    if state is None:
        raise TranscriptError("the log has no initial state", file=file, expected="a first line {kind: 0, v: session}")
    return state


# -- content helpers ----------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A message VS Code stores as a string or an ``IMarkdownString`` ``{value}``."""
    if isinstance(value, str):
        return value
    inner = as_dict(value).get("value")
    return inner if isinstance(inner, str) else ""


def _joined(value: Any) -> str:
    # Thinking streams in as chunks: a list is the chunks in order.
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _tsx_text(node: Any, out: list[str], notes: ImportNotes, depth: int = 0) -> None:
    """The text leaves of a prompt-tsx tree, in order (type 1 elements, type 2 text chunks)."""
    if not isinstance(node, dict) or depth > 200:
        return
    text = node.get("text")
    if isinstance(text, str):
        out.append(("\n" if node.get("lineBreakBefore") is True else "") + text)
    children = node.get("children")
    if isinstance(children, list):
        for child in children:
            _tsx_text(child, out, notes, depth + 1)
    elif not isinstance(text, str) and node.get("type") not in (1, None):
        notes.skip(f"result_part:tsx node type {node.get('type')}")


def _result_text(result: Any, notes: ImportNotes) -> str:
    """A ``LanguageModelToolResult`` as the text the model read: its text parts joined by a newline."""
    if isinstance(result, str):
        return result
    content = as_dict(result).get("content")
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        value = as_dict(part).get("value")
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict) and "node" in value:
            leaves: list[str] = []
            _tsx_text(value["node"], leaves, notes)
            texts.append("".join(leaves))
        else:
            # Data parts (images, JSON blobs) have no text the lab can count.
            notes.skip("result_part:data (no text)")
    return "\n".join(texts)


def _uri_name(value: Any) -> str:
    ref = as_dict(value)
    uri = as_dict(ref.get("uri")) or ref
    path = opt_str(uri.get("path")) or opt_str(uri.get("fsPath")) or ""
    return unquote(path.rstrip("/").rsplit("/", 1)[-1])


def _words(part: Any) -> str | None:
    """The text a rendered part shows, for the parts that are text; None for any other part."""
    if isinstance(part, str):
        return part
    p = as_dict(part)
    kind = p.get("kind")
    if kind is None and isinstance(p.get("value"), str):
        return str(p["value"])
    if kind in ("markdownContent", "markdownVuln"):
        return _text(p.get("content"))
    if kind == "inlineReference":
        # As VS Code writes the reference into the response's text: its name in backticks.
        name = opt_str(p.get("name")) or _uri_name(p.get("inlineReference"))
        return f"`{name}`" if name else ""
    return None


def _request_usage(req: dict[str, Any], result: dict[str, Any], meta: dict[str, Any]) -> Usage | None:
    for raw in (result.get("usage"), req.get("usage")):
        u = as_dict(raw)
        prompt, output = token_count(u.get("promptTokens")), token_count(u.get("completionTokens"))
        if prompt or output:
            return Usage(input_tokens=prompt, output_tokens=output)
    prompt, output = token_count(meta.get("promptTokens")), token_count(meta.get("outputTokens"))
    return Usage(input_tokens=prompt, output_tokens=output) if prompt or output else None


def _summaries(meta: dict[str, Any]) -> list[tuple[str, str]]:
    raw = meta.get("summaries")
    items = raw if isinstance(raw, list) else [meta.get("summary")]
    out: list[tuple[str, str]] = []
    for item in items:
        s = as_dict(item)
        rid, text = opt_str(s.get("toolCallRoundId")), s.get("text")
        if rid is not None and isinstance(text, str) and text.strip():
            out.append((rid, text))
    return out


# -- one session ---------------------------------------------------------------------------------


class _Session:
    """The requests of one session, turned into an alternating history."""

    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.models: list[str] = []
        # Round ids already read, to place a summary of an earlier request's round.
        self.rounds_seen: set[str] = set()
        self.summarized: set[str] = set()
        self.call_ids: set[str] = set()

    def _sent_id(self, source: str | None) -> str | None:
        """The call id the model saw: Copilot stores ``<id>__vscode-<n>`` and strips the suffix before sending."""
        if source is None:
            return None
        sent = source.split("__vscode-")[0] or source
        # Copilot adds the suffix because some models reuse ids: a reused one keeps it, to stay unique.
        if sent in self.call_ids:
            sent = source
        self.call_ids.add(sent)
        return sent

    # -- the user turn -------------------------------------------------------------------------
    def _rendered(self, parts: Any) -> list[Block]:
        blocks: list[Block] = []
        for part in parts if isinstance(parts, list) else []:
            p = as_dict(part)
            if isinstance(p.get("text"), str):
                if p["text"].strip():
                    blocks.append(TextBlock(text=p["text"]))
            elif p.get("type") == 2:
                blocks.append(image_from_url(as_dict(p.get("imageUrl")).get("url")))
            elif p.get("type") != 3:
                # Type 3 is a cache breakpoint, no content.
                self.notes.skip(f"rendered_part:{p.get('type')} (unknown type)")
        return blocks

    def user(self, req: dict[str, Any], meta: dict[str, Any], key: str, stamp: datetime | None) -> None:
        blocks = self._rendered(meta.get("renderedUserMessage"))
        if not blocks:
            variables = as_dict(req.get("variableData")).get("variables")
            for var in variables if isinstance(variables, list) else []:
                value = as_dict(var).get("value")
                if isinstance(value, str) and value.strip():
                    blocks.append(TextBlock(text=value))
            message = req.get("message")
            text = message if isinstance(message, str) else as_dict(message).get("text")
            if isinstance(text, str) and text.strip():
                blocks.append(TextBlock(text=text))
        if not blocks:
            self.notes.skip("request:empty message")
            return
        self.b.user_turn(blocks, key=key, timestamp=stamp)

    # -- tool call rounds ----------------------------------------------------------------------
    def rounds(self, rounds: list[Any], meta: dict[str, Any], key: str, loc: Loc) -> None:
        results = as_dict(meta.get("toolCallResults"))
        summaries = dict(_summaries(meta))
        for n, raw in enumerate(rounds):
            at = loc.at(n)
            if not isinstance(raw, dict):
                self.notes.skip("round:non_object")
                continue
            blocks: list[Block] = []
            thinking = as_dict(raw.get("thinking"))
            text = _joined(thinking.get("text"))
            if text.strip():
                blocks.append(ThinkingBlock(thinking=text))
            elif opt_str(thinking.get("encrypted")):
                # The lab has no block for encrypted reasoning nobody can read or count.
                self.notes.skip("thinking:encrypted")
            if isinstance(raw.get("response"), str) and raw["response"].strip():
                blocks.append(TextBlock(text=raw["response"]))
            calls = raw.get("toolCalls")
            opened: list[tuple[str, str, str | None]] = []
            for c, call in enumerate(calls if isinstance(calls, list) else []):
                cl = as_dict(call)
                name = opt_str(cl.get("name"))
                if name is None:
                    self.notes.warnings.append(f"{at.at('toolCalls').at(c).where}: a tool call without a name: kept as {UNNAMED_TOOL!r}")
                    name = UNNAMED_TOOL
                source = opt_str(cl.get("id"))
                use = self.b.use(self._sent_id(source), name, parse_arguments(cl.get("arguments"), self.notes, at.at("toolCalls").at(c).at("arguments")), key=f"{key}.r{n}.{c}")
                opened.append((use.id, name, source))
                blocks.append(use)
            usage = openai_usage(raw.get("usage"))
            if blocks:
                self.b.add("assistant", blocks, key=f"{key}.r{n}", usage=usage)
            else:
                self.notes.skip("round:empty")
            for canonical, name, source in opened:
                if source is not None and source in results:
                    self.b.result(canonical, _result_text(results[source], self.notes), key=f"{key}.r{n}.results", canonical=True)
                else:
                    self.notes.warnings.append(f"tool call {canonical!r} ({name}) has no stored result; left unanswered (Copilot would not send it again)")
            rid = opt_str(raw.get("id"))
            if rid is not None:
                self.rounds_seen.add(rid)
                if rid in summaries and rid not in self.summarized:
                    self.summary(summaries[rid], f"{key}.r{n}")
                    self.summarized.add(rid)

    def earlier_summaries(self, meta: dict[str, Any], rounds: list[Any], key: str) -> None:
        """Summaries of rounds of earlier requests: the marker goes before this request."""
        own = {opt_str(as_dict(r).get("id")) for r in rounds}
        for rid, text in _summaries(meta):
            if rid in own or rid in self.summarized:
                continue
            self.summarized.add(rid)
            if rid not in self.rounds_seen:
                self.notes.warnings.append(f"request {key!r}: a summary of round {rid!r}, which the session does not hold; placed before this request")
            self.summary(text, f"{key}.before")

    def summary(self, text: str, key: str) -> None:
        boundary = Boundary(trigger="import", strategy=STRATEGY, messages_removed=self.b.unmarked())
        self.b.compaction(boundary, "[Conversation summarized by Copilot]", text, key=key)

    # -- rendered response parts (no rounds stored) ------------------------------------------
    def rendered(self, parts: list[Any], key: str, loc: Loc) -> None:
        """The response as VS Code showed it: text, thinking and tool invocations in order."""
        blocks: list[Block] = []
        text: list[str] = []
        pending: list[tuple[str, str, dict[str, Any]]] = []

        def flush_text() -> None:
            joined = "".join(text)
            if joined.strip():
                blocks.append(TextBlock(text=joined))
            text.clear()

        def flush_message(n: int) -> None:
            flush_text()
            if blocks:
                self.b.add("assistant", list(blocks), key=f"{key}.p{n}")
                blocks.clear()
            for canonical, name, part in pending:
                output = as_dict(part.get("resultDetails")).get("output")
                texts = [o["value"] for o in output if isinstance(o, dict) and isinstance(o.get("value"), str)] if isinstance(output, list) else []
                if texts:
                    self.b.result(canonical, "\n".join(texts), key=f"{key}.p{n}.results", canonical=True)
                else:
                    self.notes.warnings.append(f"tool call {canonical!r} ({name}): the session keeps only how VS Code showed it, no output; left unanswered")
            pending.clear()

        def say(n: int, words: str) -> None:
            if pending and words.strip():
                # Words after a call come from the next model call, which had the call's result.
                flush_message(n)
            text.append(words)

        for n, part in enumerate(parts):
            p = as_dict(part)
            kind = opt_str(p.get("kind"))
            words = _words(part)
            if words is not None:
                say(n, words)
            elif kind == "thinking":
                if pending:
                    flush_message(n)
                flush_text()
                thought = _joined(p.get("value"))
                if thought.strip():
                    blocks.append(ThinkingBlock(thinking=thought))
            elif kind in ("toolInvocationSerialized", "toolInvocation"):
                flush_text()
                name = opt_str(p.get("toolId")) or UNNAMED_TOOL
                args = parse_arguments(as_dict(p.get("resultDetails")).get("input"), self.notes, loc.at(n).at("resultDetails").at("input"))
                use = self.b.use(opt_str(p.get("toolCallId")), name, args, key=f"{key}.p{n}")
                blocks.append(use)
                pending.append((use.id, name, p))
            else:
                self._count(kind)
        flush_message(len(parts))

    def _count(self, kind: str | None) -> None:
        if kind in _SHOWN_ONLY:
            self.notes.skip(f"part:{kind} (shown only)")
        else:
            self.notes.skip(f"part:{kind or 'unknown'} (unknown kind)")

    def count_shown(self, parts: list[Any], rounds: list[Any]) -> None:
        """With rounds stored, the rendered parts are only counted: the rounds hold what the model said."""
        thought = any(as_dict(r).get("thinking") for r in rounds)
        for part in parts:
            kind = opt_str(as_dict(part).get("kind"))
            if kind == "thinking" and not thought:
                # Which round it belonged to is not recorded: counted rather than guessed.
                self.notes.skip("part:thinking (no round holds it)")
            elif kind is not None and kind not in _SPOKEN:
                self._count(kind)

    # -- one request ---------------------------------------------------------------------------
    def request(self, i: int, req: dict[str, Any], loc: Loc) -> None:
        key = opt_str(req.get("requestId")) or f"request{i}"
        result = as_dict(req.get("result"))
        meta = as_dict(result.get("metadata"))
        model = opt_str(req.get("modelId"))
        if model is not None and model not in self.models:
            self.models.append(model)
        raw_rounds = meta.get("toolCallRounds")
        rounds = raw_rounds if isinstance(raw_rounds, list) else []
        self.earlier_summaries(meta, rounds, key)
        self.user(req, meta, key, parse_timestamp(req.get("timestamp")))
        before = len(self.b.messages)
        response = req.get("response")
        parts = [response] if isinstance(response, str) else response if isinstance(response, list) else []
        self.notes.records_read += len(parts)
        if rounds:
            self.rounds(rounds, meta, key, loc.at("result").at("metadata").at("toolCallRounds"))
            self.count_shown(parts, rounds)
        else:
            self.rendered(parts, key, loc.at("response"))
        self._finish(req, result, meta, key, before)

    def _finish(self, req: dict[str, Any], result: dict[str, Any], meta: dict[str, Any], key: str, before: int) -> None:
        mine = [j for j in range(before, len(self.b.messages)) if self.b.messages[j].role == "assistant"]
        if mine:
            j = mine[-1]
            update: dict[str, Any] = {}
            done = parse_timestamp(as_dict(req.get("modelState")).get("completedAt"))
            if done is not None:
                update["timestamp"] = done
            usage = _request_usage(req, result, meta)
            if usage is not None and all(self.b.messages[k].usage is None for k in mine):
                update["usage"] = usage
            if update:
                self.b.messages[j] = self.b.messages[j].model_copy(update=update)
        error = as_dict(result.get("errorDetails"))
        if error:
            what = "filtered" if error.get("responseIsFiltered") else "failed"
            self.notes.warnings.append(f"request {key!r} {what}: {_text(error.get('message')) or 'no message'}")
        state = as_dict(req.get("modelState")).get("value")
        if req.get("isCanceled") is True or state == _CANCELLED:
            self.notes.warnings.append(f"request {key!r} was cancelled by the user")
        elif state == _FAILED and not error:
            self.notes.warnings.append(f"request {key!r} failed (no error details recorded)")


# -- the document ----------------------------------------------------------------------------------


def _is_request(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("requestId"), str) and "message" in entry


def is_session(doc: Any) -> bool:
    """Whether ``doc`` is a chat session: ``requests`` of ``{requestId, message}`` beside the session's keys."""
    if not isinstance(doc, dict) or not isinstance(doc.get("requests"), list) or not any(k in doc for k in _SESSION_KEYS):
        return False
    head = doc["requests"][:20]
    return not head or sum(map(_is_request, head)) * 2 > len(head)


def _log_head(rec: Any) -> bool:
    return isinstance(rec, dict) and rec.get("kind") == 0 and is_session(rec.get("v"))


def from_document(doc: Any, *, file: str | None = None, notes: ImportNotes | None = None) -> Transcript:
    """A chat session document (or a mutation log's replayed state)."""
    notes = notes if notes is not None else ImportNotes()
    if _log_head(doc):
        doc = doc["v"]
    if not is_session(doc):
        raise TranscriptError(
            "not a VS Code chat session", file=file, where="$",
            expected="a session {version, sessionId, responderUsername, requests: [{requestId, message, response, result}]}",
        )  # fmt: skip
    requests: list[Any] = doc["requests"]
    base = Loc(file, "$.requests")
    notes.records_read += len(requests)
    s = _Session(notes)
    count = 0
    for i, req in enumerate(requests):
        if not _is_request(req):
            notes.skip(f"request:{'unknown' if isinstance(req, dict) else 'non_object'}")
            continue
        count += 1
        if req.get("shouldBeRemovedOnSend") or req.get("isHidden") is True:
            notes.skip("request:removed by a checkpoint restore")
            continue
        s.request(i, req, base.at(i))
    messages = s.b.finish()
    if not count:
        raise TranscriptError("the chat session holds no request yet", file=file, where="$.requests", expected="requests [{requestId, message, response}]")
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(f"{count} requests but none that was sent to the model", file=file, where="$.requests", expected="requests with a message")
    if len(s.models) > 1:
        notes.warnings.append(f"models used: {', '.join(s.models)}")
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=opt_str(doc.get("sessionId")) or (Path(file).stem if file else None),
        title=opt_str(doc.get("customTitle")),
        model=s.models[0] if s.models else None,
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


def read(path: Path) -> Transcript:
    notes = ImportNotes()
    expected = "a VS Code chat session (<sessionId>.json, or its .jsonl mutation log)"
    doc, records = document_or_log(path, notes, expected, is_session)
    if records is not None:
        doc = replay_log(records, notes, file=str(path))
    return from_document(doc, file=str(path), notes=notes)


# -- detection -------------------------------------------------------------------------------------

_HEAD_REQUESTS = re.compile(r'"requests"\s*:\s*\[\s*\{\s*"requestId"\s*:')
_HEAD_KEYS = re.compile(r'"(?:responderUsername|requesterUsername)"\s*:\s*"')
_HEAD_LOG = re.compile(r'^\s*\{\s*"kind"\s*:\s*0\s*,\s*"v"\s*:\s*\{')


def sniff(probe: FileHead) -> int:
    doc = probe.first_value()
    session = as_dict(doc).get("v") if _log_head(doc) else doc
    if isinstance(session, dict) and is_session(session):
        # A log's first state is often the empty session it started as: the lines after it fill it.
        grows = session is not doc and len(probe.records or ()) > 1
        return 96 if session["requests"] or grows else (90 if opt_str(session.get("sessionId")) else 0)
    head = probe.head
    too_large = doc is None and bool(_HEAD_KEYS.search(head))
    if too_large and (_HEAD_REQUESTS.search(head) or (_HEAD_LOG.match(head) and '"requests"' in head)):
        return 85
    return 0


FORMAT = Format(
    name=NAME,
    description="GitHub Copilot Chat sessions of VS Code (workspaceStorage/<hash>/chatSessions/<sessionId>.json or .jsonl)",
    sniff=sniff,
    read=read,
)
