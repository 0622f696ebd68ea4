"""Codex CLI rollouts (``~/.codex/sessions/.../rollout-*.jsonl``), as current and older versions write them.

Current rollouts hold one record per line, ``{timestamp, type, payload}``:

* ``session_meta``: the session id, cli version, cwd and the instructions.
  Versions up to late 2025 put the *user* instructions (AGENTS.md, skills) in
  ``instructions``, and also inject them into the history as a user message:
  the system message made from ``instructions`` is dropped when an injected
  message repeats its text, so it is counted once. Newer versions record the
  model's own prompt as ``base_instructions: {text}``. A fork copies its
  parent's records, header included: only the first header counts. A
  ``source`` of ``{"subagent": ...}`` (a spawned thread, review, compact) is
  warned about.
* ``response_item``: a Responses item (mapped by ``openai_responses.add_item``).
  User messages Codex injects rather than the user typing (``<environment_context>``,
  ``# AGENTS.md instructions for ...``, ``<user_instructions>``, ``<skill>``,
  ``<user_shell_command>``, ``<turn_aborted>``, ``<subagent_notification>``:
  the fragments Codex itself tells apart from user turns) become system
  messages, so nothing takes them for the user's request; a warning counts them.
* ``inter_agent_communication``: ``{author, recipient, content,
  encrypted_content?, trigger_turn}``, a message from another Codex agent,
  which Codex hands the model as an ``agent_message`` item: read as one, a
  user turn (a rollback counts it as one, as Codex does). Newer versions
  write ``inter_agent_communication_metadata`` and the ``agent_message``
  response item instead; the metadata line is only counted.
* ``compacted``: ``{message, replacement_history?}`` becomes a boundary, then
  the replacement history when Codex recorded one (its summary message tagged
  ``summary``), else the summary as a user message tagged ``summary``. Remote
  compaction (v2 included) records ``message: ""`` and a replacement history
  of kept user messages ending in an encrypted ``compaction`` item.
* ``event_msg``: UI events. ``user_message`` / ``agent_message`` /
  ``agent_reasoning`` repeat response items and are skipped; ``token_count``
  gives the assistant message its usage; ``thread_rolled_back`` drops the last
  N user turns, as Codex does when it resumes the session (recorded in
  ``notes.dropped``); ``thread_name_updated`` names the transcript. All of them,
  ``turn_aborted`` and ``error`` included, are counted as ``event_msg:<type>``.
* ``turn_context`` (model taken from the first; a change is warned about) and
  unknown record types are skipped and counted.

Older rollouts (mid 2025) start with a bare header ``{id, timestamp,
instructions?, git?}`` followed by bare Responses items; ``record_type``
state lines are skipped. A JSONL of bare items without a header reads the
same way.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, Message, TextBlock, ToolResultBlock, ToolUseBlock, Transcript, TranscriptMeta, message_text
from ..history_builder import HistoryBuilder, Loc, need_dict, openai_usage, parse_timestamp
from ..jsonio import gc_paused, iter_jsonl
from .openai_chat import add_responses_item as add_item
from .responses_items import COMPACTION_ITEMS, ITEM_TYPES, NAME, ROLLOUT_RECORDS, SERVER_ITEMS, is_rollout_header

__all__ = ["read_rollout", "is_injected_context", "INJECTED_FRAGMENTS"]

# (start, end) of the user-role fragments Codex injects; start is matched case-insensitively, as Codex does.
INJECTED_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("<environment_context>", "</environment_context>"),
    ("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<turn_aborted>", "</turn_aborted>"),
    ("<subagent_notification>", "</subagent_notification>"),
)
# How Codex's own summary message starts in a compacted history.
_SUMMARY_PREFIX = "Another language model started to solve this problem"
_ITEMS = ITEM_TYPES | SERVER_ITEMS
# Record types whose payload the reader needs; newer ones (world_state, ...) are only counted.
_READ_RECORDS = {"session_meta", "response_item", "compacted", "event_msg", "inter_agent_communication"}


def is_injected_context(text: str) -> bool:
    """Whether a user message text is context Codex injected, not words the user typed."""
    body = text.strip()
    return any(body[: len(start)].lower() == start.lower() and body.endswith(end) for start, end in INJECTED_FRAGMENTS)


def _injected_part(part: Any) -> str | None:
    """The text of a content part when it is injected context."""
    if isinstance(part, dict) and part.get("type") in ("input_text", "text"):
        part = part.get("text")
    return part if isinstance(part, str) and is_injected_context(part) else None


def _name(value: Any) -> str:
    """A record or event type as a notes key."""
    return value if isinstance(value, str) else "None" if value is None else type(value).__name__


def _text_of(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def _text(part: Any) -> str | None:
    if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
        part = part.get("text")
    return part if isinstance(part, str) and part else None


def _is_summary(parts: list[Any], summary: str) -> bool:
    """Whether a user message of a compacted history is Codex's summary (``summary`` is the record's message)."""
    text = "\n".join(t for t in map(_text, parts) if t).strip()
    if not text:
        return False
    return (bool(summary.strip()) and text.endswith(summary.strip())) or text.startswith(_SUMMARY_PREFIX)


def _subagent_parent(source: Any) -> str | None:
    """Who started a subagent session, from session_meta ``source`` (``{"subagent": ...}``); None otherwise."""
    sub = source.get("subagent") if isinstance(source, dict) else None
    if isinstance(sub, str):
        return sub  # "review", "compact", ...
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    if isinstance(spawn, dict):
        return f"spawned by thread {spawn.get('parent_thread_id')}"
    return None if sub is None else "subagent"


def _opens_turn(m: Message) -> bool:
    """A user turn as Codex counts them for a rollback: a user message that is not only tool results."""
    return m.role == "user" and m.tag is None and any(not isinstance(b, ToolResultBlock) for b in m.content)


class _Reader:
    """Walks one rollout's records into a HistoryBuilder."""

    def __init__(self, file: str) -> None:
        self.notes = ImportNotes()
        self.b = HistoryBuilder(self.notes)
        self.meta = TranscriptMeta(source_format=NAME, source_path=file)
        # The system message made from the header's instructions, while no injected message repeats it.
        self.instructions: Message | None = None
        self.headers = 0
        self.injected = 0
        self.rolled_back = False
        self.models: list[str] = []
        self.agent_messages = 0

    # -- records ------------------------------------------------------------------
    def record(self, rec: dict[str, Any], loc: Loc, key: str, first: bool) -> None:
        stamp = parse_timestamp(rec.get("timestamp"))
        kind = rec.get("type")
        if kind is not None and not isinstance(kind, str):
            raise loc.at("type").error("record type is not a string", expected="a Codex record type such as 'response_item'")
        if kind in ROLLOUT_RECORDS and "payload" in rec:
            payload = rec["payload"]
            if kind in _READ_RECORDS:
                payload = need_dict(payload, loc.at("payload"), "payload")
            if kind == "session_meta":
                self.header(payload, key, stamp)
            elif kind == "response_item":
                self.item(payload, loc.at("payload"), key, stamp)
            elif kind == "compacted":
                self.compacted(payload, loc.at("payload"), key, stamp)
            elif kind == "event_msg":
                self.event(payload, loc)
            elif kind == "inter_agent_communication":
                self.communication(payload, loc.at("payload"), key, stamp)
            else:
                model = payload.get("model") if kind == "turn_context" and isinstance(payload, dict) else None
                if isinstance(model, str) and model not in self.models:
                    self.models.append(model)
                self.notes.skip(kind)
        elif first and is_rollout_header(rec):
            self.header(rec, key, stamp)
            self.meta.title = "Codex CLI rollout"
        elif "record_type" in rec:
            self.notes.skip(f"record_type:{_name(rec['record_type'])}")
        elif kind in _ITEMS or (kind is None and "role" in rec):
            self.item(rec, loc, key, stamp)
        else:
            self.notes.skip(f"record:{_name(kind)}")

    def header(self, payload: dict[str, Any], key: str, stamp: datetime | None) -> None:
        self.headers += 1
        if self.headers > 1:
            self.notes.skip("session_meta")  # a fork's copy of its parent's header
            return
        sid = payload.get("id") if isinstance(payload.get("id"), str) else payload.get("session_id")
        self.meta.session_id = sid if isinstance(sid, str) else None
        version, cwd = payload.get("cli_version"), payload.get("cwd")
        self.meta.title = " ".join(str(x) for x in ("Codex CLI", version, cwd) if x)
        if isinstance(cwd, str) and cwd:
            self.meta.cwd = cwd
        parent = _subagent_parent(payload.get("source"))
        if parent is not None:
            self.notes.warnings.append(f"a subagent session ({parent}): its task came from another agent")
        if isinstance(payload.get("forked_from_id"), str):
            self.notes.warnings.append(f"forked from session {payload['forked_from_id']}: its history was copied in")
        text = _text_of(payload.get("instructions")) or _text_of(payload.get("base_instructions"))
        if text:
            self.instructions = self.b.add("system", [TextBlock(text=text)], key=key, timestamp=stamp)

    def item(self, item: Any, loc: Loc, key: str, stamp: datetime | None, *, summary: str | None = None) -> None:
        """One Responses item; injected user context becomes a system message, ``summary`` marks Codex's summary."""
        item = need_dict(item, loc, "item")
        if item.get("type") == "agent_message":
            self.agent_messages += 1
        if summary is not None and item.get("type") in COMPACTION_ITEMS:
            # The encrypted summary that ends a remote compaction's replacement history: the boundary
            # before that history already marks this compaction.
            self.notes.skip(f"item:{item['type']}")
            return
        if item.get("type", "message" if "role" in item else None) == "message" and item.get("role") == "user":
            content = item.get("content")
            parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
            texts = [t for t in map(_injected_part, parts) if t is not None]
            if texts:
                parts = [p for p in parts if _injected_part(p) is None]
                self.context(texts, f"{key}.context" if parts else key, stamp)
                if not parts:
                    return
                item = {**item, "content": parts}
            if summary is not None and _is_summary(parts, summary):
                blocks: list[Block] = [TextBlock(text=t) for t in map(_text, parts) if t]
                self.b.add("user", blocks, key=key, timestamp=stamp, tag="summary")
                return
        add_item(self.b, item, loc, key, stamp)

    def context(self, texts: list[str], key: str, stamp: datetime | None) -> None:
        self.injected += 1
        self.b.add("system", [TextBlock(text=t) for t in texts], key=key, timestamp=stamp)
        header = self.instructions
        repeated = message_text(header).strip() if header is not None else ""
        if repeated and any(repeated in t for t in texts):
            # The header's instructions are what this message injects: the model saw them once.
            self.b.messages[:] = [m for m in self.b.messages if m is not header]
            self.instructions = None
            self.notes.warnings.append("session_meta instructions are repeated by an injected message: kept once")

    def communication(self, payload: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        """A message between Codex agents: Codex gives the model the ``agent_message`` item read here."""
        content: list[dict[str, str]] = []
        if isinstance(payload.get("content"), str) and payload["content"]:
            content.append({"type": "input_text", "text": payload["content"]})
        if payload.get("encrypted_content"):
            content.append({"type": "encrypted_content"})
        item = {"type": "agent_message", "author": payload.get("author"), "recipient": payload.get("recipient"), "content": content}
        self.item(item, loc, key, stamp)

    def compacted(self, payload: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
        boundary = Boundary(trigger="import", strategy="codex_compact", timestamp=stamp)
        marker = self.b.boundary(boundary, None, key=key, timestamp=stamp)
        message = payload.get("message") if isinstance(payload.get("message"), str) else ""
        history = payload.get("replacement_history")
        if isinstance(history, list) and history:
            for j, entry in enumerate(history):
                self.item(entry, loc.at("replacement_history").at(j), f"{key}.{j}", stamp, summary=message)
            self.notes.warnings.append(f"{loc.where}: compaction replaced the history with {len(history)} item(s)")
            # The replacement items copy kept history: mark how many, so a replay of the raw history can drop them.
            at = next(i for i, m in enumerate(self.b.messages) if m is marker)
            written = len(self.b.messages) - at - 1
            self.b.messages[at] = marker.model_copy(update={"boundary": boundary.model_copy(update={"replaced_messages": written})})
        elif message:
            self.b.add("user", [TextBlock(text=message)], key=f"{key}.summary", timestamp=stamp, tag="summary")

    def event(self, payload: dict[str, Any], loc: Loc) -> None:
        sub = payload.get("type")
        if sub == "token_count" and isinstance(payload.get("info"), dict):
            usage = openai_usage(payload["info"].get("last_token_usage"))
            if usage is not None:
                self.b.set_last_usage(usage)
        elif sub == "thread_rolled_back":
            self.rollback(payload.get("num_turns"), loc)
        elif sub == "thread_name_updated" and isinstance(payload.get("thread_name"), str) and payload["thread_name"]:
            self.meta.title = payload["thread_name"]
        self.notes.skip(f"event_msg:{_name(sub)}")

    def rollback(self, turns: Any, loc: Loc) -> None:
        """Drop the last ``turns`` user turns and what followed them, as Codex does on resume.

        Only turns after the last compaction boundary count; the context Codex
        injected just before a dropped turn goes with it, the context before
        the first turn stays.
        """
        if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
            return
        msgs = self.b.messages
        start = max((i + 1 for i, m in enumerate(msgs) if m.boundary is not None), default=0)
        starts = [i for i in range(start, len(msgs)) if _opens_turn(msgs[i])]
        if not starts:
            return
        cut = starts[0] if turns >= len(starts) else starts[-turns]
        while cut > starts[0] and msgs[cut - 1].role == "system" and msgs[cut - 1].tag is None and msgs[cut - 1].boundary is None:
            cut -= 1
        removed = len(msgs) - cut
        del msgs[cut:]
        self.b.close_results()
        self.rolled_back = True
        self.notes.dropped.append(f"{loc.where}: thread rollback of {turns} turn(s) removed {removed} message(s)")

    # -- result -------------------------------------------------------------------
    def finish(self, records: int) -> Transcript:
        self.notes.records_read = records
        messages = self.b.finish()
        if self.rolled_back:
            # Calls a rollback removed are not unanswered: they are gone.
            present = {b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
            self.notes.unanswered_tool_uses = [i for i in self.notes.unanswered_tool_uses if i in present]
        if self.models:
            self.meta.model = self.models[0]
            if len(self.models) > 1:
                self.notes.warnings.append(f"the model changed during the session: {' -> '.join(self.models)}")
        if self.agent_messages:
            self.notes.warnings.append(f"kept {self.agent_messages} message(s) from other Codex agents as user messages")
        if self.injected:
            self.notes.warnings.append(
                f"kept {self.injected} message(s) Codex injected as user input (environment context, AGENTS.md, ...) as system messages"
            )
        return Transcript(meta=self.meta, messages=messages, notes=self.notes)


def read_rollout(path: Path) -> Transcript:
    """Import a Codex CLI rollout, current or older (see the module docstring)."""
    file = str(path)
    reader = _Reader(file)
    n = 0
    with gc_paused():
        # A rollout of a session still running may end in a line cut off mid-write: the reader
        # stops before it with a warning in the notes.
        for lineno, rec in iter_jsonl(path, notes=reader.notes):
            n += 1
            loc = Loc(file, "$", lineno)
            reader.record(need_dict(rec, loc, "record"), loc, f"l{lineno}", n == 1)
        return reader.finish(n)
