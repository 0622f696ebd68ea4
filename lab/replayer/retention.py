"""Retention: how much of what matters is still in a compacted context.

Six parts, each scored separately as kept / total, with where each item went:

    first_request   the user's first request, verbatim
    user_messages   every user text message, verbatim
    file_paths      every file path the agent named in a tool call's input:
                    path keys (Read, Edit, Write) and the paths inside shell
                    commands (``cat a/b.py``, ``sed -n 1,20p x.py``, ``grep -rn
                    foo src/``), found by ``mentions.py``
    errors          the error line of every failed result: a result flagged as
                    an error, a shell result with a non-zero exit code
                    (``<returncode>1</returncode>``, "exit code 1") or one that
                    holds a traceback; the line is its last error line (a
                    traceback's exception, an ``error:`` line), else its last
                    non-empty line
    planted_facts   facts the generator planted (``transcript.meta.planted_facts``)
    recoverable     removed tool output that can still be read back from the
                    spill store through a path the context names

"Where" is ``tail`` (found in a message the pipeline did not write: the
system prompt, kept messages and their stubs), ``summary`` (found in a
summary, memory or truncation note), ``spill`` (only in a spilled result
that is still recoverable) or ``nowhere``. An item counts as kept unless it
is nowhere. Matching is by exact substring: a summary that paraphrases a
user message does not keep it.

A removed tool output is a result whose original content no longer appears
verbatim in an intact tool result of the context (spilled, deduplicated,
cleared, masked, or dropped with its message). It is recoverable when its
spill file exists in the store and the context names the path, either in
text (MewCode's "[saved to] PATH") or on the stub itself (``spill_path``, the
message's ``_persisted_path`` in MiniCode, whose preview names only the file).

The score is the weighted mean of the part shares, over the parts that had
anything to keep; weights come from the replay settings (``ReplaySettings.retention``).

Items read as a person would name them: a path, an error line, a user
message, and for removed output the tool and what it ran on (``Read
app/big.py``, ``bash: cat a/b.py``), never a tool-call id. An item that is
nowhere says what removed it (``lost_to``): "recorded compaction" when its
last appearance before ``upto`` lies before the newest compaction recorded
in the transcript there (see ``recall.py``), else "this config".
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from typing import NamedTuple
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ..core.identity import identity_key
from ..core.lru import SharedLRU
from ..core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent
from .settings import RetentionWeights
from ..core.store import SpillStore
from ..core.summarizers.rules import message_plain_text, tool_path, user_texts
from ..errors import StoreError
from .mentions import command_text, error_line, exit_code, kind, shell_mentions
from .recall import CONFIG, RECORDED, recorded_boundaries
from .report import Retention, RetentionItem, RetentionPart

__all__ = ["PARTS", "MAX_SHARED_TARGETS", "Targets", "targets", "shared_targets", "clear_shared_targets", "retention"]

PARTS = ("first_request", "user_messages", "file_paths", "errors", "planted_facts", "recoverable")
# Item labels in reports are cut here; matching always uses the whole text.
LABEL_CHARS = 200
_PIPELINE_TAGS = ("summary", "memory", "truncation_note", "placeholder")


class _Item(NamedTuple):
    """One item of a part, as ``_Items`` gives it."""

    text: str
    # Index of the first raw message it appears in: it only counts for requests after that.
    at: int
    # Index of the last raw message that names it (the attribution of a loss looks at it).
    last: int


class _Items:
    """A part's items, as columns: a transcript's targets hold an item per user message, path and error line
    for as long as the transcript is replayed, and an object per item (and an int object per index) was several
    times the size of the column entries. Iterated, an ``_Item`` per item, made as it is read."""

    __slots__ = ("text", "at", "last")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.at = array("q")
        self.last = array("q")

    def add(self, text: str, at: int) -> int:
        """Append an item first seen at ``at`` (and last seen there, so far); returns its position."""
        self.text.append(text)
        self.at.append(at)
        self.last.append(at)
        return len(self.text) - 1

    def __len__(self) -> int:
        return len(self.text)

    def __iter__(self) -> Iterator[_Item]:
        return map(_Item._make, zip(self.text, self.at, self.last, strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Items):
            return NotImplemented
        return (self.text, self.at, self.last) == (other.text, other.at, other.last)

    __hash__ = None  # type: ignore[assignment]


class _Results:
    """Every tool output the transcript holds intact, as columns (see ``_Items``): the call's id, the output,
    the raw index of its message, and the call that produced it (None: no call in the transcript has its id),
    for its label (``Targets.label``)."""

    __slots__ = ("tool_use_id", "content", "at", "use")

    def __init__(self) -> None:
        self.tool_use_id: list[str] = []
        self.content: list[str] = []
        self.at = array("q")
        self.use: list[ToolUseBlock | None] = []

    def add(self, tool_use_id: str, content: str, at: int, use: ToolUseBlock | None) -> None:
        self.tool_use_id.append(tool_use_id)
        self.content.append(content)
        self.at.append(at)
        self.use.append(use)

    def __len__(self) -> int:
        return len(self.content)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Results):
            return NotImplemented
        return (self.tool_use_id, self.content, self.at, self.use) == (other.tool_use_id, other.content, other.at, other.use)

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Targets:
    """What a whole transcript asks to keep, each item with the message index where it appears."""

    first_request: _Items = field(default_factory=_Items)
    user_messages: _Items = field(default_factory=_Items)
    file_paths: _Items = field(default_factory=_Items)
    errors: _Items = field(default_factory=_Items)
    planted_facts: _Items = field(default_factory=_Items)
    results: _Results = field(default_factory=_Results)
    # Raw indices of the compactions the original agent recorded in the transcript.
    boundaries: list[int] = field(default_factory=list)
    # Labels of the results asked for so far, by position in ``results``: made when a result is first reported
    # removed, not a string per tool output of the transcript held for as long as its targets are.
    labels: dict[int, str] = field(default_factory=dict, compare=False)

    def label(self, k: int) -> str:
        """What a person would call the call that produced result ``k``: "Read app/big.py", "bash: cat a/b.py"."""
        found = self.labels.get(k)
        if found is None:
            r = self.results
            found = self.labels.setdefault(k, _call_label(r.use[k], r.content[k]) or r.tool_use_id[k])
        return found


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def targets(raw: Sequence[Message], planted_facts: Iterable[str] = ()) -> Targets:
    """Collect every item from the raw history, once per transcript."""
    out = Targets(boundaries=recorded_boundaries(raw))
    index = {m.id: i for i, m in enumerate(raw)}
    for k, t in enumerate(user_texts(raw)):
        at = index.get(t.id.split("#", 1)[0], 0)
        if k == 0:
            out.first_request.add(t.text, at)
        out.user_messages.add(t.text, at)
    # Each path and error line's position in its part.
    paths: dict[str, int] = {}
    errors: dict[str, int] = {}
    uses: dict[str, ToolUseBlock] = {}
    for i, m in enumerate(raw):
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                uses[b.id] = b
                for path in _paths(b):
                    _note(paths, out.file_paths, path, i)
            elif isinstance(b, ToolResultBlock):
                line = _error_of(b)
                if line:
                    _note(errors, out.errors, line, i)
                if b.content and b.compacted is None:
                    out.results.add(b.tool_use_id, b.content, i, uses.get(b.tool_use_id))
    for fact in dict.fromkeys(f for f in planted_facts if f):
        at = next((i for i, m in enumerate(raw) if _mentions(m, fact)), 0)
        out.planted_facts.add(fact, at)
    return out


# Transcripts whose targets are kept for the next replay (a slider's moves, a compare's configs).
MAX_SHARED_TARGETS = 4
_SHARED_TARGETS: SharedLRU[Targets] = SharedLRU(MAX_SHARED_TARGETS)


def shared_targets(raw: Sequence[Message], planted_facts: Iterable[str] = ()) -> Targets:
    """``targets(raw, planted_facts)``, built once per transcript and shared by every later replay of it.

    What a transcript asks to keep depends on its messages alone, yet collecting
    it took a tenth of a second on a 2,000-request session, paid again by every
    replay of a slider move. Keyed by the message objects' identities (the entry
    holds the messages, so no id is reused while it lives); callers treat the
    result as read-only, as ``retention`` does.
    """
    facts = tuple(planted_facts)
    # A 16-byte digest of the identities, and the messages held in the one tuple repair's memo and content recall's history hold too: the
    # ids' bytes and a tuple of the messages were 16 bytes a message, kept to the end of every replay.
    key, held = identity_key(raw)
    return _SHARED_TARGETS.get((key, facts), lambda: targets(held.messages, facts), holds=held)


def clear_shared_targets() -> None:
    """Forget the shared targets (``lab.replayer.clear_caches`` calls this, so a "first replay" pays for them again)."""
    _SHARED_TARGETS.clear()


def _note(seen: dict[str, int], items: _Items, text: str, i: int) -> None:
    k = seen.get(text)
    if k is None:
        seen[text] = items.add(text, i)
    else:
        items.last[k] = i


def _paths(block: ToolUseBlock) -> list[str]:
    """The files a call names: its path key, and the paths of its shell command line (a heredoc's body left out)."""
    found: list[str] = []
    path = tool_path(block)
    if path:
        found.append(path)
    command = _command(block)
    if command:
        found += _shell_paths(command.split("<<", 1)[0])
    return list(dict.fromkeys(found))


# --- the file paths of a shell command line ---------------------------------------------------
#
# The mentions' tokens (``shell_mentions``) serve needed-later recall, where any name counts. As file
# paths they over-count: a URL's pieces ("8080/api/trajectories", "example.com/x.tar.gz"), an
# absolute path without its leading slash ("Users/me/x.py"), a linter's subcommand ("ruff check"
# gave "check"), a branch name ("git checkout -b feature/x"), the code of "sed 's/a/b/'" or
# "python -c 'import sys'". So a segment of the line at a time, a mention is a file path when it is
# not inside a URL nor a program's code argument, the program does not take refs or subcommands
# there, and a bare word (no "/" nor ".") is an argument of a program whose arguments are files.

_URL = re.compile(r"[A-Za-z][\w+.-]*://[^\s'\"<>|;&)]*")
_SEGMENTS = re.compile(r"&&|\|\||[;|&\n]")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
# Programs whose quoted arguments are code, not file names.
_CODE_PROGRAMS = frozenset("sed awk gawk perl python python3 node ruby jq".split())
# Programs whose arguments are refs, repos, subcommands or numbers; only what follows "--" may be a file.
_REF_PROGRAMS = frozenset("git gh hub npm npx yarn pnpm make docker kubectl".split())
# Programs whose bare arguments are files ("cat Makefile", "mv logs logs.backup").
_BARE_FILE_PROGRAMS = frozenset("cat head tail less more nl wc ls cd touch rm cp mv mkdir rmdir chmod stat file diff vim vi nano tar unzip source".split())
# What may stand before a path as written: the line's start, a space, a quote, "=", "(" or ":" (an option's value).
_BEFORE = r"(?:^|(?<=[\s'\"=(:]))"


def _program(words: list[str]) -> str:
    for word in words:
        if "=" not in word or word.startswith("-"):
            return word.strip("'\"").rsplit("/", 1)[-1]
    return ""


def _as_written(mention: str, segment: str) -> str | None:
    """The mention as the segment writes it as a word: itself, or with the leading "/" (or "~/") the tokens dropped."""
    for prefix in ("", "/", "~/"):
        if re.search(_BEFORE + re.escape(prefix + mention) + r"(?=/?(?:$|[\s'\");|&<>:,]))", segment):
            return prefix + mention
    return None


def _shell_paths(line: str) -> list[str]:
    """The file paths a shell command line names, each as written (see the comment above)."""
    whole = command_text(line)
    found: list[str] = []
    # Separators inside quotes ("python -c 'import a; b'") do not end a segment: hidden while splitting.
    masked = _QUOTED.sub(lambda q: re.sub(r"[;|&\n]", "\x00", q.group()), line)
    for part in _SEGMENTS.split(masked):
        segment = part.replace("\x00", ";")
        words = segment.split()
        program = _program(words)
        if not program:
            continue
        if program in _REF_PROGRAMS:
            if "--" not in words:
                continue
            segment = segment.split(" -- ", 1)[-1]
        # URLs and a code program's quoted code are blanked out: what they hold is not a file path.
        blank = _URL.sub(" ", segment)
        if program in _CODE_PROGRAMS:
            blank = _QUOTED.sub(" ", blank)
        for m in sorted(shell_mentions(blank)):
            if m == whole or " " in m or kind(m) != "path":
                continue
            bare = "/" not in m and "." not in m
            if bare and program not in _BARE_FILE_PROGRAMS and not re.search(_BEFORE + re.escape(m) + "/", blank):
                continue  # a bare word is a file only to a file program, or as a folder ("tests/")
            written = _as_written(m, blank)
            if written is not None and written != program:
                found.append(written)
    return found


def _command(block: ToolUseBlock) -> str | None:
    for key in ("command", "cmd"):
        value = block.input.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def _error_of(block: ToolResultBlock) -> str | None:
    """The line that names a failed result's error, or None when the result did not fail."""
    text = block.content
    code = exit_code(text) if "<returncode>" in text or "xit code" in text or "exited with" in text else None
    failed = block.is_error or (code is not None and code != 0) or "Traceback (most recent call last)" in text
    return error_line(text) if failed else None


def _call_label(use: ToolUseBlock | None, content: str) -> str:
    if use is None:
        return f"result of an unknown call: {_first_line(content)[:80]}"
    path = tool_path(use)
    if path:
        return f"{use.name} {path}"
    command = _command(use)
    if command:
        return f"{use.name}: {command_text(command)}"
    return f"{use.name}: {_first_line(content)[:80]}"


def _mentions(message: Message, text: str) -> bool:
    return any(text in s for s in _strings(message))


def _strings(message: Message) -> Iterable[str]:
    """Every piece of text a message puts in a prompt, tool inputs as their raw values (not JSON-escaped)."""
    for b in message.content:
        if isinstance(b, TextBlock):
            yield b.text
        elif isinstance(b, ToolResultBlock):
            yield b.content
        elif isinstance(b, ThinkingBlock):
            yield b.thinking
        elif isinstance(b, ToolUseBlock):
            yield b.name
            yield from _values(b.input)


def _values(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _values(v)


class _Context:
    """The texts of one context, split by who wrote them, plus its spill references."""

    def __init__(self, context: Sequence[Message], store: SpillStore | None, spill_paths: Mapping[str, str]) -> None:
        tail: list[str] = []
        summary: list[str] = []
        self.intact: set[str] = set()
        on_stubs: set[str] = set()
        self.stub_paths: dict[str, str] = {}
        for m in context:
            if not is_sent(m):
                continue
            texts = summary if m.tag in _PIPELINE_TAGS else tail
            texts.extend(_strings(m))
            if sum(isinstance(b, TextBlock) for b in m.content) > 1:
                # A user message's words are its text blocks joined (``user_texts``); kept whole, they are found here.
                texts.append(message_plain_text(m))
            for b in m.content:
                if isinstance(b, ToolResultBlock):
                    if b.compacted is None:
                        self.intact.add(b.content)
                    elif b.spill_path:
                        on_stubs.add(b.spill_path)
                        self.stub_paths[b.tool_use_id] = b.spill_path
        self.tail = "\n\x00\n".join(tail)
        self.summary = "\n\x00\n".join(summary)
        self.store = store
        self.spill_paths = spill_paths
        self._on_stubs = on_stubs
        self._named: dict[str, bool] = {}
        self._spilled_joined: str | None = None
        self._texts: dict[str, str] = {}

    def where(self, text: str, *, spills: bool = False) -> str:
        if text in self.tail:
            return "tail"
        if text in self.summary:
            return "summary"
        if spills and text in self._spilled():
            return "spill"
        return "nowhere"

    def recoverable(self, tool_use_id: str) -> bool:
        path = self.stub_paths.get(tool_use_id) or self.spill_paths.get(tool_use_id)
        return bool(path) and self._reachable(path)  # type: ignore[arg-type]

    def _reachable(self, path: str) -> bool:
        hit = self._named.get(path)
        if hit is None:
            named = path in self._on_stubs or path in self.tail or path in self.summary
            hit = named and self.store is not None and self.store.exists(path)
            self._named[path] = hit
        return hit

    def _spilled(self) -> str:
        # Every reachable spill file's text, read once per context and searched in one C-speed pass per item.
        if self._spilled_joined is None:
            self._spilled_joined = "\n\x00\n".join(self.spilled_texts())
        return self._spilled_joined

    def spilled_texts(self) -> list[str]:
        if self.store is None:
            return []
        for path in set(self.spill_paths.values()) | self._on_stubs:
            if path not in self._texts and self._reachable(path):
                try:
                    self._texts[path] = self.store.read(path)
                except StoreError:
                    self._texts[path] = ""
        return [t for p, t in self._texts.items() if t and self._reachable(p)]


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 3] + "..."


def _lost_to(last: int, boundary: int | None) -> str:
    return RECORDED if boundary is not None and last < boundary else CONFIG


def _newest_boundary(goals: Targets, upto: int) -> int | None:
    before = [b for b in goals.boundaries if b < upto]
    return before[-1] if before else None


def _part(items: Iterable[_Item], ctx: _Context, upto: int, *, spills: bool, boundary: int | None) -> RetentionPart:
    found: list[RetentionItem] = []
    for it in items:
        if it.at >= upto:
            continue
        where = ctx.where(it.text, spills=spills)
        # The last appearance that could still have been kept: the one before this request.
        lost = _lost_to(it.last if it.last < upto else it.at, boundary) if where == "nowhere" else None
        found.append(RetentionItem.of(_label(it.text), where, lost))
    return RetentionPart(kept=sum(1 for f in found if f.where != "nowhere"), total=len(found), items=found)


def retention(
    context: Sequence[Message],
    goals: Targets,
    *,
    upto: int,
    store: SpillStore | None = None,
    spill_paths: Mapping[str, str] | None = None,
    weights: RetentionWeights | None = None,
) -> Retention:
    """Score ``context`` against the items of ``goals`` that appeared before raw message ``upto``."""
    ctx = _Context(context, store, spill_paths or {})
    boundary = _newest_boundary(goals, upto)
    parts = {
        "first_request": _part(goals.first_request, ctx, upto, spills=False, boundary=boundary),
        "user_messages": _part(goals.user_messages, ctx, upto, spills=False, boundary=boundary),
        "file_paths": _part(goals.file_paths, ctx, upto, spills=False, boundary=boundary),
        "errors": _part(goals.errors, ctx, upto, spills=True, boundary=boundary),
        "planted_facts": _part(goals.planted_facts, ctx, upto, spills=True, boundary=boundary),
    }
    results = goals.results
    removed = [k for k, (at, content) in enumerate(zip(results.at, results.content, strict=True)) if at < upto and content not in ctx.intact]
    items = []
    for k in removed:
        spill = ctx.recoverable(results.tool_use_id[k])
        items.append(RetentionItem.of(_label(goals.label(k)), "spill" if spill else "nowhere", None if spill else _lost_to(results.at[k], boundary)))
    kept_chars = sum(len(results.content[k]) for k, it in zip(removed, items, strict=True) if it.where == "spill")
    parts["recoverable"] = RetentionPart(
        kept=sum(1 for it in items if it.where == "spill"),
        total=len(items),
        items=items,
        kept_chars=kept_chars,
        total_chars=sum(len(results.content[k]) for k in removed),
    )
    w = (weights or RetentionWeights()).model_dump()
    scored = [(w[name], part.kept / part.total) for name, part in parts.items() if part.total and w[name] > 0]
    total_weight = sum(x for x, _ in scored)
    score = sum(x * s for x, s in scored) / total_weight if total_weight else None
    return Retention(parts=parts, weights=w, score=score)
