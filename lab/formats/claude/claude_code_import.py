"""Claude Code entries to canonical messages: one pass over a session's entries.

``EntryImporter.add`` takes the entries one at a time, in file order (or, on a
second pass, in the order a ``Plan`` gives), as ``claude_code_entry.Entry``
Structs or as dicts (made into one), and ``finish`` returns the transcript.
What each entry kind becomes is described in ``claude_code``; this module is
the machinery. The first pass also records every entry's place in
the uuid tree (``claude_code_chain``) and notices, while reading, whether the
file is its own conversation: then no second pass is needed.

Import speed (target: no slower than ``json.loads`` of its lines): each block
model is built once, when its entry is read, and a message is assembled as the
dict of its fields around those blocks and built soon after no later entry can
change it (``ThreadRows`` builds a few dozen at a time). Every value is checked
where it is read, so the models are built with ``trusted_builder``, without a
second validation:

- Content that decoded into Parts (``claude_code_entry``: the common blocks,
  typed and checked by msgspec in C) is made into blocks straight from them,
  with no per-key walking; that is most lines of every session.
- A string is one text block (none when empty), as ``block_dicts`` makes it.
- Any other content (other block kinds, fields of other types, a record read
  as a dict whose blocks no Part takes) goes to the general reader
  (``native_content``, ``block_dicts``), which knows every shape and gives the
  same blocks for the ones Parts hold. A type test per field guards the build
  of its dicts; a block that fails it is validated in full, which names the
  entry, as an importer bug must be.

Ids are strings, roles and tags come from this code, timestamps and usage are
converted once per message (``parse_ts``; a ``UsageCounts`` holds a ``Usage``'s
fields already), and ``add`` does as little per line as it can: a call for its
kind and one for its chain link, and no look-up in a table as large as the
session (``optimistic``; tool ids are appended to lists, read again only when a
call or a result is left unpaired, ``ToolIds``; message ids are made unique
only when one can repeat), so that the data a line touches is mostly the data
it just read: a session's tables, looked up line by line, missed the CPU's
caches on nearly every line.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from sys import intern
from typing import Any, cast

import msgspec
from pydantic import TypeAdapter, ValidationError

from ...core.messages import (
    Block,
    ImageBlock,
    ImportNotes,
    Message,
    MessageTag,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    TranscriptMeta,
    Usage,
)
from ...errors import TranscriptError
from ..history_builder import parts_text
from ..anthropic_blocks import COST_KEY, block_dicts, cost_usd, usage_fields
from .claude_code_chain import ASSISTANT, BOUNDARY, LINK, OTHER, PREV, RESULTS, USER, ChainIndex, Plan
from .claude_code_content import harness_text, native_content, result_text
from .claude_code_entry import PARTS, UNSET, ApiMessage, Attachment, Entry, TextPart, ToolResultPart, ToolUsePart, ToolUseResult, UsageCounts, entry_of
from .claude_code_thread import Blocks, Row, ThreadRows, ToolIds, parse_ts

__all__ = ["EntryImporter"]

_MAIN = ""
# Where an entry is: its line number in a JSONL file (the string made only when some message needs
# it, which few lines do), or the location a caller names (``$[3]``, ``line 7``).
Where = str | int
_TITLES = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
_fromisoformat = datetime.fromisoformat
_asdict = msgspec.structs.asdict
# Every field written out, in declaration order; the names are those validation counts as set.
_message_of = Message.trusted_builder("role", "content", "id", "timestamp", "usage", "tag", "boundary")
_usage_of = Usage.trusted_builder("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")
_text_of = TextBlock.trusted_builder("type", "text")
_tool_use_of = ToolUseBlock.trusted_builder("type", "id", "name", "input")
_tool_result_of = ToolResultBlock.trusted_builder("type", "tool_use_id", "content", "is_error")
_thinking_of = ThinkingBlock.trusted_builder("type", "thinking", "signature")
# The full validation of one block the type tests refused (the checked fallback).
_BLOCK: TypeAdapter[Block] = TypeAdapter(Block)
_validate_block = _BLOCK.validate_python


def _part_blocks(parts: list[Any], ids: ToolIds) -> Blocks:
    """The blocks of content decoded into Parts: what ``block_dicts(native_content(...))`` makes of the same
    blocks; their tool ids are appended to ``ids``, as ``ToolIds.scan`` reads them."""
    blocks: Blocks = []
    append = blocks.append
    for p in parts:
        kind = type(p)
        if kind is ToolUsePart:
            # Tool names are a handful of strings repeated by every call: one object each (see _build).
            name = intern(p.name)
            append(_tool_use_of({"type": "tool_use", "id": p.id, "name": name, "input": p.input}))
            ids.use(p.id, name, p.input)
        elif kind is ToolResultPart:
            tool_id = ids.result(p.tool_use_id)
            body = p.content
            append(
                _tool_result_of(
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": body if type(body) is str else result_text(body),
                        "is_error": p.is_error is True,
                        "compacted": None,
                        "spill_path": None,
                        "original_chars": None,
                    }
                )
            )
        elif kind is TextPart:
            # Empty text is dropped, as the API rejects it.
            if p.text:
                append(_text_of({"type": "text", "text": p.text}))
        else:
            append(_thinking_of({"type": "thinking", "thinking": p.thinking, "signature": p.signature}))
    return blocks


def _where(at: Where) -> str:
    return at if type(at) is str else f"line {at}"


def _root_text(content: Any) -> str:
    """``parts_text`` of an entry's content (Parts read as the dicts they came from): a sidechain's prompt."""
    if type(content) is list and content and type(content[0]) in PARTS:
        return "\n".join([p.text for p in content if type(p.text) is str]).strip()
    return parts_text(content).strip()


def _build(messages: list[Message], rows: list[Row]) -> list[Message]:
    """Build final rows onto ``messages``: timestamps and usage converted, blocks a tuple each.

    One loop for the rows: the per-message work is small enough that a call per message was a
    measurable share of it.

    A message whose timestamp or usage equals the one before it in the batch shares that one's
    object (both are immutable): the calls and results of one turn are often written in the same
    millisecond, and a session's usages are often all alike (a tiny session's are all zero). A
    ``datetime`` is 48 bytes and a ``Usage`` 136; for one-line messages the two were a sixth of
    the import's memory. Only the previous value is compared: no table as large as the session.
    """
    fromisoformat, message_of, usage_of, asdict = _fromisoformat, _message_of, _usage_of, _asdict
    append = messages.append
    last_ts: Any = None
    last_when: datetime | None = None
    last_counts: Any = None
    last_usage: Usage | None = None
    for row in rows:
        ts = row["timestamp"]
        if type(ts) is str:
            if ts == last_ts:
                row["timestamp"] = last_when
            else:
                # parse_ts's first step, inlined; anything it refuses takes parse_ts.
                try:
                    last_when = fromisoformat(ts)
                except ValueError:
                    last_when = parse_ts(ts)
                row["timestamp"] = last_when
                last_ts = ts
        else:
            row["timestamp"] = parse_ts(ts)
        usage = row["usage"]
        if usage is not None:
            # A UsageCounts holds the model's fields already; a dict is a usage that did not fit it.
            if type(usage) is UsageCounts:
                # Structs compare field by field, in C. A zero cost is never shared: 0.0 and -0.0
                # compare equal but dump apart.
                if usage != last_counts or usage.cost_usd == 0:
                    last_usage = usage_of(asdict(usage))
                    last_counts = usage
                row["usage"] = last_usage
            else:
                row["usage"] = usage_of(cast(dict[str, Any], usage_fields(usage)))
        row["content"] = tuple(row["content"])
        append(message_of(row))
    return messages


class _SideKeys(dict[str, str]):
    """An optimistic pass's uuid -> thread index, which holds sidechain entries only: any other uuid
    the chain recorded is the main thread's (``ChainIndex`` reads it as the full index)."""

    def __missing__(self, uuid: str) -> str:
        return _MAIN


class _Unchecked(Exception):
    """A block value is not of its field's type: only an importer bug gets here (see ``EntryImporter._blocks``)."""


# The model of each block kind ``block_dicts`` gives. A type test per field, and the exact number
# of keys (``extra="forbid"``), guard the trusted build: an importer bug must never become a model
# holding a value of the wrong type; such a block takes the full validation, which names its entry.
def _text(b: dict[str, Any]) -> TextBlock:
    if type(b["text"]) is str and len(b) == 2:
        return _text_of({"type": "text", "text": b["text"]})
    raise _Unchecked


def _tool_use(b: dict[str, Any]) -> ToolUseBlock:
    if type(b["id"]) is str and type(b["name"]) is str and type(b["input"]) is dict and len(b) == 4:
        return _tool_use_of({"type": "tool_use", "id": b["id"], "name": intern(b["name"]), "input": b["input"]})
    raise _Unchecked


def _tool_result(b: dict[str, Any]) -> ToolResultBlock:
    if type(b["tool_use_id"]) is str and type(b["content"]) is str and type(b["is_error"]) is bool and len(b) == 4:
        return _tool_result_of(
            {"type": "tool_result", "tool_use_id": b["tool_use_id"], "content": b["content"], "is_error": b["is_error"], "compacted": None, "spill_path": None, "original_chars": None}
        )
    raise _Unchecked


def _thinking(b: dict[str, Any]) -> ThinkingBlock:
    sig = b["signature"]
    if type(b["thinking"]) is str and (sig is None or type(sig) is str) and len(b) == 3:
        return _thinking_of({"type": "thinking", "thinking": b["thinking"], "signature": sig})
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

    ``optimistic`` (a first pass only) skips the per-line look-up of repeated uuids:
    the uuid index of a whole session, looked up and grown on every line, missed the
    CPU caches on nearly every line, a measurable share of a large import, and a
    repeated uuid is rare. Only sidechain entries are indexed (their threads are
    found through their parents); ``repeated_uuids`` says afterwards, in one set
    built in C, whether some uuid came twice, and then the result is not the one a
    checked pass gives: the caller reads the entries again without ``optimistic``.
    """

    def __init__(self, file: str, plan: Plan | None = None, *, optimistic: bool = False) -> None:
        self.file = file
        self.notes = ImportNotes()
        # Whether some message's id is not an entry's uuid (a line's place, a boundary's): only such an
        # id can repeat another, so only then are the ids made unique at the end (``_unique_ids``).
        self.odd_ids = False
        # Threads build their messages with ``_build``, a function: a bound method would make a
        # reference cycle, which kept a whole import's data alive until the next full collection.
        self.threads: dict[str, ThreadRows] = {_MAIN: ThreadRows(build=_build)}
        self.optimistic = optimistic = optimistic and plan is None
        self.entry_thread: dict[str, str] = _SideKeys() if optimistic else {}
        self.meta = TranscriptMeta(source_format="claude_code", source_path=file)
        # Until an entry names the session (and an assistant entry the model): after that, no line looks again.
        self.need_session = True
        self.need_model = True
        self.chain = ChainIndex(self.entry_thread) if plan is None else None
        # Where a first pass adds its chain links (bound once: once per line).
        self.link = self.chain.links.extend if self.chain is not None else None
        # ``repeated_uuids``, once asked.
        self.repeats: bool | None = None
        # Entries whose parent is neither the entry recorded just before nor, for a tool result, a line
        # of the API message it answers: without any, the file is its own conversation (chain_plan).
        self.jumps = 0
        self.last_uuid: str | None = None
        # The timestamp of the last link (``_link``).
        self.last_ts: Any = None
        # The lines of the assistant message being answered, and its API id.
        self.turn: set[str] = set()
        self.turn_api: Any = None
        self.plan = plan
        # Entries the plan puts in another order than the file's, fed to their threads at the end.
        self.held: dict[str, tuple[Where, Entry, str]] = {}
        self.held_ids = {u for ids in plan.order.values() for u in ids} if plan is not None else set()
        # Kept here, not in the pydantic notes, whose attribute assignment costs a Python call per entry.
        self.records_read = 0
        self.counts = {"meta": 0, "harness": 0, "queued": 0, "replaced": 0}
        self.cwd: dict[str, str] = {}
        self.titles: dict[str, str] = {}
        # agentId -> id of the main thread's tool_use whose result names that subagent.
        self.agent_calls: dict[str, str] = {}
        # Thread key -> how many entries went to that thread: subagent threads are no part of the main
        # context, and the notes say how much of the file they are.
        self.per_thread: dict[str, int] = {}

    # -- messages ------------------------------------------------------------------

    @staticmethod
    def _messages(thread: ThreadRows) -> list[Message]:
        """All the thread's messages: its last rows closed and built."""
        thread.release()
        thread.close()
        thread.flush()
        return thread.messages

    @staticmethod
    def _tool_ids(thread: ThreadRows, messages: list[Message]) -> ToolIds:
        """The thread's tool ids in message order: as read, or from its messages when reading put some out of it."""
        if thread.ids.ordered:
            return thread.ids
        ids = ToolIds()
        for message in messages:
            ids.scan(message.content)
        return ids

    def _unique_ids(self, threads: list[list[Message]]) -> None:
        """Give a repeated message id, in build order, the first free ``#2``, ``#3``..."""
        if not self.odd_ids:
            # Every id is an entry's uuid, and those are unique: a checked pass skips repeats, and
            # an optimistic one is not finished when some uuid came twice.
            return
        seen: set[str] = set()
        for messages in threads:
            for i, message in enumerate(messages):
                base = mid = message.id
                n = 2
                while mid in seen:
                    mid = f"{base}#{n}"
                    n += 1
                seen.add(mid)
                if mid != base:
                    messages[i] = message.model_copy(update={"id": mid})

    def _blocks(self, content: Any, where: Where, entry_id: str, ids: ToolIds) -> tuple[Blocks, Any]:
        """The blocks of an entry's content, their tool ids appended to ``ids``, and the content as ``parts_text``
        reads it (after ``native_content``). A list of Parts (the typed reader's) takes ``_part_blocks``."""
        if type(content) is list and content and type(content[0]) in PARTS:
            return _part_blocks(content, ids), content
        if type(content) is str:
            return ([_text_of({"type": "text", "text": content})] if content else []), content
        content = native_content(content)
        dicts = block_dicts(content, self.notes, _where(where))
        try:
            blocks = [_BLOCKS[b["type"]](b) for b in dicts]
        except (_Unchecked, KeyError, TypeError):
            blocks = self._validated(dicts, entry_id)
        ids.scan(blocks)
        return blocks, content

    def _validated(self, dicts: list[dict[str, Any]], entry_id: str) -> Blocks:
        """Blocks whose dicts failed the type tests, validated in full: the blocks, or the error naming their entry."""
        try:
            return [_validate_block(b) for b in dicts]
        except ValidationError as exc:
            # The values were checked while reading, so this is an importer bug; still say where.
            first = exc.errors()[0]
            raise TranscriptError(
                f"message {entry_id} failed validation: {first['msg']}", file=self.file, where=f"message {entry_id}", expected="a valid message"
            ) from exc

    # -- threads -------------------------------------------------------------------

    def _thread(self, key: str) -> ThreadRows:
        thread = self.threads.get(key)
        if thread is None:
            # Keys name what they were made from, so a second pass rebuilds a thread from its key alone.
            agent = key[len("agent:") :] if key.startswith("agent:") else None
            root = key[len("root:") :] if key.startswith("root:") else ""
            thread = self.threads[key] = ThreadRows(agent_id=agent, root_id=root, build=_build)
        return thread

    def _sidechain_key(self, entry: Entry, entry_id: str) -> str:
        agent = entry.agentId
        if isinstance(agent, str) and agent:
            key = f"agent:{agent}"
            if key not in self.threads:
                self.threads[key] = ThreadRows(agent_id=agent, root_id=entry_id, build=_build)
            return key
        parent = entry.parentUuid
        inherited = self.entry_thread.get(parent) if isinstance(parent, str) else None
        if inherited:
            return inherited
        key = f"root:{entry_id}"
        self._thread(key)
        return key

    # -- entries -------------------------------------------------------------------

    def add(self, entry: Entry | dict[str, Any], where: Where) -> None:
        # This runs once per line of the file: attributes used more than once are read once, the
        # entry kinds are told apart here, and the chain gets one link (``ChainIndex.links``).
        if isinstance(entry, dict):
            entry = entry_of(entry)
        self.records_read += 1
        if self.plan is not None:
            self._add_planned(entry, where)
            return
        uuid = entry.uuid
        if type(uuid) is str and uuid:
            entry_id = uuid
        else:
            uuid = None
            entry_id = _where(where).replace(" ", "")
            self.odd_ids = True
        if entry.isSidechain is not True:
            key = _MAIN
            # An optimistic pass indexes no main-thread entry (see the class doc).
            if uuid is not None and not self.optimistic and not self._index(uuid, key):
                return
        else:
            side = self._side_key(entry, uuid, entry_id)
            if side is None:
                return
            key = side
        if self.need_session:
            self._session(entry)
        made = self._entry(entry, where, entry_id, key)
        if uuid is not None:
            self._link(entry, uuid, made)

    def _index(self, uuid: str, key: str) -> bool:
        """Record the entry's thread; False (counted) when its uuid came before."""
        if uuid in self.entry_thread:
            self.notes.skip("duplicate")
            return False
        self.entry_thread[uuid] = key
        return True

    def _side_key(self, entry: Entry, uuid: str | None, entry_id: str) -> str | None:
        """A first pass's sidechain entry: its thread, indexed (its children find it so); None for a repeat."""
        if uuid is not None and not self.optimistic and uuid in self.entry_thread:
            self.notes.skip("duplicate")
            return None
        key = self._sidechain_key(entry, entry_id)
        if uuid is not None:
            self.entry_thread[uuid] = key
        return key

    def _link(self, entry: Entry, uuid: str, made: int) -> None:
        """Record the entry's place in the ``parentUuid`` chain, and count jumps away from the previous line."""
        parent = entry.parentUuid
        last = self.last_uuid
        if type(parent) is str and parent:
            if parent == last:
                # The link keeps the previous line's uuid object, not this line's copy of it: the
                # links are held until the import ends, and the copies were a tenth of its peak.
                parent = last
            # A tool result naming a line of the API message it answers is the parallel-call fork
            # every 2.x session has (the EnterpriseBench corpus session), not a branch.
            elif not (made == RESULTS and parent in self.turn):
                self.jumps += 1
        else:
            parent = self._unlinked_parent(entry, made)
            if parent != last and not (made == RESULTS and parent in self.turn):
                self.jumps += 1
        api_id = None
        if made == ASSISTANT:
            # An assistant entry makes a message only from an object ``message``.
            api_id = entry.message.id  # type: ignore[union-attr]
            if type(api_id) is not str:
                # As the thread reads it: an id that is no string joins nothing (and keys no table).
                api_id = None
            if api_id != self.turn_api:
                self.turn_api = api_id
                self.turn.clear()
            else:
                # The entries of one API message (one per block) link to one copy of its id.
                api_id = self.turn_api
            self.turn.add(uuid)
        elif made != OTHER and made != RESULTS and self.turn:
            self.turn_api = None
            self.turn.clear()
        ts = entry.timestamp
        if ts == self.last_ts and type(ts) is str:
            # Likewise one object for a run of equal timestamps (a turn's calls and results).
            ts = self.last_ts
        else:
            self.last_ts = ts
        self.link((uuid, parent, made, api_id, ts))  # type: ignore[misc]
        self.last_uuid = uuid

    def _add_planned(self, entry: Entry, where: Where) -> None:
        """``add`` on a second pass: the plan's thread, drops and order; the chain is known already."""
        plan = cast(Plan, self.plan)
        uuid = entry.uuid
        entry_thread = self.entry_thread
        if type(uuid) is not str or not uuid:
            uuid = None
        elif uuid in entry_thread:
            self.notes.skip("duplicate")
            return
        if uuid is not None:
            entry_id = uuid
        else:
            entry_id = _where(where).replace(" ", "")
            self.odd_ids = True
        key = plan.keys.get(uuid) if uuid is not None else None
        if key is None:
            key = _MAIN if entry.isSidechain is not True else self._sidechain_key(entry, entry_id)
        elif key not in self.threads:
            self._thread(key)
        if uuid is not None:
            entry_thread[uuid] = key
            if uuid in plan.drop:
                self.notes.skip("abandoned_branch")
                return
            if uuid in self.held_ids:
                self.held[uuid] = (where, entry, key)
                return
        self._session(entry)
        self._entry(entry, where, entry_id, key)

    def _session(self, entry: Entry) -> None:
        if self.need_session:
            session = entry.sessionId
            if isinstance(session, str):
                self.meta.session_id = session
                self.need_session = False

    @staticmethod
    def _unlinked_parent(entry: Entry, made: int) -> str | None:
        """The parent of an entry whose ``parentUuid`` is null: a compaction's logical parent, or none."""
        logical = entry.logicalParentUuid
        if isinstance(logical, str) and logical:
            return logical
        return PREV if made == BOUNDARY or entry.isCompactSummary is True else None

    def _entry(self, entry: Entry, where: Where, entry_id: str, key: str) -> int:
        """Turn one entry into rows of its thread; returns what it made, for the chain."""
        if key != _MAIN:
            self.per_thread[key] = self.per_thread.get(key, 0) + 1
        cwd = entry.cwd
        if type(cwd) is str:
            self.cwd[key] = cwd
        kind = entry.type
        if kind == "assistant":
            return self._assistant(entry, where, entry_id, key)
        if kind == "user":
            return self._user(entry, where, entry_id, key)
        return self._other(entry, kind, where, entry_id, key)

    def _other(self, entry: Entry, kind: Any, where: Where, entry_id: str, key: str) -> int:
        if kind == "system":
            return self._system(entry, entry_id, key)
        if kind == "attachment":
            attachment = entry.attachment
            if type(attachment) is Attachment and attachment.type == "queued_command":
                return self._queued(attachment, entry, where, entry_id, key)
        if kind == "content-replacement" and type(entry.replacements) is list:
            self.counts["replaced"] += sum(1 for r in entry.replacements if isinstance(r, dict) and r.get("kind") == "tool-result")
        if isinstance(kind, str) and kind in _TITLES:
            title = getattr(entry, _TITLES[kind])
            # Claude Code rewrites its titles as a session goes on; an old-style summary is set once.
            if isinstance(title, str) and title and (kind != "summary" or kind not in self.titles):
                self.titles[kind] = title
        self.notes.skip(kind if isinstance(kind, str) and kind else "unknown")
        return OTHER

    def _assistant(self, entry: Entry, where: Where, entry_id: str, key: str) -> int:
        message = entry.message
        if type(message) is not ApiMessage:
            self.notes.skip("assistant:no_message")
            return OTHER
        if entry.isApiErrorMessage is True:
            self.notes.skip("api_error_message")
            return OTHER
        content = message.content
        thread = self.threads[key]
        blocks = self._blocks(content, where, entry_id, thread.ids)[0]
        if self.need_model:
            model = message.model
            if isinstance(model, str) and model != "<synthetic>":
                self.meta.model = model
                self.need_model = False
        if not blocks:
            self.notes.skip("empty_message")
            return OTHER
        api_id = message.id
        usage = message.usage
        cost = entry.costUSD
        # Some Claude Code versions write the request's cost on the entry (costUSD): it travels with the usage.
        if type(usage) is UsageCounts:
            if cost is not None:
                usage.cost_usd = cost_usd(cost)
        elif type(usage) is dict:
            if cost is not None:
                usage[COST_KEY] = cost
        else:
            usage = None
        thread.add_assistant(blocks, entry_id, api_id if type(api_id) is str else None, entry.timestamp, usage)
        return ASSISTANT

    def _user(self, entry: Entry, where: Where, entry_id: str, key: str) -> int:
        message = entry.message
        if type(message) is not ApiMessage:
            self.notes.skip("user:no_message")
            return OTHER
        content = message.content
        thread = self.threads[key]
        blocks, content = self._blocks(content, where, entry_id, thread.ids)
        if key != _MAIN and not thread.rows_made and thread.root_text is None:
            thread.root_text = _root_text(content)
        if not blocks:
            self.notes.skip("empty_message")
            return OTHER
        ts = entry.timestamp
        if entry.isCompactSummary is True:
            self.odd_ids = True
            thread.add_boundary(entry_id, ts, "import", 0)
            thread.add_user(blocks, entry_id, ts, tag="summary")
            return USER
        result = entry.toolUseResult
        if type(result) is ToolUseResult and result.agentId is not UNSET:
            self._link_agent(result.agentId, blocks, key)
        tag: MessageTag | None = None
        if entry.isMeta is True:
            self.counts["meta"] += 1
            tag = None if any(type(b) is ToolResultBlock for b in blocks) else "placeholder"
        elif type(blocks[0]) is TextBlock and harness_text(blocks):
            self.counts["harness"] += 1
            tag = "placeholder"
        return RESULTS if thread.add_user(blocks, entry_id, ts, tag) else USER

    def _queued(self, attachment: Attachment, entry: Entry, where: Where, entry_id: str, key: str) -> int:
        """A message sent while the agent worked: Claude Code 2.1 writes no user entry for one it took in mid-turn."""
        thread = self.threads[key]
        blocks = self._blocks(attachment.prompt, where, entry_id, thread.ids)[0]
        if not blocks:
            self.notes.skip("attachment:queued_command")
            return OTHER
        origin = attachment.origin
        kind = origin.get("kind") if isinstance(origin, dict) else None
        # A person typed it (origin human; older lines name no origin, only the prompt mode), unless
        # it is harness text: task notifications and other producers' messages are Claude Code's.
        human = kind == "human" or (kind is None and attachment.commandMode in (None, "prompt"))
        tag: MessageTag | None = None
        if not human or (type(blocks[0]) is TextBlock and harness_text(blocks)):
            self.counts["harness"] += 1
            tag = "placeholder"
        self.counts["queued"] += 1
        thread.add_queued(blocks, entry_id, entry.timestamp, tag)
        # For the chain it is part of the turn, as a tool result is: written before the results of its
        # turn it forks off the call line beside them, and is kept as they are.
        return RESULTS

    def _link_agent(self, agent: Any, blocks: Blocks, key: str) -> None:
        # Claude Code 2.x names the subagent a Task/Agent call ran in its result's toolUseResult.
        first = blocks[0]
        if key == _MAIN and isinstance(agent, str) and type(first) is ToolResultBlock:
            self.agent_calls.setdefault(agent, first.tool_use_id)

    def _system(self, entry: Entry, entry_id: str, key: str) -> int:
        """Compaction boundaries and local command output make messages; other subtypes are counted."""
        subtype = entry.subtype
        ts = entry.timestamp
        if subtype == "compact_boundary":
            raw = entry.compactMetadata
            meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
            pre = meta.get("preTokens")
            trigger = meta.get("trigger")
            preserved = self._preserved(meta.get("preservedSegment"), entry_id)
            self.odd_ids = True
            self.threads[key].add_boundary(
                entry_id, ts, trigger if isinstance(trigger, str) else "import", pre if type(pre) is int and pre >= 0 else 0, preserved=preserved
            )
            return BOUNDARY
        text = entry.content
        if subtype == "local_command" and isinstance(text, str) and text.strip():
            # Claude Code's normalizeMessagesForAPI sends local_command system messages as user
            # messages and drops every other system subtype (as public ports of it show).
            self.counts["harness"] += 1
            self.threads[key].add_user([_text_of({"type": "text", "text": text})], entry_id, ts, tag="placeholder")
            return USER
        self.notes.skip(f"system:{subtype}" if isinstance(subtype, str) and subtype else "system")
        return OTHER

    def _preserved(self, segment: Any, entry_id: str) -> tuple[str | None, str | None]:
        """The first and last message a compaction kept verbatim; a first pass hands the segment to the chain."""
        if not isinstance(segment, dict):
            return None, None
        head, anchor, tail = segment.get("headUuid"), segment.get("anchorUuid"), segment.get("tailUuid")
        if not isinstance(head, str) or not head:
            return None, None
        if self.chain is not None:
            self.chain.segments.append((entry_id, head, anchor if isinstance(anchor, str) else entry_id))
            # The kept messages come before the boundary in the file: never the file's own order.
            self.jumps += 1
        return head, tail if isinstance(tail, str) and tail else None

    # -- the end -------------------------------------------------------------------

    def _sidechain_names(self, keys: list[str], main_ids: ToolIds) -> dict[str, str]:
        """Final names of the sidechain threads: the Task tool_use that started each, when found."""
        used: set[str] = set()
        names: dict[str, str] = {}
        if not keys:
            return names
        prompts = main_ids.prompts
        uses = set(main_ids.uses)
        for key in keys:
            thread = self.threads[key]
            call = self.agent_calls.get(thread.agent_id) if thread.agent_id else None
            if call is None or call in used or call not in uses:
                call = next((tid for text, tid in prompts if tid not in used and text and text == thread.root_text), None)
            if call is not None:
                used.add(call)
                names[key] = call
            else:
                names[key] = thread.agent_id or thread.root_id
        return names

    def repeated_uuids(self) -> bool:
        """After a first pass: whether some entry's uuid came twice (which an ``optimistic`` pass let through)."""
        if self.repeats is None:
            uuids = self.chain.links[0::LINK] if self.chain is not None else []
            if self.chain is not None and not self.jumps:
                # The file is its own chain: no plan will read the links (``chain_plan``). Freed before
                # the table below is built, at the import's peak (every message built by now).
                self.chain.links.clear()
            # A dict, not a set: its compact table is some 40% of a set's for as many strings.
            self.repeats = len(dict.fromkeys(uuids)) != len(uuids)
        return self.repeats

    def chain_plan(self) -> Plan:
        """After a first pass: what a second one must change (nothing when the file is its own chain)."""
        if self.chain is None or not self.jumps:
            return Plan()
        return self.chain.plan()

    def finish(self, plan: Plan | None = None) -> Transcript:
        if self.records_read == 0:
            raise TranscriptError("no entries", file=self.file, expected="Claude Code session entries")
        if self.optimistic and self.repeated_uuids():
            raise RuntimeError("an optimistic pass let a repeated uuid through: read the entries again without optimistic")
        if self.plan is not None:
            for ids in self.plan.order.values():
                for uuid in ids:
                    if uuid in self.held:
                        where, entry, key = self.held.pop(uuid)
                        self._entry(entry, where, uuid, key)
        # The uuid index (a few MB per 100 MB of file) has done its work: freed before the
        # messages are built, which is where an import's memory peaks.
        self.entry_thread = {}
        self.chain = None
        notes = self.notes
        notes.records_read = self.records_read
        main_key = _MAIN
        main = self._messages(self.threads[_MAIN])
        side = [k for k in self.threads if k != _MAIN]
        if not main and side:
            # A subagent's own file: its thread is the session.
            main_key = max(side, key=lambda k: self.threads[k].rows_made)
            side.remove(main_key)
            thread = self.threads[main_key]
            main = self._messages(thread)
            notes.warnings.append(f"no main-thread entries: the subagent thread {thread.agent_id or thread.root_id} is the session")
        main_ids = self._tool_ids(self.threads[main_key], main)
        main_ids.flag(notes, "main thread")
        sidechains: dict[str, list[Message]] = {}
        for key, name in self._sidechain_names(side, main_ids).items():
            thread = self.threads[key]
            msgs = self._messages(thread)
            if msgs:
                sidechains[name] = msgs
                self._tool_ids(thread, msgs).flag(notes, f"sidechain {name}")
        self._unique_ids([main, *sidechains.values()])
        self._side_note(side, len(sidechains))
        self._finish_notes(plan or self.plan)
        meta = self.meta
        meta.cwd = self.cwd.get(main_key)
        meta.title = self.titles.get("custom-title") or self.titles.get("ai-title") or self.titles.get("summary")
        if not main and not sidechains:
            notes.warnings.append("no user or assistant entries")
        # Every value is a model or container this importer built (see the module doc): validating the
        # transcript again would only walk every message to find it a Message.
        return Transcript.model_construct(meta=meta, messages=main, sidechains=sidechains, notes=notes)

    def _side_note(self, side: list[str], kept: int) -> None:
        """Say how many of the file's entries are subagents' (kept in ``Transcript.sidechains``, never replayed)."""
        records = sum(self.per_thread.get(k, 0) for k in side)
        threads = sum(1 for k in side if self.per_thread.get(k))
        if not records:
            return
        empty = threads - kept
        aside = f" ({empty} of them with no message)" if empty > 0 else ""
        self.notes.warnings.append(
            f"{records} sidechain records in {threads} subagent threads{aside}, not part of the main context: "
            "kept as the transcript's sidechains, never replayed; `python -m lab sessions FILE` lists the threads, --session ID reads one"
        )

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
        if self.counts["replaced"]:
            # The lab replays raw tool output (its spill stage does what Claude Code's result budget did).
            notes.warnings.append(
                f"{self.counts['replaced']} tool result(s) were sent to the model as a saved-to-disk preview (content-replacement); "
                "their full output is kept"
            )
        if self.counts["queued"]:
            notes.warnings.append(f"kept {self.counts['queued']} queued_command attachments (messages sent while the agent worked) as user messages")
        if self.counts["harness"]:
            notes.warnings.append(f"tagged {self.counts['harness']} harness-written user entries (local commands, notices) placeholder")
