"""MiniCode's full compact (6b): a structured summary written by rules, offline and deterministic.

MiniCode's summary keeps 100 characters of each of the first eight user
messages, and takes them from any user message, tool results included. The
lab keeps its sections but fixes both weaknesses: topics come from real user
text only, and the user's words survive. The first request is kept whole
(``<primary-request>``), every later user message verbatim while the budget
allows (``<user-message>``). Both tags are parsed back from an earlier
summary, so a summary of a summary still holds the first request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator, Sequence

from ...errors import SummaryError
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, block_text
from ..tokens.base import TokenCounter
from .base import SummaryRequest, SummaryResult

__all__ = [
    "RuleSummarizer",
    "UserText",
    "PATH_KEYS",
    "user_texts",
    "message_user_texts",
    "first_user_request",
    "message_plain_text",
    "render_user_messages",
    "tool_path",
    "summary_clock",
    "cut_to_tokens",
]

PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path")

_PRIMARY_RE = re.compile(r"<primary-request>\n(.*?)\n</primary-request>", re.S)
_USER_RE = re.compile(r"<user-message(?: truncated=\"\d+\")?>\n(.*?)\n</user-message>", re.S)
_STOPWORDS = frozenset(
    "about above after again also and any are because been before being below between both but can could did does doing down during each "
    "few for from further had has have having here how into its just keep more most only other our out over own same should some such "
    "than that the their them then there these they this those through under until very was were what when where which while who whom "
    "why will with would you your focus please summary compact".split()
)

TOPICS = 8
TOPIC_CHARS = 100
FILES = 10
ERRORS = 3
ERROR_CHARS = 80
# An older user message over budget keeps this much, with a note of what was cut.
TRUNCATED_CHARS = 300
FOCUS_LINES = 40
FOCUS_LINE_CHARS = 200


@dataclass(frozen=True)
class UserText:
    """One user message's words, or one carried over from an earlier summary."""

    id: str
    text: str
    carried: bool = False


def message_plain_text(message: Message) -> str:
    """The text blocks of a message, without tool results, tool calls or thinking."""
    content = message.content
    # Most messages of a long session hold one block or none of text: skip the join.
    if len(content) == 1:
        b = content[0]
        return b.text if isinstance(b, TextBlock) else ""
    texts = [b.text for b in content if isinstance(b, TextBlock)]
    return texts[0] if len(texts) == 1 else "\n".join(texts)


def message_user_texts(m: Message, text: str) -> Iterator[UserText]:
    """The user's words in one user message whose plain text (``message_plain_text``) is ``text``."""
    if m.tag in ("summary", "memory", "truncation_note"):
        for k, found in enumerate(_PRIMARY_RE.findall(text)):
            yield UserText(f"{m.id}#primary{k}", found, carried=True)
        for k, found in enumerate(_USER_RE.findall(text)):
            yield UserText(f"{m.id}#user{k}", found, carried=True)
    elif m.tag is None and text.strip():
        yield UserText(m.id, text)


def _iter_user_texts(messages: Iterable[Message]) -> Iterator[UserText]:
    for m in messages:
        if m.role == "user":
            yield from message_user_texts(m, message_plain_text(m))


def user_texts(messages: Iterable[Message]) -> list[UserText]:
    """What the user wrote, oldest first: real user text and what earlier summaries carried.

    Tool results, placeholders and notes are not user words. A ``summary``,
    ``memory`` or ``truncation_note`` message contributes the
    ``<primary-request>`` and ``<user-message>`` blocks it holds.
    """
    return list(_iter_user_texts(messages))


def first_user_request(messages: Iterable[Message]) -> str | None:
    """The user's first request, verbatim (possibly carried by an earlier summary)."""
    # It is usually in the first few messages: stop there rather than read the whole history.
    first = next(_iter_user_texts(messages), None)
    return first.text if first is not None else None


def tool_path(block: ToolUseBlock) -> str | None:
    for key in PATH_KEYS:
        value = block.input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def summary_clock(request: SummaryRequest, clock: Callable[[], float] | None) -> float:
    """The time for a summary header: the request's clock, a given clock, or the history's last timestamp."""
    if request.now is not None:
        return request.now
    if clock is not None:
        return clock()
    stamps = [m.timestamp for m in request.messages if m.timestamp is not None]
    return stamps[-1].timestamp() if stamps else 0.0


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _terms(instructions: str | None) -> list[str]:
    if not instructions:
        return []
    words = re.findall(r"[\w./-]{4,}", instructions.lower())
    return list(dict.fromkeys(w for w in words if w not in _STOPWORDS))


def _mentions(text: str, terms: Sequence[str]) -> bool:
    low = text.lower()
    return any(t in low for t in terms)


def _cut_note(text: str, keep: int) -> str:
    return f"{text[:keep]}\n[... {len(text) - keep} more characters not kept]"


def cut_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` within ``max_tokens``, ending at a line break when one is near.

    A binary search on length: counters are not linear in characters (CJK,
    real tokenizers), so the cut is measured, never guessed from a ratio.
    """
    if counter.count_text(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count_text(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    nl = cut.rfind("\n")
    # Prefer whole lines, unless that would throw away most of what fits.
    return cut[:nl] if nl >= len(cut) * 0.8 else cut


def render_user_messages(texts: Sequence[UserText], budget: int, counter: TokenCounter) -> str:
    """Newest user messages verbatim while they fit ``budget`` tokens; older ones cut, then counted.

    Each message is an ``<user-message>`` block so a later compaction can carry it on.
    """
    if not texts:
        return ""
    blocks: list[str] = []
    used = 0
    omitted = 0
    for t in reversed(texts):
        whole = f"<user-message>\n{t.text}\n</user-message>"
        cost = counter.count_text(whole)
        if used + cost <= budget:
            blocks.append(whole)
            used += cost
            continue
        if len(t.text) > TRUNCATED_CHARS:
            cut = f'<user-message truncated="{len(t.text) - TRUNCATED_CHARS}">\n{_cut_note(t.text, TRUNCATED_CHARS)}\n</user-message>'
            cost = counter.count_text(cut)
            if used + cost <= budget:
                blocks.append(cut)
                used += cost
                continue
        omitted += 1
    blocks.reverse()
    if omitted:
        blocks.insert(0, f"({omitted} older user message(s) omitted to fit the summary budget)")
    return "\n".join(blocks)


class RuleSummarizer:
    """Full compact by rules: no LLM, the same input always gives the same text.

    ``clock`` supplies the header time when the request carries none; the
    lab passes its replay clock, never wall time, so replays are reproducible.
    """

    name = "rules"

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        msgs = [m for m in request.messages if m.role != "system"]
        if not msgs:
            raise SummaryError("nothing to summarise: no user or assistant messages before the kept tail")
        counter = request.counter
        terms = _terms(request.instructions)
        texts = user_texts(msgs)
        carried_other = [m for m in msgs if m.tag == "summary" and not _PRIMARY_RE.search(message_plain_text(m))]

        tokens = request.tokens_before if request.tokens_before is not None else counter.count_messages(request.messages)
        count = request.messages_before if request.messages_before is not None else len(request.messages)
        stamp = datetime.fromtimestamp(summary_clock(request, self._clock), tz=timezone.utc).strftime("%H:%M:%S")
        head = [f"[Context compacted at {stamp} - Full Compact] Original: ~{tokens} tokens, {count} messages", "", "## Conversation Summary"]

        if texts:
            head += ["", "**Primary request (verbatim):**", f"<primary-request>\n{texts[0].text}\n</primary-request>"]
        if request.instructions:
            head += ["", f"**Focus requested by the user:** {request.instructions.strip()}"]
        head += self._facts(msgs, texts, terms)
        footer = "\n*Continue from where we left off.*"

        fixed = "\n".join(head)
        budget = max(0, request.max_tokens - counter.count_text(fixed) - counter.count_text(footer))
        extra: list[str] = []
        for m in carried_other:
            # An earlier summary without our tags (an LLM's): carry it, cut to a share of the budget.
            whole = message_plain_text(m)
            text = cut_to_tokens(whole, max(0, budget // 2), counter)
            if text != whole:
                text += f"\n[... {len(whole) - len(text)} more characters not kept]"
            extra += ["", "**Earlier summary:**", text]
            budget -= counter.count_text(text)
        rendered = render_user_messages(texts[1:], max(0, budget), counter)
        if rendered:
            extra += ["", "**User messages (verbatim, oldest first; the first is the primary request above):**", rendered]
            budget -= counter.count_text(rendered)
        if terms:
            lines = self._focus_lines(msgs, terms, max(0, budget), counter)
            if lines:
                extra += ["", "**Lines relevant to the requested focus:**", *lines]
        text = fixed + "\n".join(extra) + "\n" + footer
        return SummaryResult(text=text, strategy="full")

    def _facts(self, msgs: list[Message], texts: list[UserText], terms: list[str]) -> list[str]:
        out: list[str] = []
        topics = [t for t in texts if not t.carried]
        if terms:
            # The requested focus goes first; order is otherwise kept.
            topics = sorted(topics, key=lambda t: not _mentions(t.text, terms))
        if topics:
            out += ["", "**Topics discussed:**", *(f"- {_one_line(t.text, TOPIC_CHARS)}" for t in topics[:TOPICS])]

        uses: dict[str, int] = {}
        files: dict[str, int] = {}
        errors: list[str] = []
        for i, m in enumerate(msgs):
            for b in m.content:
                if isinstance(b, ToolUseBlock):
                    uses[b.name] = uses.get(b.name, 0) + 1
                    path = tool_path(b)
                    if path:
                        files.pop(path, None)
                        files[path] = i
                elif isinstance(b, ToolResultBlock) and b.is_error and b.content.strip():
                    errors.append(_one_line(b.content, ERROR_CHARS))
        if uses:
            out += ["", "**Tools used:** " + ", ".join(f"{name} ({n})" for name, n in sorted(uses.items()))]
        if files:
            recent = list(reversed(files))
            if terms:
                recent = sorted(recent, key=lambda p: not _mentions(p, terms))
            more = f" (+{len(recent) - FILES} more)" if len(recent) > FILES else ""
            out += ["", "**Files touched (most recent first):** " + ", ".join(recent[:FILES]) + more]
        if errors:
            # The latest errors: older ones were most likely fixed on the way.
            out += ["", f"**Errors encountered (latest {min(ERRORS, len(errors))} of {len(errors)}):**"]
            out += [f"- {e}" for e in errors[-ERRORS:]]
        return out

    def _focus_lines(self, msgs: list[Message], terms: list[str], budget: int, counter: TokenCounter) -> list[str]:
        seen: set[str] = set()
        lines: list[str] = []
        used = 0
        for m in msgs:
            if m.tag is not None:
                continue
            for b in m.content:
                for raw in block_text(b).splitlines():
                    line = _one_line(raw, FOCUS_LINE_CHARS)
                    if not line or line in seen or not _mentions(line, terms):
                        continue
                    cost = counter.count_text(line) + 1
                    if used + cost > budget or len(lines) >= FOCUS_LINES:
                        return lines
                    seen.add(line)
                    lines.append(f"- {line}")
                    used += cost
        return lines
