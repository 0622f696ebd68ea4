"""Which Claude Code entries are the conversation, and in what order: the uuid/parentUuid tree.

Every entry with a ``uuid`` names its parent in ``parentUuid``; the entries of
one thread (the main thread, or one subagent) form a tree. The conversation is
the chain from the thread's last user or assistant entry back to its root;
``ChainIndex`` records each entry's place in that tree while the file streams
past, and ``plan`` says afterwards what a second pass has to change.

The rules, with the shapes they come from:

- Every entry type with a uuid is a link (``attachment``, ``progress`` and
  ``system`` entries sit inside the chain in Claude Code 2.x), but only user,
  assistant and boundary entries make messages.
- A ``compact_boundary`` has ``parentUuid: null`` and ``logicalParentUuid``
  naming the last entry before it; the chain follows that link. A compaction
  entry with neither (older versions) continues with the line before it.
- A compaction that kept recent messages verbatim (``compactMetadata.preservedSegment``:
  ``headUuid``, ``anchorUuid``, ``tailUuid``; Claude Code 2.1's partial and session-memory
  compaction) leaves them where they were written, before the boundary, and the messages after
  it name the tail as their parent. Claude Code relinks the head to the anchor (the summary, or
  the boundary) when it loads the file; so does the chain, and the boundary takes the head's old
  parent: the history the summary replaced, the boundary, the summary, the kept messages.
- A parent that is not in the file (Claude Code sometimes writes a uuid it
  never persists, anthropics/claude-code#22526, #58554) continues the chain
  with the line before, counted as a broken link: the model had seen that
  history when the session ran.
- A ``null`` parent anywhere else is a root: what is not on the chain from the
  last leaf is an abandoned branch (a prompt edited with /rewind, a retry) or
  an earlier, detached conversation, and is dropped.
- Parallel tool calls fork the tree without branching the conversation: each
  ``tool_result`` entry hangs off the assistant entry whose ``tool_use`` it
  answers (``sourceToolAssistantUUID``), so all but the last are off the chain
  (anthropics/claude-code#31330). Hook ``progress`` entries fork it the same
  way (#35024). An off-chain entry is kept when it hangs (through non-message
  entries) off a kept entry and is either a user entry of tool results only
  that no other prompt or API message follows, or an assistant entry of an API
  message the chain already holds.
- A file written out of order (its lines shuffled, or concatenated from pieces:
  some entry comes before its parent) has no "last line" to trust: the leaf is
  then the one Claude Code resumes, the newest (by ``timestamp``, then by line)
  of the message-making entries no other message hangs off, a parent not in
  the file ends the chain instead of continuing with the line before, and
  the messages come out in ``parentUuid`` order (``Plan.order``, which the
  importer's notes report). Before this, such a file kept only the chain that
  ended on its last line (16 of 48 messages) without a word.
- A file whose every entry names the one before it, or (a tool result) a line
  of the API message it answers, is its own conversation: the importer sees
  that while reading and never asks for a plan. So is a thread where no entry
  names another (hand-written entries, tools that leave ``parentUuid`` out):
  file order is all it has.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..history_builder import parse_timestamp

__all__ = ["LINK", "PREV", "OTHER", "USER", "RESULTS", "ASSISTANT", "BOUNDARY", "ChainIndex", "Plan"]

# Parent of a compaction entry that names none: the line before it, in the same thread.
PREV = "\0prev"

# What an entry is, as far as the chain cares. OTHER entries make no message.
OTHER, USER, RESULTS, ASSISTANT, BOUNDARY = range(5)

# The values one entry adds to ``ChainIndex.links``.
LINK = 5


@dataclass
class _Thread:
    # Uuids in file order.
    order: list[str] = field(default_factory=list)
    linear: bool = True
    # Whether any entry names a parent recorded in this thread: entries without links (hand-written,
    # or from tools that leave parentUuid out) have only their file order.
    linked: bool = False
    # The leaf: the last entry that makes a message (``ChainIndex._newest_leaf`` when out of order).
    leaf: str | None = None
    # Entries written before their parent (in the same thread): the file order is not the writer's.
    backward: int = 0


@dataclass
class Plan:
    """What the second pass changes: entries to drop, and threads whose messages come out of file order."""

    # Message-making entries off every thread's chain.
    drop: set[str] = field(default_factory=set)
    # Thread key -> uuids of its message-making entries, in conversation order (only threads whose
    # file order puts an entry before the one it answers).
    order: dict[str, list[str]] = field(default_factory=dict)
    # The thread each uuid was read into, so the second pass needs no parent to find it.
    keys: dict[str, str] = field(default_factory=dict)
    # Subtrees dropped (each a rewound prompt, a retried response, an earlier detached conversation).
    branches: int = 0
    # Parents named but not in the file, which the chain stepped over.
    broken_links: int = 0
    # Threads written out of order whose conversation ends elsewhere than at their last line.
    moved_leaves: int = 0

    @property
    def needed(self) -> bool:
        return bool(self.drop or self.order)


class ChainIndex:
    """The tree of each thread.

    The importer records every entry with a uuid, in file order, as the five
    values ``(uuid, parent, kind, api id, timestamp)`` added to the flat list
    ``links`` (``links.extend(...)``, ``LINK`` values an entry): one call is
    cheaper than the dict stores it replaces, and a file that is its own chain
    (the common case, seen while reading) never needs the dicts below. ``plan``
    builds them from ``links`` and reads them. Flat, not a tuple per entry:
    the links live until the import ends, where its memory peaks, and a tuple
    per entry took 80 bytes besides the 40 its values take in the list.
    """

    def __init__(self, keys: dict[str, str]) -> None:
        # uuid -> the thread it was read into (the importer's own map, shared).
        self.keys = keys
        # uuid, parent uuid / PREV / None, what the entry made, API message id or None, timestamp as
        # written: ``LINK`` values per entry, in file order.
        self.links: list[Any] = []
        # Built from ``links`` by ``plan``:
        # uuid -> parent uuid, PREV or None; its insertion order is the file order.
        self.parents: dict[str, str | None] = {}
        # uuid -> what the entry made (OTHER, USER, ...).
        self.kinds: dict[str, int] = {}
        # uuid -> API message id (None but for assistant entries).
        self.apis: dict[str, Any] = {}
        # uuid -> timestamp as written (read only for a thread written out of order).
        self.stamps: dict[str, Any] = {}
        # Heads of preserved segments, relinked to a later entry on purpose (not out of order).
        self.heads: set[str] = set()
        self.threads: dict[str, _Thread] = {}
        # Position of each uuid in its thread's file order.
        self.pos: dict[str, int] = {}
        # (boundary uuid, head uuid, anchor uuid) of each compaction that kept a preserved segment.
        self.segments: list[tuple[str, str, str]] = []

    def _index(self) -> None:
        links = self.links
        uuids = links[0::LINK]
        self.parents = dict(zip(uuids, links[1::LINK], strict=True))
        self.kinds = dict(zip(uuids, links[2::LINK], strict=True))
        self.apis = dict(zip(uuids, links[3::LINK], strict=True))
        if self.segments:
            self._relink()

    def _relink(self) -> None:
        """Put each preserved segment after its compaction's summary (see the module doc)."""
        parents = self.parents
        for boundary, head, anchor in self.segments:
            if boundary not in parents or head not in parents or head == boundary:
                continue
            if anchor == boundary or anchor not in parents:
                # Anchored on the boundary itself: after the summary that hangs off it, when one does.
                anchor = next((u for u, p in parents.items() if p == boundary and u != head), boundary)
            old = parents[head]
            parents[head] = anchor
            self.heads.add(head)
            parents[boundary] = None if old is PREV else old

    def _scan(self) -> None:
        """Each thread's file order, leaf, and whether it is one chain."""
        self._index()
        keys, kinds, parents = self.keys, self.kinds, self.parents
        pos: dict[str, int] = {}
        threads: dict[str, _Thread] = {}
        self.pos, self.threads = pos, threads
        for uuid, parent in parents.items():
            key = keys[uuid]
            thread = threads.get(key)
            if thread is None:
                thread = threads[key] = _Thread()
            order = thread.order
            same = parent is not None and parent is not PREV and parent in parents and keys[parent] == key
            if same:
                thread.linked = True
                if parent not in pos and uuid not in self.heads:
                    thread.backward += 1
            if thread.linear and parent is not PREV:
                # A first entry may name a parent this file does not hold (a resumed session).
                thread.linear = parent == order[-1] if order else not same
            pos[uuid] = len(order)
            order.append(uuid)
            if kinds[uuid] != OTHER:
                thread.leaf = uuid

    def plan(self) -> Plan:
        """What a second pass must change, thread by thread."""
        self._scan()
        out = Plan()
        for key, thread in self.threads.items():
            if not thread.linear and thread.linked and thread.leaf is not None:
                if thread.backward:
                    newest = self._newest_leaf(thread)
                    if newest != thread.leaf:
                        thread.leaf = newest
                        out.moved_leaves += 1
                self._plan_thread(key, thread, out)
        if out.needed:
            out.keys = {uuid: self.keys[uuid] for uuid in self.parents}
        return out

    # -- one thread ----------------------------------------------------------------

    def _up(self, uuid: str) -> str | None:
        """The recorded parent of ``uuid`` in its own thread, or None."""
        parent = self.parents[uuid]
        if parent is None or parent is PREV or parent not in self.parents:
            return None
        return parent if self.keys[parent] == self.keys[uuid] else None

    def _ancestors(self, uuid: str) -> Iterator[str]:
        """The recorded ancestors of ``uuid``, nearest first; a parent cycle (seen on disk) ends the walk."""
        limit = len(self.parents)
        p = self._up(uuid)
        while p is not None and limit > 0:
            yield p
            limit -= 1
            p = self._up(p)

    def _newest_leaf(self, thread: _Thread) -> str | None:
        """The leaf Claude Code resumes: the newest message-making entry no other message hangs off.

        Newest by timestamp (ISO 8601 as Claude Code writes it; an entry without one is older than
        any with one), then by line. Used when the file order cannot be trusted to end on it.
        """
        kinds = self.kinds
        if not self.stamps:
            self.stamps = dict(zip(self.links[0::LINK], self.links[4::LINK], strict=True))
        followed: set[str] = set()
        makers = [u for u in thread.order if kinds[u] != OTHER]
        for u in makers:
            for p in self._ancestors(u):
                if p in followed:
                    break
                followed.add(p)
        leaves = [u for u in makers if u not in followed]
        if not leaves:
            return thread.leaf
        pos, stamps = self.pos, self.stamps

        def newness(u: str) -> tuple[bool, Any, int]:
            stamp = stamps.get(u)
            when = parse_timestamp(stamp)
            return (when is not None, when.timestamp() if when is not None else 0.0, pos[u])

        return max(leaves, key=newness)

    def _chain(self, thread: _Thread, out: Plan) -> list[str]:
        """The chain from the leaf back to the root, root first."""
        parents, keys, order = self.parents, self.keys, thread.order
        chain: list[str] = []
        on: set[str] = set()
        cur = thread.leaf
        while cur is not None and cur not in on:
            on.add(cur)
            chain.append(cur)
            parent = parents[cur]
            pos = self.pos[cur]
            if parent is None:
                break
            if parent is not PREV and parent in parents:
                # A parent in another thread (a subagent's first line naming its caller) ends this chain.
                cur = parent if keys[parent] == keys[cur] else None
                continue
            if pos == 0:
                break
            if parent is not PREV:
                out.broken_links += 1
                if thread.backward:
                    # Out of order, the line before is no guide: the chain ends here.
                    break
            cur = order[pos - 1]
        chain.reverse()
        return chain

    def _plan_thread(self, key: str, thread: _Thread, out: Plan) -> None:
        kinds, apis = self.kinds, self.apis
        chain = self._chain(thread, out)
        kept = set(chain)
        off = [u for u in thread.order if u not in kept and kinds[u] != OTHER]
        chain_apis = {apis.get(u) for u in chain if kinds[u] == ASSISTANT and isinstance(apis.get(u), str)}
        # Entries another conversation hangs off (a prompt, a different API message): a tool-result
        # sibling leading there starts a branch, not a parallel call.
        followed: set[str] = set()
        for u in off:
            kind = kinds[u]
            if kind == RESULTS or (kind == ASSISTANT and apis.get(u) in chain_apis):
                continue
            for p in self._ancestors(u):
                if p in followed or p in kept:
                    break
                followed.add(p)
        changed = True
        while changed:
            changed = False
            for u in off:
                if u in kept:
                    continue
                kind, api_id = kinds[u], apis.get(u)
                candidate = (kind == RESULTS and u not in followed) or (kind == ASSISTANT and api_id in chain_apis)
                if candidate and self._anchored(u, kept):
                    kept.add(u)
                    changed = True
        dropped = [u for u in off if u not in kept]
        if dropped:
            gone = set(dropped)
            out.drop |= gone
            out.branches += sum(1 for u in dropped if self._conv_parent(u, gone) is None)
        self._order(key, thread, chain, kept, out)

    def _anchored(self, uuid: str, kept: set[str]) -> bool:
        """Whether ``uuid`` hangs off a kept entry, through entries that make no message."""
        for p in self._ancestors(uuid):
            if p in kept:
                return True
            if self.kinds[p] != OTHER:
                return False
        return False

    def _conv_parent(self, uuid: str, among: set[str]) -> str | None:
        """The nearest message-making ancestor of ``uuid`` when it is in ``among``."""
        for p in self._ancestors(uuid):
            if self.kinds[p] != OTHER:
                return p if p in among else None
        return None

    def _siblings_in_turn(self, chain: list[str], before: dict[str, str | None]) -> bool:
        """Whether every kept entry off the chain comes, in the file, before its turn is over.

        A sibling belongs to the turn of the chain entry it hangs off: that API message's later
        parts and tool results. The turn is over at the next chain entry that is neither.
        """
        kinds, apis, pos = self.kinds, self.apis, self.pos
        convo = [u for u in chain if kinds[u] != OTHER]
        ends: dict[str, str | None] = {}
        for i, c in enumerate(convo):
            api_id = apis.get(c)
            ends[c] = None
            for j in range(i + 1, len(convo)):
                kind, other_api = kinds[convo[j]], apis.get(convo[j])
                if kind != RESULTS and not (kind == ASSISTANT and api_id is not None and other_api == api_id):
                    ends[c] = convo[j]
                    break
        for u, b in before.items():
            if u in ends:
                continue
            # The chain entry the sibling hangs off, perhaps through other siblings.
            steps = len(before)
            while b is not None and b not in ends and steps > 0:
                b = before.get(b)
                steps -= 1
            end = ends.get(b) if b is not None else None
            if end is not None and pos[end] < pos[u]:
                return False
        return True

    def _order(self, key: str, thread: _Thread, chain: list[str], kept: set[str], out: Plan) -> None:
        """Record a conversation order for the thread when its file order answers before it asks."""
        kinds, pos = self.kinds, self.pos
        # Each kept message-making entry's predecessor in the conversation: on the chain the last such
        # entry before it; off the chain (a sibling) the nearest such ancestor.
        before: dict[str, str | None] = {}
        last: str | None = None
        last_at: dict[str, str | None] = {}
        for u in chain:
            last_at[u] = last
            if kinds[u] != OTHER:
                before[u] = last
                last = u
        for u in kept:
            if u in before or kinds[u] == OTHER:
                continue
            before[u] = None
            for p in self._ancestors(u):
                if kinds[p] != OTHER:
                    before[u] = p
                    break
                if p in last_at:
                    before[u] = last_at[p]
                    break
        if all(b is None or pos[b] < pos[u] for u, b in before.items()) and self._siblings_in_turn(chain, before):
            return
        # A stable topological order: file order wherever it is consistent; a tool-result sibling
        # goes right after what it answers, before the chain moves on.
        children: dict[str | None, list[str]] = {}
        for u, b in before.items():
            children.setdefault(b, []).append(u)
        on_chain = set(chain)
        heap = [(u in on_chain, pos[u], u) for u in children.get(None, [])]
        heapq.heapify(heap)
        planned: list[str] = []
        while heap:
            _, _, u = heapq.heappop(heap)
            planned.append(u)
            for c in children.get(u, []):
                heapq.heappush(heap, (c in on_chain, pos[c], c))
        if len(planned) < len(before):
            # Only a parent cycle leaves entries unreached: they keep their file order, at the end.
            placed = set(planned)
            planned += sorted((u for u in before if u not in placed), key=pos.__getitem__)
        out.order[key] = planned
