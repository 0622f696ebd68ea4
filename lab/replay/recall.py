"""Needed-later recall: did the context sent at request k hold what the recorded response at k went on to use?

A replay knows the future: the response the original agent gave at request
``k`` (the assistant messages ``raw[p:q]``, their text and tool calls, not
their thinking) names things (``mentions.py``). Each such mention is

    needed       when it appears in the raw history before ``p`` and not in
                 the system prompt (the agent used something it had seen)
    kept         when a needed mention is in the context sent at ``k``
    recoverable  when it is not, but a spilled file that a stub in the
                 context points to (its ``spill_path``, or a known spill path
                 named in a stub's or summary's text) holds it
    lost         otherwise; lost to "recorded compaction" when every
                 occurrence in the raw history before ``p`` lies before the
                 newest recorded boundary there (a message of the replayed
                 transcript with ``boundary`` set or tagged "boundary": the
                 original agent's own compaction), else to "this config"

so ``needed = kept + recoverable + lost_recorded + lost_config``, and
``needed_later_recall = kept / needed`` (None when nothing is needed). A
report's totals are micro-averages: sum kept / sum needed over requests.

"In the context" is token-level membership (see ``mentions.py``): a mention
is kept when some sent message holds it as a whole token, or, for multi-word
mentions (commands, error lines, URLs), as the same line; a summary or
memory message written by the pipeline also keeps a multi-word mention it
quotes anywhere in its text.

Cost: mentions are looked up, never searched for. Every mention any response
of the transcript names is collected once (the assistant messages are scanned
whole); every other message only has its wanted tokens looked up
(``mentions.Lookup``), once per message object (cached by identity) and once
per text (a spill file or a stage's copy holds a raw text again). The raw
history's first and last occurrence of each is kept as a running index, and
the context's hits are a multiset kept over the prefix two successive
contexts share (``incremental=False`` recomputes the union from scratch every
request: the reference the running state matches). Nothing outlives the
replay but the small memos of ``mentions.py``, so a first replay pays the
whole cost (the bench's "cold" figure).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent, shared_prefix
from ..core.store import SpillStore
from ..errors import StoreError
from .mentions import Lookup, classify, is_multiword, kind, tokens, tool_mentions
from .report import LOST_TO, LostMention, Row
from .support import ByIdentity

__all__ = ["MAX_LOST", "RecallStep", "Recall", "scan", "response_mentions", "message_mentions", "recorded_boundaries", "totals"]

# Lost mentions listed per row; the counts are exact regardless.
MAX_LOST = 20
RECORDED, CONFIG = LOST_TO
_PIPELINE_TAGS = ("summary", "memory", "truncation_note")


def scan(message: Message) -> tuple[set[str], set[str]]:
    """(what the message names as a response: text and tool calls, not thinking; every token it holds)."""
    named: set[str] = set()
    held: set[str] = set()
    for b in message.content:
        if isinstance(b, TextBlock):
            toks = tokens(b.text)
            held |= toks
            if message.role == "assistant":
                named |= classify(toks)
        elif isinstance(b, ToolResultBlock):
            held |= tokens(b.content)
        elif isinstance(b, ThinkingBlock):
            held |= tokens(b.thinking)
        elif isinstance(b, ToolUseBlock):
            named |= tool_mentions(b, held)
    held |= named
    return named, held


def response_mentions(messages: Iterable[Message]) -> set[str]:
    """What assistant messages name in their text and tool calls (thinking left out)."""
    return set().union(*(scan(m)[0] for m in messages if m.role == "assistant"))


def message_mentions(message: Message) -> set[str]:
    """Every token and mention one message holds, unfiltered: what a needed mention is looked up in."""
    return scan(message)[1]


def _text(message: Message) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else b.content for b in message.content if isinstance(b, (TextBlock, ToolResultBlock)))


def recorded_boundaries(raw: Sequence[Message]) -> list[int]:
    """Indices of the original agent's own compactions in a transcript."""
    return [i for i, m in enumerate(raw) if m.boundary is not None or m.tag == "boundary"]


@dataclass(frozen=True)
class RecallStep:
    """One request's recall counts; ``lost`` lists (mention, lost to) in mention order, at most ``MAX_LOST``."""

    needed: int = 0
    kept: int = 0
    recoverable: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    lost: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def recall(self) -> float | None:
        return self.kept / self.needed if self.needed else None

    @property
    def recoverable_share(self) -> float | None:
        return self.recoverable / self.needed if self.needed else None

    def fields(self) -> dict[str, object]:
        """The Row fields this step fills."""
        return {
            "needed_mentions": self.needed,
            "kept_mentions": self.kept,
            "recoverable_mentions": self.recoverable,
            "lost_recorded": self.lost_recorded,
            "lost_config": self.lost_config,
            "needed_later_recall": self.recall,
            "recoverable_share": self.recoverable_share,
            "lost_mentions": [LostMention(mention=m, kind=kind(m), lost_to=to) for m, to in self.lost],
        }


class Recall:
    """The running state of needed-later recall over one replay; call ``step`` once per request, in order."""

    def __init__(self, raw: Sequence[Message], store: SpillStore | None, spill_paths: Mapping[str, str], *, incremental: bool = True) -> None:
        self.raw, self.store, self.spill_paths, self.incremental = raw, store, spill_paths, incremental
        self._responses: ByIdentity[frozenset[str]] = ByIdentity()
        self._hits: ByIdentity[frozenset[str]] = ByIdentity()
        self._refs: ByIdentity[frozenset[str]] = ByIdentity()
        # Every mention any response names: the only strings worth indexing anywhere. Each assistant
        # message is scanned once: what it names, and (kept until ``wanted`` is known) what it holds.
        held: list[tuple[Message, set[str]]] = []
        for m in raw:
            if m.role == "assistant" and self._responses.get(m) is None:
                named, toks = scan(m)
                self._responses.put(m, frozenset(named))
                held.append((m, toks))
        self.wanted: frozenset[str] = frozenset().union(*(self._response(m) for m in raw if m.role == "assistant"))
        for m, toks in held:
            self._hits.put(m, self.wanted.intersection(toks))
        self._lookup = Lookup(self.wanted)
        self._texts: dict[str, frozenset[str]] = {}
        self._multiword = sorted(w for w in self.wanted if is_multiword(w))
        lead = []
        for m in raw:
            if m.role != "system" or m.boundary is not None or m.tag == "boundary":
                break
            lead.append(m)
        self.system: frozenset[str] = frozenset().union(*(self.hits(m) for m in lead))
        self.boundaries = recorded_boundaries(raw)
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self._indexed = 0
        self._context: list[Message] = []
        self._held: Counter[str] = Counter()
        self._paths: Counter[str] = Counter()
        self._spilled: dict[str, frozenset[str] | None] = {}

    # -- per message, cached by identity ----------------------------------------------------------

    def _response(self, message: Message) -> frozenset[str]:
        hit = self._responses.get(message)
        return hit if hit is not None else self._responses.put(message, frozenset(scan(message)[0] if message.role == "assistant" else ()))

    def hits(self, message: Message) -> frozenset[str]:
        """The wanted mentions one message holds."""
        hit = self._hits.get(message)
        if hit is None:
            found = self._wanted_in(message)
            if message.tag in _PIPELINE_TAGS and self._multiword:
                text = _text(message)
                found |= {w for w in self._multiword if w in text}
            hit = self._hits.put(message, frozenset(found))
        return hit

    def _wanted_in(self, message: Message) -> set[str]:
        # What ``scan`` would say, without building the message's token set: a message that calls no tool
        # names nothing beyond the tokens of its texts, so only the wanted ones are looked for.
        if message.role == "assistant" or any(isinstance(b, ToolUseBlock) for b in message.content):
            return set(self.wanted.intersection(scan(message)[1]))
        found: set[str] = set()
        for b in message.content:
            if isinstance(b, TextBlock):
                found |= self._text_hits(b.text)
            elif isinstance(b, ToolResultBlock):
                found |= self._text_hits(b.content)
            elif isinstance(b, ThinkingBlock):
                found |= self._text_hits(b.thinking)
        return found

    def _text_hits(self, text: str) -> frozenset[str]:
        # By text, for this replay only: a spill file, or a stage's copy of a message, holds a raw text again.
        hit = self._texts.get(text)
        if hit is None:
            hit = self._texts[text] = frozenset(self._lookup.held(text))
        return hit

    def _spill_refs(self, message: Message) -> frozenset[str]:
        """Spill paths a message points to: its stubs' ``spill_path`` or the known path a stub's text names
        (MewCode's "[saved to] PATH"), and known paths a summary's text names."""
        hit = self._refs.get(message)
        if hit is None:
            refs: set[str] = set()
            for b in message.content:
                if isinstance(b, ToolResultBlock) and b.compacted is not None:
                    known = self.spill_paths.get(b.tool_use_id)
                    if b.spill_path:
                        refs.add(b.spill_path)
                    elif known and known in b.content:
                        refs.add(known)
            if message.tag in _PIPELINE_TAGS:
                text = _text(message)
                refs |= {p for p in self.spill_paths.values() if p in text}
            hit = self._refs.put(message, frozenset(refs))
        return hit

    def _spill_hits(self, path: str) -> frozenset[str] | None:
        if path not in self._spilled:
            found: frozenset[str] | None = None
            if self.store is not None and self.store.exists(path):
                try:
                    found = self._text_hits(self.store.read(path))
                except StoreError:
                    found = None
            self._spilled[path] = found
        return self._spilled[path]

    # -- running state ----------------------------------------------------------------------------

    def _index(self, upto: int) -> None:
        first, last = self.first, self.last
        for i in range(self._indexed, upto):
            for x in self.hits(self.raw[i]):
                first.setdefault(x, i)
                last[x] = i
        self._indexed = max(self._indexed, upto)

    def _update(self, context: Sequence[Message]) -> tuple[Counter[str] | set[str], Counter[str] | set[str]]:
        if not self.incremental:
            sent = [m for m in context if is_sent(m)]
            held: set[str] = set().union(*(self.hits(m) for m in sent))
            paths: set[str] = set().union(*(self._spill_refs(m) for m in sent))
            return held, paths
        seq = list(context)
        k = shared_prefix(self._context, seq)
        for m in self._context[k:]:
            if is_sent(m):
                self._held.subtract(self.hits(m))
                self._paths.subtract(self._spill_refs(m))
        for m in seq[k:]:
            if is_sent(m):
                self._held.update(self.hits(m))
                self._paths.update(self._spill_refs(m))
        self._context = seq
        return self._held, self._paths

    def step(self, point: int, end: int, context: Sequence[Message]) -> RecallStep:
        """Recall at the request answered by ``raw[point:end]``, whose sent context is ``context`` (markers allowed)."""
        self._index(point)
        held, paths = self._update(context)
        used: set[str] = set()
        for m in self.raw[point:end]:
            used |= self._response(m)
        needed = sorted(x for x in used if x in self.first and x not in self.system)
        missing = [x for x in needed if held[x] <= 0] if isinstance(held, Counter) else [x for x in needed if x not in held]
        if not missing:
            return RecallStep(needed=len(needed), kept=len(needed))
        reachable = [h for p in sorted(p for p in paths if (paths[p] > 0 if isinstance(paths, Counter) else True))
                     if (h := self._spill_hits(p)) is not None]
        at = bisect_left(self.boundaries, point) - 1
        boundary = self.boundaries[at] if at >= 0 else None
        recoverable = 0
        lost: list[tuple[str, str]] = []
        for x in missing:
            if any(x in h for h in reachable):
                recoverable += 1
            else:
                lost.append((x, RECORDED if boundary is not None and self.last[x] < boundary else CONFIG))
        n_recorded = sum(1 for _, to in lost if to == RECORDED)
        return RecallStep(
            needed=len(needed),
            kept=len(needed) - len(missing),
            recoverable=recoverable,
            lost_recorded=n_recorded,
            lost_config=len(lost) - n_recorded,
            lost=tuple(lost[:MAX_LOST]),
        )


def totals(rows: Sequence[Row]) -> dict[str, object]:
    """Report fields over all rows: summed counts, and micro-averaged shares (sum kept / sum needed)."""
    needed = sum(r.needed_mentions for r in rows)
    kept = sum(r.kept_mentions for r in rows)
    recoverable = sum(r.recoverable_mentions for r in rows)
    return {
        "needed_mentions": needed,
        "kept_mentions": kept,
        "recoverable_mentions": recoverable,
        "lost_recorded": sum(r.lost_recorded for r in rows),
        "lost_config": sum(r.lost_config for r in rows),
        "needed_later_recall": kept / needed if needed else None,
        "recoverable_share": recoverable / needed if needed else None,
    }
