"""MiniCode's session-memory compact (6a): the project's memory stands in for a summary.

MiniCode asks its memory module for up to 6000 tokens of decisions,
conventions and user intent. A replayed transcript has no memory module, so
the memory is either supplied by the user (``SummaryRequest.memory``) or
extracted by rules: the user's messages, and the sentences of the
conversation that carry a decision or a convention ("we decided", "always",
"never", "must", "don't", "use", their CJK equivalents). The first request is
always kept verbatim, whatever the cap; it is what truncation loses first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable

from ...errors import SummaryError
from ..messages import Message
from ..tokens.base import TokenCounter
from .base import SummaryRequest, SummaryResult
from .rules import UserText, cut_to_tokens, message_plain_text, message_user_texts
from .sections import prose_sentences

__all__ = ["SessionMemorySummarizer", "MemoryItem", "extract_memory", "render_memory"]

_STRONG = re.compile(
    r"\b(?:we|i|let's|let us)\s+(?:decided|agreed|chose|settled)\b|\bdecid(?:e|ed|ing|sion)s?\b|\bconventions?\b"
    r"|\balways\b|\bnever\b|\bmust\b|\bdon'?t\b|\bdo not\b|\bprefer(?:s|red)?\b|\bmake sure\b|\bremember\b"
    r"|决定|约定|必须|不要|总是|始终|永远|禁止|务必|记住|规范|统一",
    re.I,
)
_WEAK = re.compile(r"\buse\b|\busing\b|\bshould\b|使用|应该", re.I)
_DECISION_LINE = re.compile(r"^- (.+)$")
MIN_SENTENCE = 12
MIN_CJK_SENTENCE = 4
_CJK = re.compile(r"[\u4e00-\u9fff]")
MAX_SENTENCE = 400
# A later user message in memory is intent, not a transcript: long ones are cut.
USER_CHARS = 600
# What the section headings and tags of the memory text cost, kept out of the items' budget.
HEADINGS = 40


@dataclass(frozen=True)
class MemoryItem:
    """One remembered sentence: ``kind`` is "decision" (strong cue) or "usage" (weak cue)."""

    kind: str
    text: str
    order: int


def _sentences(text: str) -> Iterable[str]:
    for part in prose_sentences(text):
        # A CJK character carries about a word, so CJK sentences are short in characters.
        shortest = MIN_CJK_SENTENCE if _CJK.search(part) else MIN_SENTENCE
        if shortest <= len(part) <= MAX_SENTENCE:
            yield part


def _carried_decisions(text: str) -> list[str]:
    # An earlier session-memory summary: its decision lines are memory already.
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("### "):
            inside = line.startswith("### Decisions and conventions")
            continue
        match = _DECISION_LINE.match(line) if inside else None
        if match:
            out.append(match.group(1))
    return out


# A cued sentence of one text: (dedup key, normalised sentence, kind).
_Cue = tuple[str, str, str]
# Every match of _STRONG or _WEAK in ASCII text contains one of these, lower-cased.
# Outside ASCII, case folding can map other characters onto these letters, so
# such texts always take the full search.
_CUE_WORDS = (
    "decid", "agreed", "chose", "settled", "convention", "always", "never", "must", "don", "do not",
    "prefer", "make sure", "remember", "use", "using", "should",
)


def _cue(sentence: str) -> _Cue | None:
    kind = "decision" if _STRONG.search(sentence) else "usage" if _WEAK.search(sentence) else None
    if kind is None:
        return None
    return " ".join(sentence.lower().split()), " ".join(sentence.split()), kind


def _may_cue(text: str) -> bool:
    # The case-insensitive regexes cost far more than substring tests; few texts carry a cue.
    if text.isascii():
        low = text.lower()
        for word in _CUE_WORDS:
            if word in low:
                break
        else:
            return False
    # A sentence is a substring of the text bounded by non-word characters,
    # so a cue in any sentence is a cue in the whole text.
    return bool(_STRONG.search(text) or _WEAK.search(text))


def _text_cues(text: str) -> list[_Cue]:
    if not text or not _may_cue(text):
        return []
    return [c for c in map(_cue, _sentences(text)) if c is not None]


_NOT_MEMORY = frozenset(("placeholder", "boundary", "truncation_note"))


class _Memory:
    """Collects cued sentences, oldest first, deduplicated, one message at a time."""

    def __init__(self) -> None:
        self.items: list[MemoryItem] = []
        self.seen: set[str] = set()

    def add(self, m: Message, text: str) -> None:
        """Read message ``m``, whose plain text is ``text``; system messages and notes hold no memory."""
        tag = m.tag
        if not text or m.role == "system" or tag in _NOT_MEMORY:
            return
        if tag in ("summary", "memory"):
            cues: Iterable[_Cue] = (c for c in map(_cue, _carried_decisions(text)) if c is not None)
        else:
            cues = _text_cues(text)
        # Only a cued sentence marks its key as seen, so uncued ones can be left out up front.
        for key, sentence, kind in cues:
            if key not in self.seen:
                self.seen.add(key)
                self.items.append(MemoryItem(kind, sentence, len(self.items)))


def extract_memory(messages: Iterable[Message]) -> list[MemoryItem]:
    """Decision and convention sentences of the user and the assistant, oldest first, deduplicated."""
    memory = _Memory()
    for m in messages:
        memory.add(m, message_plain_text(m))
    return memory.items


def _read(messages: Iterable[Message], with_memory: bool) -> tuple[bool, list[UserText], list[MemoryItem]]:
    """One pass over the history: whether it holds a non-system message, the user's words, and the memory.

    A summary reads the whole history before the tail; reading each message once
    (rather than once for the user's words and once more for the memory) halves that.
    """
    any_message = False
    texts: list[UserText] = []
    memory = _Memory()
    for m in messages:
        if m.role == "system":
            continue
        any_message = True
        text = message_plain_text(m)
        if m.role == "user":
            texts.extend(message_user_texts(m, text))
        if with_memory:
            memory.add(m, text)
    return any_message, texts, memory.items


def render_memory(first: UserText | None, later: list[UserText], items: list[MemoryItem], budget: int, counter: TokenCounter) -> str:
    """The memory text: the first request whole, then what fits ``budget`` tokens by priority.

    Priority: decisions (newest first), the user's later messages (newest
    first), then weaker "use ..." sentences. Each section is printed oldest
    first, the way a person reads it.
    """
    chosen_items: set[int] = set()
    chosen_users: dict[int, str] = {}
    used = 0

    def take(cost: int) -> bool:
        nonlocal used
        if used + cost > budget:
            return False
        used += cost
        return True

    for it in sorted((i for i in items if i.kind == "decision"), key=lambda i: -i.order):
        if take(counter.count_text(it.text) + 2):
            chosen_items.add(it.order)
    for k in range(len(later) - 1, -1, -1):
        text = later[k].text
        if len(text) > USER_CHARS:
            text = f'<user-message truncated="{len(text) - USER_CHARS}">\n{text[:USER_CHARS]}\n[... {len(text) - USER_CHARS} more characters not kept]\n</user-message>'
        else:
            text = f"<user-message>\n{text}\n</user-message>"
        if take(counter.count_text(text) + 1):
            chosen_users[k] = text
    for it in sorted((i for i in items if i.kind == "usage"), key=lambda i: -i.order):
        if take(counter.count_text(it.text) + 2):
            chosen_items.add(it.order)

    parts: list[str] = []
    if first is not None:
        parts += ["### User intent", "First request (verbatim):", f"<primary-request>\n{first.text}\n</primary-request>"]
    if chosen_users:
        parts += ["Later user messages:" if first is not None else "### User intent"]
        parts += [chosen_users[k] for k in sorted(chosen_users)]
    picked = [i for i in items if i.order in chosen_items]
    if picked:
        parts += ["", "### Decisions and conventions", *(f"- {i.text}" for i in picked)]
    return "\n".join(parts)


class SessionMemorySummarizer:
    """Session-memory compaction: supplied or extracted project memory, capped by tokens.

    Raises ``SummaryError`` when there is no memory: nothing supplied and no
    decision or convention found. The first user request alone is not
    memory; the full summary, which also keeps it, is the better fallback.
    """

    name = "session_memory"

    def __init__(self, max_tokens: int = 6000, memory: str | None = None) -> None:
        if max_tokens < 1:
            raise SummaryError(f"max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.memory = memory

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        counter = request.counter
        supplied = (request.memory or self.memory or "").strip()
        any_message, texts, items = _read(request.messages, with_memory=not supplied)
        if not any_message:
            raise SummaryError("nothing to summarise: no user or assistant messages before the kept tail")
        first = texts[0] if texts else None
        if supplied:
            body = cut_to_tokens(supplied, self.max_tokens, counter)
            if first is not None:
                body = f"{body}\n\n### First user request (verbatim)\n<primary-request>\n{first.text}\n</primary-request>"
        else:
            if not items:
                raise SummaryError("no session memory: none supplied and no decision or convention found in the history")
            # The first request is kept whole outside the cap; the rest shares what is left.
            spent = counter.count_text(first.text) if first is not None else 0
            body = render_memory(first, texts[1:], items, max(0, self.max_tokens - spent - HEADINGS), counter)
        tokens = request.tokens_before if request.tokens_before is not None else counter.count_messages(request.messages)
        text = (
            f"[Context compacted via Session Memory] Messages removed: {len(request.messages)}. Tokens before: ~{tokens}\n"
            f"## Project Memory Context\n{body}\n"
            "--- Recent conversation continues below ---"
        )
        return SummaryResult(text=text, strategy="session_memory")
