"""MiniCode's full compact (6b): a structured summary written by rules, offline and deterministic.

MiniCode's summary keeps 100 characters of each of the first eight user
messages, and takes them from any user message, tool results included. The
lab keeps its sections but fixes both weaknesses: topics come from real user
text only, and the user's words survive. The first request is kept whole
(``<primary-request>``), every later user message verbatim while the budget
allows (``<user-message>``). Both tags are parsed back from an earlier
summary, so a summary of a summary still holds the first request.

After MiniCode's headline (topics, tools, files touched, errors) come the
sections a continuing agent needs (``sections.gather``): files changed with
what changed, files read, commands run with their outcomes, errors seen with
the last one verbatim, decisions and pending work, and the current step.
They share the budget in order of importance, so the whole text stays within
``max_tokens``.

``RuleSummarizer.summarize_seed`` is MiniCode's text as its design writes it
(``summary.rules_format="seed"``): the four headline lists, built by the
design's rules from the removed messages only. Nothing an earlier summary
listed enters them; an earlier summary is carried whole after them instead,
as MiniCode keeps its old summary as a system message beside the new one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from collections.abc import Callable, Iterable, Iterator, Sequence

from ...errors import SummaryError
from ..commands import PATH_KEYS, tool_path
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, block_text
from ..tail import PLACEHOLDER_ID_PREFIX
from ..tokens.base import TokenCounter
from .base import SummaryRequest, SummaryResult
from .sections import Facts, gather

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
    "seed_headline",
]

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


# The sections beyond MiniCode's, bounded whatever the budget.
COMMANDS = 20
FILES_CHANGED = 15
FILES_READ = 20
ERRORS_LISTED = 5
# Shorter and shorter ends of the last error, tried in turn until one fits.
LAST_ERROR_STEPS = (2000, 1000, 500, 250)

# Where each section is printed: MiniCode's headline first, the state of the work next, the current step last.
DISPLAY = ("topics", "tools", "touched", "errors_headline", "earlier", "users", "changed", "read", "commands", "errors", "last_error", "decisions", "step", "focus")


def _fit(title: str, items: Sequence[str], allowance: int, counter: TokenCounter, keep_last: bool = False) -> list[str]:
    """A titled list of ``- item`` lines within ``allowance`` tokens: the first items that fit (or the last, in order)."""
    used = counter.count_text(title) + 2
    if used > allowance or not items:
        return []
    kept: list[str] = []
    for item in reversed(items) if keep_last else items:
        line = f"- {item}"
        cost = counter.count_text(line) + 1
        if used + cost > allowance:
            break
        kept.append(line)
        used += cost
    if not kept:
        return []
    return ["", title, *(reversed(kept) if keep_last else kept)]


def _tail(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    nl = cut.find("\n")
    if 0 <= nl < chars // 4:
        cut = cut[nl + 1 :]  # start at a whole line
    return f"[... {len(text) - len(cut)} earlier characters not kept]\n{cut}"


# The lab's messages MiniCode keeps as system messages: never part of what its summary reads.
_SEED_SKIPPED_TAGS = ("summary", "memory", "truncation_note", "boundary")
SEED_TOPIC_MIN_CHARS = 10


def _is_pipeline_placeholder(m: Message) -> bool:
    return m.tag == "placeholder" and m.id.startswith(PLACEHOLDER_ID_PREFIX)


def seed_headline(messages: Sequence[Message]) -> list[str]:
    """MiniCode's ``_generate_structured_summary`` lines for ``messages``, by the design's rules.

    Topics: the first 100 characters of each of the first 8 user messages longer
    than 10 characters (their text; newlines become spaces so an item stays one
    line). Tools: the sorted names of the calls made. Files touched: the sorted
    ``file_path`` inputs of those calls, the first 10. Errors: the first 80
    characters of each of the first 3 failed tool results. Summaries, notes and
    the lab's placeholder turns are not read (MiniCode keeps the first as system
    messages and never writes the last); tagged harness lines are user
    messages, as they are in MiniCode's list.
    """
    topics: list[str] = []
    tools: set[str] = set()
    files: set[str] = set()
    errors: list[str] = []
    for m in messages:
        if m.role == "system" or m.tag in _SEED_SKIPPED_TAGS or _is_pipeline_placeholder(m):
            continue
        if m.role == "user":
            text = message_plain_text(m)
            if len(text) > SEED_TOPIC_MIN_CHARS:
                topics.append(text[:TOPIC_CHARS].replace("\n", " "))
            errors += [b.content[:ERROR_CHARS] for b in m.content if isinstance(b, ToolResultBlock) and b.is_error]
        elif m.role == "assistant":
            for b in m.content:
                if isinstance(b, ToolUseBlock):
                    tools.add(b.name)
                    path = b.input.get("file_path")
                    if isinstance(path, str) and path:
                        files.add(path)
    lines = ["### Summary of conversation so far:", "", "**Topics discussed:**", ""]
    lines += [f"- {t}" for t in topics[:TOPICS]]
    lines.append(f"**Tools used:** {', '.join(sorted(tools))}")
    lines.append(f"**Files touched:** {', '.join(sorted(files)[:FILES])}")
    lines += ["**Errors encountered:**", ""]
    lines += [f"- {e}" for e in errors[:ERRORS]]
    return lines


class RuleSummarizer:
    """Full compact by rules: no LLM, the same input always gives the same text.

    ``clock`` supplies the header time when the request carries none; the
    lab passes its replay clock, never wall time, so replays are reproducible.

    The text stays within ``request.max_tokens``. The header and the primary
    request are always kept (the request whole, even over budget); every
    other section takes its share of what is left in order of importance
    (``_PRIORITY``), and whatever still does not fit is dropped, least
    important first.
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
        facts = gather(msgs)

        tokens = request.tokens_before if request.tokens_before is not None else counter.count_messages(request.messages)
        count = request.messages_before if request.messages_before is not None else len(request.messages)
        stamp = datetime.fromtimestamp(summary_clock(request, self._clock), tz=UTC).strftime("%H:%M:%S")
        head = [f"[Context compacted at {stamp} - Full Compact] Original: ~{tokens} tokens, {count} messages", "", "## Conversation Summary"]
        if texts:
            head += ["", "**Primary request (verbatim):**", f"<primary-request>\n{texts[0].text}\n</primary-request>"]
        if request.instructions:
            head += ["", f"**Focus requested by the user:** {request.instructions.strip()}"]
        fixed = "\n".join(head)
        footer = "\n*Continue from where we left off.*"

        builders = _Builders(msgs, texts, facts, terms, counter)
        remaining = max(0, request.max_tokens - counter.count_text(fixed) - counter.count_text(footer) - 2)
        blocks: dict[str, list[str]] = {}
        for key, share in _PRIORITY:
            lines = getattr(builders, key)(remaining * share // 100)
            if not lines:
                continue
            cost = counter.count_text("\n".join(lines)) + 1
            if cost <= remaining:
                blocks[key] = lines
                remaining -= cost
        text = self._assemble(fixed, blocks, footer)
        # Counters are not additive across lines: measure the whole, and drop the least important until it fits.
        for key, _ in reversed(_PRIORITY):
            if counter.count_text(text) <= request.max_tokens:
                break
            if blocks.pop(key, None) is not None:
                text = self._assemble(fixed, blocks, footer)
        return SummaryResult(text=text, strategy="full")

    def summarize_seed(self, request: SummaryRequest) -> SummaryResult:
        """MiniCode's full-compact summary (``summary.rules_format="seed"``): header, the four lists, the footer.

        An earlier summary among the removed messages is carried after the lists,
        whole while it fits ``max_tokens`` and cut to it otherwise: MiniCode keeps
        its old summary as a system message, so what it said is not lost, and
        none of its items enters the new lists.
        """
        msgs = [m for m in request.messages if m.role != "system"]
        if not msgs:
            raise SummaryError("nothing to summarise: no user or assistant messages before the kept tail")
        counter = request.counter
        tokens = request.tokens_before if request.tokens_before is not None else counter.count_messages(request.messages)
        count = request.messages_before if request.messages_before is not None else len(request.messages)
        stamp = datetime.fromtimestamp(summary_clock(request, self._clock), tz=UTC).strftime("%H:%M:%S")
        lines = [f"[Context compacted at {stamp} - Full Compact] Original: ~{tokens} tokens, {count} messages", "", "## Conversation Summary", ""]
        lines += seed_headline(msgs)
        footer = "\n*Continue from where we left off.*"
        text = "\n".join(lines)
        earlier = [message_plain_text(m) for m in msgs if m.tag in ("summary", "memory") and message_plain_text(m).strip()]
        if not earlier:
            return SummaryResult(text=text + "\n" + footer, strategy="full")
        whole = "\n\n".join(earlier)
        room = request.max_tokens - counter.count_text(text + "\n" + footer)
        # Counters are not additive: measure the whole text, and cut the carried part shorter until it fits.
        for _ in range(4):
            kept = cut_to_tokens(whole, max(0, room), counter)
            if kept != whole:
                kept += f"\n[... {len(whole) - len(kept)} more characters not kept]"
            out = text + "\n\n**Earlier summary:**\n" + kept + "\n" + footer
            over = counter.count_text(out) - request.max_tokens
            if over <= 0 or room <= 0:
                break
            room -= over
        if not kept.strip() or over > 0:
            return SummaryResult(text=text + "\n" + footer, strategy="full")
        return SummaryResult(text=out, strategy="full")

    @staticmethod
    def _assemble(fixed: str, blocks: dict[str, list[str]], footer: str) -> str:
        body = [line for key in DISPLAY if key in blocks for line in blocks[key]]
        return fixed + "\n" + "\n".join(body) + "\n" + footer if body else fixed + "\n" + footer


# (section, percent of the remaining budget it may take), most important first.
_PRIORITY = (
    ("step", 100),
    ("tools", 100),
    ("touched", 100),
    ("errors_headline", 100),
    ("last_error", 50),
    ("earlier", 50),
    ("changed", 40),
    ("users", 75),
    ("decisions", 50),
    ("commands", 60),
    ("errors", 50),
    ("read", 100),
    ("topics", 100),
    ("focus", 100),
)


class _Builders:
    """One method per section: the section's lines within a token allowance, or [] when it has nothing or does not fit."""

    def __init__(self, msgs: list[Message], texts: list[UserText], facts: Facts, terms: list[str], counter: TokenCounter) -> None:
        self.msgs = msgs
        self.texts = texts
        self.facts = facts
        self.terms = terms
        self.counter = counter

    def _focused(self, items: list[str]) -> list[str]:
        # The requested focus goes first; order is otherwise kept.
        return sorted(items, key=lambda t: not _mentions(t, self.terms)) if self.terms else items

    def topics(self, allowance: int) -> list[str]:
        topics = [t.text for t in self.texts if not t.carried]
        items = [_one_line(t, TOPIC_CHARS) for t in self._focused(topics)[:TOPICS]]
        return _fit("**Topics discussed:**", items, allowance, self.counter)

    def _line(self, text: str, allowance: int) -> list[str]:
        return ["", text] if self.counter.count_text(text) + 2 <= allowance else []

    def tools(self, allowance: int) -> list[str]:
        uses = self.facts.tools
        if not uses:
            return []
        return self._line("**Tools used:** " + ", ".join(f"{name} ({n})" for name, n in sorted(uses.items())), allowance)

    def touched(self, allowance: int) -> list[str]:
        recent = self._focused(list(reversed(self.facts.touched)))
        if not recent:
            return []
        more = f" (+{len(recent) - FILES} more)" if len(recent) > FILES else ""
        return self._line("**Files touched (most recent first):** " + ", ".join(recent[:FILES]) + more, allowance)

    def errors_headline(self, allowance: int) -> list[str]:
        errors = self.facts.errors
        if not errors:
            return []
        # The latest errors: older ones were most likely fixed on the way.
        shown = [_one_line(e.line, ERROR_CHARS) for e in errors[-ERRORS:]]
        title = f"**Errors encountered (latest {len(shown)} of {max(self.facts.errors_total, len(errors))}):**"
        return _fit(title, shown, allowance, self.counter, keep_last=True)

    def earlier(self, allowance: int) -> list[str]:
        # An earlier summary without our tags (an LLM's): carry it, cut to the allowance.
        out: list[str] = []
        for m in self.msgs:
            if m.tag != "summary" or _PRIMARY_RE.search(message_plain_text(m)):
                continue
            whole = message_plain_text(m)
            text = cut_to_tokens(whole, max(0, allowance - 10), self.counter)
            if text != whole:
                text += f"\n[... {len(whole) - len(text)} more characters not kept]"
            if text.strip():
                out += ["", "**Earlier summary:**", text]
            allowance -= self.counter.count_text(text) + 10
        return out

    def users(self, allowance: int) -> list[str]:
        title = "**User messages (verbatim, oldest first; the first is the primary request above):**"
        rendered = render_user_messages(self.texts[1:], max(0, allowance - self.counter.count_text(title) - 2), self.counter)
        return ["", title, rendered] if rendered else []

    def changed(self, allowance: int) -> list[str]:
        items = [f"{path} — {'; '.join(what)}" for path, what in reversed(self.facts.changed.items())]
        return _fit("**Files changed (most recent first):**", self._focused(items)[:FILES_CHANGED], allowance, self.counter)

    def read(self, allowance: int) -> list[str]:
        items = self.facts.only_read()
        return _fit("**Files read (most recent first):**", self._focused(items)[:FILES_READ], allowance, self.counter)

    def commands(self, allowance: int) -> list[str]:
        f = self.facts
        items = list(reversed(f.commands))[:COMMANDS]
        title = f"**Commands run (most recent first, {max(f.commands_total, len(f.commands))} in all):**"
        return _fit(title, items, allowance, self.counter)

    def errors(self, allowance: int) -> list[str]:
        f = self.facts
        items = [e.item for e in reversed(f.errors)][:ERRORS_LISTED]
        return _fit(f"**Errors seen ({max(f.errors_total, len(f.errors))} in all, most recent first):**", items, allowance, self.counter)

    def last_error(self, allowance: int) -> list[str]:
        last = next((e for e in reversed(self.facts.errors)), None)
        if last is None or not last.text.strip():
            return []
        for chars in LAST_ERROR_STEPS:
            lines = ["", f"**Last error (verbatim):** {last.source}".rstrip(), f"<last-error>\n{_tail(last.text.strip(chr(10)), chars)}\n</last-error>"]
            if self.counter.count_text("\n".join(lines)) + 1 <= allowance:
                return lines
        return []

    def decisions(self, allowance: int) -> list[str]:
        title = "**Decisions and pending work (the assistant's words, oldest first):**"
        return _fit(title, self.facts.decisions, allowance, self.counter, keep_last=True)

    def step(self, allowance: int) -> list[str]:
        return _fit("**Current step:**", self.facts.step, allowance, self.counter)

    def focus(self, allowance: int) -> list[str]:
        if not self.terms:
            return []
        lines = _focus_lines(self.msgs, self.terms, max(0, allowance - 12), self.counter)
        return ["", "**Lines relevant to the requested focus:**", *lines] if lines else []


def _focus_lines(msgs: list[Message], terms: list[str], budget: int, counter: TokenCounter) -> list[str]:
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
