"""OpenCode sessions (sst/opencode): ``opencode export`` documents and the messages API.

OpenCode keeps a session as messages, each ``{info, parts}``: ``info`` is the
message (``role`` user or assistant; an assistant's ``providerID``,
``modelID``, ``path.cwd``, ``tokens``, ``summary``, ``error``), ``parts`` are
what it holds, in order (``packages/opencode/src/session/message-v2.ts``).
``opencode export <sessionID>`` writes ``{info: <session>, messages: [{info,
parts}], todos?}`` (``src/cli/cmd/export.ts``); ``GET /session/:id/message``
answers the bare list of messages, also accepted. OpenCode's own storage (its
``storage/`` folders and ``opencode.db``) is read by ``opencode_storage``, which
hands the same ``{info, parts}`` messages to ``from_messages``.

Mapping (what ``MessageV2.toModelMessages`` sends the model):

* user parts: ``text`` (``ignored`` ones are not sent, and skipped);
  ``file`` images become image blocks, other non-text files a one-line note
  (text and directory files were already turned into ``synthetic`` text parts
  beside them); ``compaction`` is the prompt "What did we do so far?";
  ``subtask`` is "The following tool was executed by the user".
* assistant parts: ``text``; ``reasoning`` -> thinking (its provider
  signature kept); ``tool`` -> a tool_use (``callID``, ``tool``,
  ``state.input``) answered by a tool_result: ``completed`` its ``output``,
  ``error`` its ``error`` with ``is_error``; a ``pending`` / ``running`` call
  is answered "[Tool execution was interrupted]" (as OpenCode does) unless it
  is in the session's last step, where it stays unanswered (``export
  --close-pending`` answers it). A message with several steps
  (``step-start`` ... ``step-finish``) becomes one assistant message per step,
  each followed by its tool results; the step's ``step-finish.tokens`` are
  that message's usage (input and cache reads/writes as OpenCode splits them;
  output counts the reasoning tokens too, both billed as output) and its
  ``cost`` the usage's ``cost_usd``; a message without any ``step-finish``
  (older OpenCode) uses its ``info.tokens`` and ``info.cost``.
* An assistant message with an ``error`` is not sent by OpenCode (unless an
  abort left real output), so it is skipped, counted and warned about.
* Compaction: the user message with a ``compaction`` part becomes a boundary
  marker (``auto`` -> trigger auto, else manual) followed by that prompt and
  the ``summary: true`` assistant reply, both tagged ``summary``, and the
  synthetic "Continue if you have next steps" turn an auto compaction adds,
  tagged ``summary`` too; a replay undoes them with the marker. A summary
  reply with no compaction prompt before it (older OpenCode) gets its marker
  too. Tool outputs OpenCode pruned (``state.time.compacted``) keep their
  full output, with a warning saying how many.
* ``step-start``/``step-finish`` split and bill the steps; ``snapshot``,
  ``patch``, ``agent``, ``retry`` and unknown parts are no content: each is
  counted in ``notes.skipped`` as ``part:<type>`` (``part:<type> (unknown
  type)`` for a type this reader does not know), entries that are not
  messages as ``record:<kind>``; ``notes.records_read`` counts parts (and
  such entries), so the skipped share is one of parts.
* meta: the session id, title and directory; the model is
  ``providerID/modelID`` of the first assistant message (the price table
  strips the provider), every model used is listed in a warning when there
  are several.

Detection: 96 for an export document (``info`` + ``messages`` of ``{info,
parts}``), 97 for a bare list of such messages (above Gemini's score for
lists of ``parts``); 85 for a document too large to
probe whose head shows ``"parts"``, ``"messageID"`` and ``"sessionID"``.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, Message, TextBlock, ThinkingBlock, ToolUseBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder, Loc, image_from_url, parse_timestamp, opt_str, as_dict
from ..jsonio import read_json
from ..registry import FileHead, Format, REQUEST_BODIES

__all__ = ["FORMAT", "NAME", "STRATEGY", "is_message", "from_document", "from_messages", "read", "sniff"]

NAME = "opencode"
# The strategy of the boundary an OpenCode compaction leaves.
STRATEGY = "opencode_compaction"

_COMPACTION_PROMPT = "What did we do so far?"
_SUBTASK_PROMPT = "The following tool was executed by the user"
_INTERRUPTED = "[Tool execution was interrupted]"
# Parts that carry bookkeeping, never content the model was sent.
_NO_CONTENT = frozenset({"step-start", "step-finish", "snapshot", "patch", "agent", "retry"})
_KNOWN_PARTS = _NO_CONTENT | {"text", "reasoning", "tool", "file", "compaction", "subtask"}


def _skipped_part(kind: str) -> str:
    """How ``notes.skipped`` names a part that sends nothing: known bookkeeping, or a type this reader does not know."""
    return f"part:{kind}" if kind in _KNOWN_PARTS else f"part:{kind} (unknown type)"
# OpenCode turns these files into synthetic text parts before storing the message.
_TEXT_FILES = frozenset({"text/plain", "application/x-directory"})


def _num(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def _usage(tokens: Any, cost: Any = None) -> Usage | None:
    t = as_dict(tokens)
    cache = as_dict(t.get("cache"))
    # OpenCode stores output without the reasoning tokens; the provider billed both as output.
    usage = Usage(
        input_tokens=_num(t.get("input")),
        output_tokens=_num(t.get("output")) + _num(t.get("reasoning")),
        cache_read_tokens=_num(cache.get("read")),
        cache_write_tokens=_num(cache.get("write")),
        cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None,
    )
    return usage if usage.total else None


def is_message(entry: Any) -> bool:
    """Whether ``entry`` is an OpenCode message: ``{info: {role: user|assistant}, parts: [...]}``."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("parts"), list)
        and isinstance(entry.get("info"), dict)
        and entry["info"].get("role") in ("user", "assistant")
    )


def _signature(part: dict[str, Any]) -> str | None:
    # The AI SDK keeps a provider's reasoning signature in the part's provider metadata.
    for meta in as_dict(part.get("metadata")).values():
        sig = as_dict(meta).get("signature")
        if opt_str(sig):
            return str(sig)
    return None


class _Session:
    """The messages of one session, turned into an alternating history."""

    def __init__(self, notes: ImportNotes, file: str | None) -> None:
        self.notes = notes
        self.file = file
        self.b = HistoryBuilder(notes)
        self.models: list[str] = []
        self.cwd: str | None = None
        self.pruned = 0
        self.errors = 0
        # Set after a compaction's summary reply: the synthetic turn that follows is the compaction's too.
        self.after_summary = False
        self.marker_open = False  # a boundary was just added and its summary reply may follow

    # -- helpers -------------------------------------------------------------------
    def _user_blocks(self, parts: list[Any], loc: Loc) -> tuple[list[Block], dict[str, Any] | None, bool]:
        """The blocks a user message sends, its compaction part (if any), and whether all its text is synthetic."""
        blocks: list[Block] = []
        compaction: dict[str, Any] | None = None
        synthetic = True
        for part in parts:
            kind = opt_str(as_dict(part).get("type")) or "unknown"
            if kind == "text":
                if part.get("ignored") is True:
                    self.notes.skip("part:text (ignored)")
                    continue
                text = part.get("text")
                if isinstance(text, str) and text.strip():
                    blocks.append(TextBlock(text=text))
                    synthetic = synthetic and part.get("synthetic") is True
            elif kind == "file":
                mime = opt_str(part.get("mime")) or "application/octet-stream"
                if mime in _TEXT_FILES:
                    self.notes.skip("part:file (sent as text)")
                elif mime.startswith("image/"):
                    blocks.append(image_from_url(part.get("url")))
                else:
                    blocks.append(TextBlock(text=f"[Attached {mime}: {opt_str(part.get('filename')) or 'file'}]"))
            elif kind == "compaction":
                compaction = part
                blocks.append(TextBlock(text=_COMPACTION_PROMPT))
            elif kind == "subtask":
                blocks.append(TextBlock(text=_SUBTASK_PROMPT))
            else:
                self.notes.skip(_skipped_part(kind))
        return blocks, compaction, synthetic

    def _add_user(self, blocks: list[Block], key: str, stamp: datetime | None, tag: Any = None) -> None:
        results = self.b.open_results_id
        if results is not None and tag is None:
            # The user's words join the tool results before them: one user turn, as the API expects.
            last = self.b.messages[-1]
            self.b.messages[-1] = last.model_copy(update={"content": last.content + tuple(blocks)})
            self.b.close_results()
            return
        self.b.add("user", blocks, key=key, timestamp=stamp, tag=tag)

    def _add_assistant(self, blocks: list[Block], key: str, stamp: datetime | None, usage: Usage | None, tag: Any) -> None:
        last = self.b.messages[-1] if self.b.messages else None
        if last is not None and last.role == "assistant" and last.tag == tag and self.b.open_results_id is None and last.boundary is None:
            # Two model requests with no user turn between (a retry, a second message): one turn,
            # billed as the later request, which was sent the whole turn so far.
            self.b.messages[-1] = last.model_copy(update={"content": last.content + tuple(blocks), "usage": usage or last.usage})
            self.notes.warnings.append(f"assistant message {key!r} continues the one before it with no user turn between; merged")
            return
        self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=usage, tag=tag)

    def _boundary(self, key: str, stamp: datetime | None, auto: bool) -> None:
        boundary = Boundary(trigger="auto" if auto else "manual", strategy=STRATEGY, timestamp=stamp)
        self.b.boundary(boundary, f"[Conversation compacted by OpenCode ({'auto' if auto else 'manual'})]", key=key, timestamp=stamp)
        self.marker_open = True

    # -- messages ------------------------------------------------------------------
    def user(self, info: dict[str, Any], parts: list[Any], key: str, loc: Loc) -> None:
        stamp = parse_timestamp(as_dict(info.get("time")).get("created"))
        blocks, compaction, synthetic = self._user_blocks(parts, loc)
        if compaction is not None:
            self._boundary(key, stamp, compaction.get("auto") is True)
            self.b.add("user", blocks, key=key, timestamp=stamp, tag="summary")
            self.after_summary = False
            return
        if not blocks:
            self.notes.skip("message:user (nothing sent)")
            return
        if self.after_summary and synthetic:
            # "Continue if you have next steps": written by the compaction, undone with it.
            self.b.add("user", blocks, key=key, timestamp=stamp, tag="summary")
        else:
            self._add_user(blocks, key, stamp)
        self.after_summary = self.marker_open = False

    def assistant(self, info: dict[str, Any], parts: list[Any], key: str, loc: Loc, last: bool) -> None:
        stamp = parse_timestamp(as_dict(info.get("time")).get("created"))
        provider, model = opt_str(info.get("providerID")), opt_str(info.get("modelID"))
        if model is not None:
            name = f"{provider}/{model}" if provider else model
            if name not in self.models:
                self.models.append(name)
        self.cwd = self.cwd or opt_str(as_dict(info.get("path")).get("cwd"))
        err = as_dict(info.get("error"))
        real = [p for p in parts if as_dict(p).get("type") not in ("step-start", "reasoning")]
        if info.get("error") is not None and not (err.get("name") == "MessageAbortedError" and real):
            # OpenCode never sends a failed request's message to the model again.
            name = opt_str(err.get("name")) or "error"
            self.errors += 1
            self.notes.skip(f"message:assistant ({name})")
            self.notes.warnings.append(f"{loc.where}: assistant message {key!r} ended with {name}; not part of the history OpenCode sends")
            return
        summary = info.get("summary") is True
        if summary and not self.marker_open:
            self._boundary(key, stamp, auto=False)
        tag = "summary" if summary else None
        steps = self._steps(parts)
        # Without any step-finish (older OpenCode), the message's own tokens are its one request's.
        finished = any(as_dict(p).get("type") == "step-finish" for p in parts)
        for n, (blocks, results, step) in enumerate(steps):
            step_key = key if n == 0 else f"{key}.step{n}"
            if step is not None:
                usage = _usage(step.get("tokens"), step.get("cost"))
            else:
                usage = _usage(info.get("tokens"), info.get("cost")) if not finished and n == len(steps) - 1 else None
            self._add_assistant(blocks, step_key, stamp, usage, tag)
            for use, content, is_error, ended in results:
                if content is None:
                    if last and n == len(steps) - 1:
                        continue  # the session stops here: the call is pending, as recorded
                    self.notes.warnings.append(f"tool call {use.id!r} ({use.name}) never finished; answered {_INTERRUPTED!r} as OpenCode does")
                    content, is_error = _INTERRUPTED, True
                self.b.result(use.id, content, key=f"{step_key}.{use.id}", is_error=is_error, timestamp=ended or stamp)
        if not steps:
            self.notes.skip("message:assistant (empty)")
        self.after_summary = summary
        self.marker_open = False

    def _steps(self, parts: list[Any]) -> list[tuple[list[Block], list[tuple[ToolUseBlock, str | None, bool, datetime | None]], Any]]:
        """The steps of an assistant message: (blocks, tool results, its step-finish part), empty steps left out."""
        steps: list[tuple[list[Block], list[tuple[ToolUseBlock, str | None, bool, datetime | None]], Any]] = []
        blocks: list[Block] = []
        results: list[tuple[ToolUseBlock, str | None, bool, datetime | None]] = []
        tokens: Any = None

        def close() -> None:
            nonlocal blocks, results, tokens
            if blocks:
                steps.append((blocks, results, tokens))
            elif tokens is not None:
                self.notes.skip("step (no content)")
            blocks, results, tokens = [], [], None

        for part in parts:
            p = as_dict(part)
            kind = opt_str(p.get("type")) or "unknown"
            if kind == "step-start":
                # Bookkeeping that is read, not skipped: it splits steps and gives their usage.
                if blocks or tokens is not None:
                    close()
            elif kind == "step-finish":
                tokens = p
            elif kind == "text":
                text = p.get("text")
                if isinstance(text, str) and text.strip():
                    blocks.append(TextBlock(text=text))
            elif kind == "reasoning":
                text = p.get("text")
                if isinstance(text, str) and text.strip():
                    blocks.append(ThinkingBlock(thinking=text, signature=_signature(p)))
                else:
                    self.notes.skip("part:reasoning (empty)")
            elif kind == "tool":
                use, content, is_error, ended = self._tool(p)
                blocks.append(use)
                results.append((use, content, is_error, ended))
            else:
                self.notes.skip(_skipped_part(kind))
        close()
        return steps

    def _tool(self, part: dict[str, Any]) -> tuple[ToolUseBlock, str | None, bool, datetime | None]:
        state = as_dict(part.get("state"))
        status = state.get("status")
        raw_input = state.get("input")
        tool_input = raw_input if isinstance(raw_input, dict) else ({} if raw_input is None else {"value": raw_input})
        name = opt_str(part.get("tool")) or "unknown_tool"
        use = self.b.use(opt_str(part.get("callID")), name, tool_input, key=opt_str(part.get("id")) or "tool")
        ended = parse_timestamp(as_dict(state.get("time")).get("end"))
        if status == "completed":
            if as_dict(state.get("time")).get("compacted") is not None:
                self.pruned += 1
            if state.get("attachments"):
                self.notes.skip("tool attachments", len(state["attachments"]) if isinstance(state["attachments"], list) else 1)
            output = state.get("output")
            return use, output if isinstance(output, str) else "", False, ended
        if status == "error":
            meta = as_dict(state.get("metadata"))
            if meta.get("interrupted") is True and isinstance(meta.get("output"), str):
                # An interrupted command: OpenCode sends the output it had, as a plain result.
                return use, meta["output"], False, ended
            error = state.get("error")
            return use, error if isinstance(error, str) else "tool error", True, ended
        return use, None, False, None

    def finish(self) -> list[Message]:
        if self.pruned:
            self.notes.warnings.append(
                f"{self.pruned} tool output(s) were pruned by OpenCode (state.time.compacted); imported with their full output"
            )
        if len(self.models) > 1:
            self.notes.warnings.append(f"models used: {', '.join(self.models)}")
        return self.b.finish()


def from_messages(
    entries: list[Any], *, file: str | None = None, path: str = "$", info: dict[str, Any] | None = None, notes: ImportNotes | None = None
) -> Transcript:
    """Convert a list of OpenCode messages ``{info, parts}`` found at JSON ``path``.

    ``notes`` are the caller's, when it already counted records of its own (the storage
    reader's unreadable files); the parts read here are added to them.
    """
    # A record is a part (or an entry that is no message): what ``notes.skipped`` counts against.
    notes = notes if notes is not None else ImportNotes()
    notes.records_read += sum(len(e["parts"]) if is_message(e) else 1 for e in entries)
    s = _Session(notes, file)
    base = Loc(file, path)
    msgs = [(i, e) for i, e in enumerate(entries) if is_message(e)]
    for e in entries:
        if not is_message(e):
            kind = opt_str(as_dict(e).get("type")) or ("unknown" if isinstance(e, dict) else "non_object")
            notes.skip(f"record:{kind}")
    if not msgs:
        raise TranscriptError("no OpenCode messages found", file=file, where=path, expected="messages shaped {info: {role, ...}, parts: [...]}")
    last_index = msgs[-1][0]
    for i, entry in msgs:
        minfo = entry["info"]
        key = opt_str(minfo.get("id")) or f"m{i}"
        loc = base.at(i)
        if minfo["role"] == "user":
            s.user(minfo, entry["parts"], key, loc)
        else:
            s.assistant(minfo, entry["parts"], key, loc, last=i == last_index)
    messages = s.finish()
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(
            f"{len(msgs)} OpenCode messages but none that was sent to the model", file=file, where=path,
            expected="user or assistant messages with text or tool parts",
        )
    session = info or {}
    session_id = opt_str(session.get("id")) or opt_str(msgs[0][1]["info"].get("sessionID"))
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=session_id,
        title=opt_str(session.get("title")) or "OpenCode session",
        model=s.models[0] if s.models else None,
        cwd=opt_str(session.get("directory")) or s.cwd,
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """An ``opencode export`` document ``{info, messages}`` or a bare list of messages."""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        info = doc.get("info")
        return from_messages(doc["messages"], file=file, path="$.messages", info=info if isinstance(info, dict) else None)
    if isinstance(doc, list):
        return from_messages(doc, file=file)
    raise TranscriptError("not an OpenCode session", file=file, where="$", expected="an `opencode export` document {info, messages: [{info, parts}]}")


def read(path: Path) -> Transcript:
    return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_KEYS = (re.compile(r'"parts"\s*:\s*\['), re.compile(r'"messageID"\s*:\s*"'), re.compile(r'"sessionID"\s*:\s*"'))


def _share(entries: list[Any]) -> bool:
    head = entries[:20]
    return bool(head) and sum(map(is_message, head)) * 2 > len(head)


def sniff(probe: FileHead) -> int:
    doc = probe.document
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return 96 if isinstance(doc.get("info"), dict) and _share(doc["messages"]) else 0
    if isinstance(doc, list):
        # Above Gemini's 95 for ``parts`` lists: Gemini contents carry ``role`` themselves, never ``info``.
        return 97 if _share(doc) else 0
    if doc is None and probe.shape == "json" and not probe.records and all(k.search(probe.head) for k in _HEAD_KEYS):
        return 85
    return 0


FORMAT = Format(
    name=NAME,
    description="OpenCode sessions (opencode export documents, the messages API's list of {info, parts})",
    sniff=sniff,
    read=read,
    # More specific: its {info, parts} messages also fit Gemini contents and the message-list bodies.
    more_specific_than=(*REQUEST_BODIES, "gemini"),
)
