"""Claude Code entries to canonical messages: one pass over a session's entries.

``EntryImporter.add`` takes the entries one at a time, in file order (or, on a
second pass, in the order a ``Plan`` gives), as ``claude_code_entry.Entry``
Structs or as dicts (made into one), and ``finish`` returns the transcript.
What each entry kind becomes is described in ``claude_code``; this module is
the machinery. The first pass also records every entry's place in
the uuid tree (``claude_code_chain``) and notices, while reading, whether the
file is its own conversation: then no second pass is needed.

Import speed (target: no slower than ``json.loads`` of its lines): a message
is assembled as the dict of its fields, with blocks as the checked dicts
``block_dicts`` returns, and is built as soon as no later entry can change it.
Every value is checked where it is read (``block_dicts``, ``usage_fields``,
``parse_ts``; ids are strings, roles and tags come from this code), so the
models are built with ``trusted``, without a second validation (a text block:
about 2.6 us against 5 us validated, on the bench machine). A type test per
block field guards that build; a row that fails it is validated in full,
which names the message, as an importer bug must be. Timestamps and usage are
converted once per message, and ``add`` does as little per line as it can.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from pydantic import ValidationError

from ..core.messages import Block, ImageBlock, ImportNotes, Message, MessageTag, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, TranscriptMeta, Usage
from ..errors import TranscriptError
from ._build import parts_text
from .anthropic_blocks import COST_KEY, block_dicts, usage_fields
from .claude_code_chain import ASSISTANT, BOUNDARY, OTHER, PREV, RESULTS, USER, ChainIndex, Plan
from .claude_code_content import harness_text, native_content
from .claude_code_entry import UNSET, ApiMessage, Entry, ToolUseResult, entry_of
from .claude_code_thread import Row, ThreadRows, ToolIds, parse_ts

__all__ = ["EntryImporter"]

_MAIN = ""
_TITLES = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
_fromisoformat = datetime.fromisoformat
# The message's own validator skips the Python wrapper of model_validate (the checked fallback).
_validate_message = Message.__pydantic_validator__.validate_python
_message_of = Message.trusted
_usage_of = Usage.trusted
_text_of = TextBlock.trusted
_tool_use_of = ToolUseBlock.trusted
_tool_result_of = ToolResultBlock.trusted
_thinking_of = ThinkingBlock.trusted


class _Unchecked(Exception):
    """A block value is not of its field's type: only an importer bug gets here (see ``_message``)."""


# The model of each block kind ``block_dicts`` gives. A type test per field, and the exact number
# of keys (``extra="forbid"``), guard the trusted build: an importer bug must never become a model
# holding a value of the wrong type; such a row takes the full validation, which names it.
def _text(b: dict[str, Any]) -> TextBlock:
    if type(b["text"]) is str and len(b) == 2:
        return _text_of(b)
    raise _Unchecked


def _tool_use(b: dict[str, Any]) -> ToolUseBlock:
    if type(b["id"]) is str and type(b["name"]) is str and type(b["input"]) is dict and len(b) == 4:
        return _tool_use_of(b)
    raise _Unchecked


def _tool_result(b: dict[str, Any]) -> ToolResultBlock:
    if type(b["tool_use_id"]) is str and type(b["content"]) is str and type(b["is_error"]) is bool and len(b) == 4:
        return _tool_result_of(b)
    raise _Unchecked


def _thinking(b: dict[str, Any]) -> ThinkingBlock:
    sig = b["signature"]
    if type(b["thinking"]) is str and (sig is None or type(sig) is str) and len(b) == 3:
        return _thinking_of(b)
    raise _Unchecked


_BLOCKS: dict[str, Callable[[dict[str, Any]], Block]] = {
    "text": _text,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    "thinking": _thinking,
    # Rare (images are pasted, not written by tools): validated in full.
    "image": ImageBlock.model_validate,
}


class EntryImporter:
    """One pass over the entries: ``add`` each, then ``finish``.

    Without a ``plan`` this is a first pass: it records the chain, and ``chain_plan``
    says afterwards whether a second pass, given that plan, must read the entries again.
    """

    def __init__(self, file: str, plan: Plan | None = None) -> None:
        self.file = file
        self.notes = ImportNotes()
        self.threads: dict[str, ThreadRows] = {_MAIN: ThreadRows(sink=self._main_row)}
        self.entry_thread: dict[str, str] = {}
        self.meta = TranscriptMeta(source_format="claude_code", source_path=file)
        # Until an entry names the session: after that, no line looks at sessionId again.
        self.need_session = True
        self.chain = ChainIndex(self.entry_thread) if plan is None else None
        # Entries whose parent is neither the entry recorded just before nor, for a tool result, a line
        # of the API message it answers: without any, the file is its own conversation (chain_plan).
        self.jumps = 0
        self.last_uuid: str | None = None
        # The lines of the assistant message being answered, and its API id.
        self.turn: set[str] = set()
        self.turn_api: Any = None
        self.plan = plan
        # Entries the plan puts in another order than the file's, fed to their threads at the end.
        self.held: dict[str, tuple[str, Entry, str]] = {}
        self.held_ids = {u for ids in plan.order.values() for u in ids} if plan is not None else set()
        # Kept here, not in the pydantic notes, whose attribute assignment costs a Python call per entry.
        self.records_read = 0
        self.counts = {"meta": 0, "harness": 0}
        self.cwd: dict[str, str] = {}
        self.titles: dict[str, str] = {}
        # agentId -> id of the main thread's tool_use whose result names that subagent.
        self.agent_calls: dict[str, str] = {}
        # Message ids in use: the main thread's, in order, then each sidechain's (built at the end).
        self.seen: set[str] = set()
        self.main: list[Message] = []
        self.main_ids = ToolIds()

    # -- messages ------------------------------------------------------------------

    def _message(self, row: Row, ids: ToolIds) -> Message:
        """Validate a final row: its id made unique, its timestamp and usage converted."""
        base = mid = row["id"]
        n = 2
        while mid in self.seen:
            mid = f"{base}#{n}"
            n += 1
        self.seen.add(mid)
        row["id"] = mid
        ts = row["timestamp"]
        if type(ts) is str:
            # parse_ts's first step, inlined (once per message); anything it refuses takes parse_ts.
            try:
                row["timestamp"] = _fromisoformat(ts)
            except ValueError:
                row["timestamp"] = parse_ts(ts)
        else:
            row["timestamp"] = parse_ts(ts)
        usage = row["usage"]
        if usage is not None:
            fields = usage_fields(usage)
            row["usage"] = None if fields is None else _usage_of(fields)
        content = row["content"]
        ids.scan(content)
        blocks = _BLOCKS
        try:
            row["content"] = tuple([blocks[b["type"]](b) for b in content])
        except (_Unchecked, KeyError, TypeError):
            return self._validated(row)
        return _message_of(row)

    def _validated(self, row: Row) -> Message:
        """A row whose blocks failed the type tests, validated in full: the message, or the error naming it."""
        try:
            return _validate_message(row)
        except ValidationError as exc:
            # The values were checked while reading, so this is an importer bug; still say where.
            first = exc.errors()[0]
            raise TranscriptError(
                f"message {row['id']} failed validation: {first['msg']}", file=self.file, where=f"message {row['id']}", expected="a valid message"
            ) from exc

    def _main_row(self, row: Row) -> None:
        self.main.append(self._message(row, self.main_ids))

    # -- threads -------------------------------------------------------------------

    def _thread(self, key: str) -> ThreadRows:
        thread = self.threads.get(key)
        if thread is None:
            # Keys name what they were made from, so a second pass rebuilds a thread from its key alone.
            agent = key[len("agent:") :] if key.startswith("agent:") else None
            root = key[len("root:") :] if key.startswith("root:") else ""
            thread = self.threads[key] = ThreadRows(agent_id=agent, root_id=root)
        return thread

    def _sidechain_key(self, entry: Entry, entry_id: str) -> str:
        agent = entry.agentId
        if isinstance(agent, str) and agent:
            key = f"agent:{agent}"
            if key not in self.threads:
                self.threads[key] = ThreadRows(agent_id=agent, root_id=entry_id)
            return key
        parent = entry.parentUuid
        inherited = self.entry_thread.get(parent) if isinstance(parent, str) else None
        if inherited:
            return inherited
        key = f"root:{entry_id}"
        self._thread(key)
        return key

    # -- entries -------------------------------------------------------------------

    def add(self, entry: Entry | dict[str, Any], where: str) -> None:
        # This runs once per line of the file: attributes used more than once are read once,
        # and the chain gets one tuple (``ChainIndex.links``).
        if isinstance(entry, dict):
            entry = entry_of(entry)
        self.records_read += 1
        uuid = entry.uuid
        entry_thread = self.entry_thread
        if type(uuid) is not str or not uuid:
            uuid = None
        elif uuid in entry_thread:
            self.notes.skip("duplicate")
            return
        entry_id = uuid if uuid is not None else where.replace(" ", "")
        plan = self.plan
        key = plan.keys.get(uuid) if plan is not None and uuid is not None else None
        if key is None:
            key = _MAIN if entry.isSidechain is not True else self._sidechain_key(entry, entry_id)
        elif key not in self.threads:
            self._thread(key)
        if uuid is not None:
            entry_thread[uuid] = key
            if plan is not None:
                if uuid in plan.drop:
                    self.notes.skip("abandoned_branch")
                    return
                if uuid in self.held_ids:
                    self.held[uuid] = (where, entry, key)
                    return
        if self.need_session:
            session = entry.sessionId
            if isinstance(session, str):
                self.meta.session_id = session
                self.need_session = False
        made = self._entry(entry, where, entry_id, key)
        chain = self.chain
        if chain is not None and uuid is not None:
            self._link(chain, entry, uuid, made)

    def _link(self, chain: ChainIndex, entry: Entry, uuid: str, made: int) -> None:
        """Record the entry's place in the ``parentUuid`` chain, and count jumps away from the previous line."""
        parent = entry.parentUuid
        if type(parent) is not str or not parent:
            parent = self._unlinked_parent(entry, made)
        # A tool result naming a line of the API message it answers is the parallel-call fork
        # every 2.x session has (the EnterpriseBench corpus session), not a branch.
        if parent != self.last_uuid and not (made == RESULTS and parent in self.turn):
            self.jumps += 1
        api_id = None
        if made == ASSISTANT:
            # An assistant entry makes a message only from an object ``message``.
            api_id = cast(ApiMessage, entry.message).id
            if type(api_id) is not str:
                # As the thread reads it: an id that is no string joins nothing (and keys no table).
                api_id = None
            if api_id != self.turn_api:
                self.turn_api = api_id
                self.turn.clear()
            self.turn.add(uuid)
        elif made != OTHER and made != RESULTS and self.turn:
            self.turn_api = None
            self.turn.clear()
        chain.links.append((uuid, parent, made, api_id))
        self.last_uuid = uuid

    @staticmethod
    def _unlinked_parent(entry: Entry, made: int) -> str | None:
        """The parent of an entry whose ``parentUuid`` is null: a compaction's logical parent, or none."""
        logical = entry.logicalParentUuid
        if isinstance(logical, str) and logical:
            return logical
        return PREV if made == BOUNDARY or entry.isCompactSummary is True else None

    def _entry(self, entry: Entry, where: str, entry_id: str, key: str) -> int:
        """Turn one entry into rows of its thread; returns what it made, for the chain."""
        cwd = entry.cwd
        if type(cwd) is str:
            self.cwd[key] = cwd
        kind = entry.type
        if kind == "assistant":
            return self._assistant(entry, where, entry_id, key)
        if kind == "user":
            return self._user(entry, where, entry_id, key)
        return self._other(entry, kind, entry_id, key)

    def _other(self, entry: Entry, kind: Any, entry_id: str, key: str) -> int:
        if kind == "system":
            return self._system(entry, entry_id, key)
        if isinstance(kind, str) and kind in _TITLES:
            title = getattr(entry, _TITLES[kind])
            # Claude Code rewrites its titles as a session goes on; an old-style summary is set once.
            if isinstance(title, str) and title and (kind != "summary" or kind not in self.titles):
                self.titles[kind] = title
        self.notes.skip(kind if isinstance(kind, str) and kind else "unknown")
        return OTHER

    def _assistant(self, entry: Entry, where: str, entry_id: str, key: str) -> int:
        message = entry.message
        if type(message) is not ApiMessage:
            self.notes.skip("assistant:no_message")
            return OTHER
        if entry.isApiErrorMessage is True:
            self.notes.skip("api_error_message")
            return OTHER
        blocks = block_dicts(native_content(message.content), self.notes, where)
        if self.meta.model is None:
            model = message.model
            if isinstance(model, str) and model != "<synthetic>":
                self.meta.model = model
        if not blocks:
            self.notes.skip("empty_message")
            return OTHER
        api_id = message.id
        usage = message.usage
        cost = entry.costUSD
        if cost is not None and isinstance(usage, dict):
            # Some Claude Code versions write the request's cost on the entry (costUSD): it travels with the usage.
            usage[COST_KEY] = cost
        self.threads[key].add_assistant(
            blocks, entry_id, api_id if isinstance(api_id, str) else None, entry.timestamp, usage if isinstance(usage, dict) else None
        )
        return ASSISTANT

    def _user(self, entry: Entry, where: str, entry_id: str, key: str) -> int:
        message = entry.message
        if type(message) is not ApiMessage:
            self.notes.skip("user:no_message")
            return OTHER
        content = native_content(message.content)
        blocks = block_dicts(content, self.notes, where)
        thread = self.threads[key]
        if key != _MAIN and not thread.rows_made and thread.root_text is None:
            thread.root_text = parts_text(content).strip()
        if not blocks:
            self.notes.skip("empty_message")
            return OTHER
        ts = entry.timestamp
        if entry.isCompactSummary is True:
            thread.add_boundary(entry_id, ts, "import", 0)
            thread.add_user(blocks, entry_id, ts, tag="summary")
            return USER
        result = entry.toolUseResult
        if type(result) is ToolUseResult and result.agentId is not UNSET:
            self._link_agent(result.agentId, blocks, key)
        tag: MessageTag | None = None
        if entry.isMeta is True:
            self.counts["meta"] += 1
            tag = None if any(b["type"] == "tool_result" for b in blocks) else "placeholder"
        elif blocks[0]["type"] == "text" and harness_text(blocks):
            self.counts["harness"] += 1
            tag = "placeholder"
        return RESULTS if thread.add_user(blocks, entry_id, ts, tag) else USER

    def _link_agent(self, agent: Any, blocks: list[dict[str, Any]], key: str) -> None:
        # Claude Code 2.x names the subagent a Task/Agent call ran in its result's toolUseResult.
        if key == _MAIN and isinstance(agent, str) and blocks[0]["type"] == "tool_result":
            self.agent_calls.setdefault(agent, blocks[0]["tool_use_id"])

    def _system(self, entry: Entry, entry_id: str, key: str) -> int:
        """Compaction boundaries and local command output make messages; other subtypes are counted."""
        subtype = entry.subtype
        ts = entry.timestamp
        if subtype == "compact_boundary":
            raw = entry.compactMetadata
            meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
            pre = meta.get("preTokens")
            trigger = meta.get("trigger")
            self.threads[key].add_boundary(entry_id, ts, trigger if isinstance(trigger, str) else "import", pre if type(pre) is int and pre >= 0 else 0)
            return BOUNDARY
        text = entry.content
        if subtype == "local_command" and isinstance(text, str) and text.strip():
            # Claude Code's normalizeMessagesForAPI sends local_command system messages as user
            # messages and drops every other system subtype (as public ports of it show).
            self.counts["harness"] += 1
            self.threads[key].add_user([{"type": "text", "text": text}], entry_id, ts, tag="placeholder")
            return USER
        self.notes.skip(f"system:{subtype}" if isinstance(subtype, str) and subtype else "system")
        return OTHER

    # -- the end -------------------------------------------------------------------

    def _sidechain_names(self, keys: list[str]) -> dict[str, str]:
        """Final names of the sidechain threads: the Task tool_use that started each, when found."""
        used: set[str] = set()
        names: dict[str, str] = {}
        prompts = self.main_ids.prompts
        for key in keys:
            thread = self.threads[key]
            call = self.agent_calls.get(thread.agent_id) if thread.agent_id else None
            if call is None or call in used or call not in self.main_ids.uses:
                call = next((tid for text, tid in prompts if tid not in used and text and text == thread.root_text), None)
            if call is not None:
                used.add(call)
                names[key] = call
            else:
                names[key] = thread.agent_id or thread.root_id
        return names

    def chain_plan(self) -> Plan:
        """After a first pass: what a second one must change (nothing when the file is its own chain)."""
        if self.chain is None or not self.jumps:
            return Plan()
        return self.chain.plan()

    def finish(self, plan: Plan | None = None) -> Transcript:
        if self.records_read == 0:
            raise TranscriptError("no entries", file=self.file, expected="Claude Code session entries")
        if self.plan is not None:
            for ids in self.plan.order.values():
                for uuid in ids:
                    if uuid in self.held:
                        where, entry, key = self.held.pop(uuid)
                        self._entry(entry, where, uuid, key)
        # The uuid index (a few MB per 100 MB of file) has done its work: freed before the last
        # messages are built, which is where an import's memory peaks.
        self.entry_thread = {}
        self.chain = None
        notes = self.notes
        notes.records_read = self.records_read
        self.threads[_MAIN].close()
        side = [k for k in self.threads if k != _MAIN]
        main_key = _MAIN
        if not self.main and side:
            # A subagent's own file: its thread is the session.
            main_key = max(side, key=lambda k: len(self.threads[k].done) + len(self.threads[k].open_rows))
            side.remove(main_key)
            thread = self.threads[main_key]
            thread.close()
            self.main = [self._message(row, self.main_ids) for row in thread.done]
            notes.warnings.append(f"no main-thread entries: the subagent thread {thread.agent_id or thread.root_id} is the session")
        self.main_ids.flag(notes, "main thread")
        sidechains: dict[str, list[Message]] = {}
        for key, name in self._sidechain_names(side).items():
            thread = self.threads[key]
            thread.close()
            thread_ids = ToolIds()
            msgs = [self._message(row, thread_ids) for row in thread.done]
            if msgs:
                sidechains[name] = msgs
                thread_ids.flag(notes, f"sidechain {name}")
        self._finish_notes(plan or self.plan)
        meta = self.meta
        meta.cwd = self.cwd.get(main_key)
        meta.title = self.titles.get("custom-title") or self.titles.get("ai-title") or self.titles.get("summary")
        if not self.main and not sidechains:
            notes.warnings.append("no user or assistant entries")
        return Transcript(meta=meta, messages=self.main, sidechains=sidechains, notes=notes)

    def _finish_notes(self, plan: Plan | None) -> None:
        notes = self.notes
        if plan is not None:
            dropped = notes.skipped.get("abandoned_branch", 0)
            if dropped:
                notes.warnings.append(f"skipped {dropped} entries of {plan.branches} branch(es) off the chain that ends at the last message")
            if plan.broken_links:
                notes.warnings.append(f"{plan.broken_links} parentUuid link(s) name entries not in the file: the chain went on with the line before")
            if plan.order:
                notes.warnings.append(f"{len(plan.order)} thread(s) put back in parentUuid order (the file wrote some entries before their parents)")
        if self.counts["meta"]:
            notes.warnings.append(f"kept {self.counts['meta']} isMeta user entries (hidden in Claude Code's UI, sent to the model), tagged placeholder")
        if self.counts["harness"]:
            notes.warnings.append(f"tagged {self.counts['harness']} harness-written user entries (local commands, notices) placeholder")
