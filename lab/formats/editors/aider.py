"""Aider: its chat history (``.aider.chat.history.md``) and its LLM log (``.aider.llm.history``).

Both files are plain text; ``aider_chat`` and ``aider_llm`` cut them up and
this module builds the transcript.

**Chat history.** The file collects every session run in the repository, and
each session is a new conversation (aider starts from an empty chat unless
told to restore one). So the *last* session that has a user or assistant turn
is imported; a warning says how many others there are (they are other
conversations, not skipped records of this one). ``read(path, session=k)`` picks another one (an index into
the sessions with turns, negative from the end); ``list_sessions`` and
``read_session`` name them by that index as text, "0" first in the file,
for ``lab.formats.load(path, session=...)``. In a session:

* ``#### `` lines are the user's turn. Aider commands (``/add``, ``/run``...)
  never reach the model and are skipped (``aider_command``), except those
  that send their text to it (``/ask``, ``/code``, ``/architect``,
  ``/context``), which keep the text;
* in architect mode the architect's reply is an assistant turn, and aider
  then hands it to the editor model as a user turn (written as ``#### ``
  lines again), whose reply holds the edit blocks: both turns are kept, as
  the two requests aider sent;
* ``> `` notices are aider's, never the model's: a token report
  ("Tokens: 2.3k sent, 1.1k cache write, 4.5k cache hit, 120 received.")
  becomes the usage of the reply before it (aider rounds to 0.1k, and its
  "sent" is taken to include the cache terms), with the message's cost from
  "Cost: $0.0123 message" as the recorded cost; "Applied edit to PATH" becomes
  the result of that reply's edits of PATH; "Main model: NAME" gives the
  model; every other notice line is left out;
* the rest is the model's reply. Its edit blocks (``aider_edits``) become
  ``edit`` calls (``{file_path, old_string, new_string}``) and, for whole
  files, ``write`` calls (``{file_path, content}``). Their results come from
  the notices; an edit aider reported failing gets an error result, and one
  with no notice at all gets a synthetic "Applied edit" result, counted in a
  warning.

Notices and commands are aider's own bookkeeping, never sent to the model:
they are counted in one line of ``notes.dropped`` ("aider's own bookkeeping,
never sent to the model: 271 notice lines, 7 commands (/add 5, /run 2)"),
not as skipped records. Counted as skipped they would weigh against the
history's messages in the misread check (``lab.formats.sanity``), and a
long architect-mode history, which writes more notice lines than turns,
was refused as a misread. Any line ending (``\n``, ``\r\n``, ``\r``) reads.

When a ``.aider.llm.history`` sits beside the chat history, the system prompt
aider sent in that session (the system messages of its last request logged
after the session started) is added as the first message. The log holds no
usage, so usage still comes from the token reports.

**LLM log.** Loaded on its own, the log's last request is the conversation,
followed by the reply logged after it; earlier requests and replies are
counted (``earlier_request``, ``response``). Its SEARCH/REPLACE blocks become
calls as above, with synthetic results (a log of requests records no
outcome); whole-file blocks stay text, since no notice confirms them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from ...core.messages import Block, ImportNotes, Message, TextBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import HistoryBuilder
from .aider_chat import SESSION_START, Item, Session, parse_chat_history
from .aider_edits import Edit, normalise_path, split_edits
from .aider_llm import HEADER, Section, parse_llm_history
from .. import session_pick
from ..jsonio import check_file
from ..registry import FileHead, Format, SessionSource

__all__ = [
    "FORMAT", "NAME", "LLM_HISTORY", "read", "read_chat_history", "read_llm_history", "list_sessions", "read_session", "each_session", "sniff",
    "parse_tokens", "parse_cost", "is_chat_history_head",
]  # fmt: skip

NAME = "aider"
# The name aider gives its LLM log; beside a chat history it supplies the system prompt.
LLM_HISTORY = ".aider.llm.history"

# Commands whose text aider sends to the model as the user's message.
_CHAT_COMMANDS = {"/ask", "/code", "/architect", "/context"}
_APPLIED = re.compile(r"^(?:Applied|Did not apply) edit to (?P<path>.+?)(?: \(--dry-run\))?\s*$", re.M)
_FAILED = re.compile(r"SEARCH/REPLACE blocks? failed to match|did not conform to the edit format|Malformed", re.I)
_MODEL = re.compile(r"^(?:Main )?[Mm]odel: (\S+)")
_NUM = r"([\d.,]+)\s*([kKmM]?)"
_COST = re.compile(r"Cost: \$([\d.,]+) message")
_TOKENS = re.compile(
    rf"Tokens: {_NUM} sent(?:, {_NUM} cache write)?(?:, {_NUM} cache hit)?, {_NUM} received"
)


def _count(number: str | None, unit: str | None) -> int:
    if not number:
        return 0
    try:
        value = float(number.replace(",", ""))
    except ValueError:
        return 0
    scale = {"k": 1_000, "m": 1_000_000}.get((unit or "").lower(), 1)
    return int(round(value * scale))


def parse_tokens(text: str) -> Usage | None:
    """The usage in an aider token report, or None when the text holds none."""
    m = _TOKENS.search(text)
    if m is None:
        return None
    sent, write, hit, received = (_count(m.group(k), m.group(k + 1)) for k in (1, 3, 5, 7))
    return Usage(input_tokens=max(0, sent - write - hit), output_tokens=received, cache_read_tokens=hit, cache_write_tokens=write,
                 cost_usd=parse_cost(text))


def parse_cost(text: str) -> float | None:
    """The cost of one message in an aider report ("Cost: $0.0123 message, $0.45 session."), or None."""
    m = _COST.search(text)
    if m is None:
        return None
    try:
        return float(m.group(1).replace(",", ""))
    except ValueError:
        return None


def _read_text(path: Path) -> str:
    p = check_file(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot open: {exc.strerror or exc}", file=str(p)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"not UTF-8 text (byte at offset {exc.start})", file=str(p), expected="an aider history file") from None
    if not text.strip():
        raise TranscriptError("empty file", file=str(p), expected="an aider history file")
    return text


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


# -- replies and their edits ------------------------------------------------------------------


class _Replies:
    """Adds assistant replies, turning their edit blocks into tool calls answered from aider's notices."""

    def __init__(self, builder: HistoryBuilder) -> None:
        self.builder = builder
        self.edits = 0
        self.synthetic = 0
        self.unnamed = 0

    def add(
        self,
        text: str,
        key: str,
        *,
        usage: Usage | None = None,
        applied: dict[str, str] | None = None,
        failure: str | None = None,
        timestamp: datetime | None = None,
    ) -> None:
        applied = applied or {}
        segments, unnamed = split_edits(text, confirmed=set(applied))
        self.unnamed += unnamed
        blocks: list[Block] = []
        calls: list[tuple[str, Edit]] = []
        for n, seg in enumerate(segments):
            if isinstance(seg, str):
                blocks.append(TextBlock(text=seg))
                continue
            if seg.whole:
                use = self.builder.use(None, "write", {"file_path": seg.path, "content": seg.new}, key=f"{key}.{n}")
            else:
                use = self.builder.use(None, "edit", {"file_path": seg.path, "old_string": seg.old, "new_string": seg.new}, key=f"{key}.{n}")
            blocks.append(use)
            calls.append((use.id, seg))
        if not blocks:
            return
        self.builder.add("assistant", blocks, key=key, usage=usage, timestamp=timestamp)
        self.edits += len(calls)
        for tool_id, edit in calls:
            notice = applied.get(normalise_path(edit.path))
            if notice is not None:
                self.builder.result(tool_id, notice, key=f"{key}.r", canonical=True)
            elif failure is not None:
                self.builder.result(tool_id, failure, key=f"{key}.r", is_error=True, canonical=True)
            else:
                self.synthetic += 1
                self.builder.result(tool_id, f"Applied edit to {edit.path}", key=f"{key}.r", canonical=True)

    def warn(self, notes: ImportNotes, source: str) -> None:
        if self.unnamed:
            notes.warnings.append(f"{self.unnamed} SEARCH/REPLACE blocks named no file; kept as text")
        if not self.edits:
            return
        notes.warnings.append(
            f"aider writes its edits as text, not as function calls: {self.edits} edit blocks were modelled as "
            "edit/write tool calls with results, so requests built from this transcript differ in shape from what aider sent"
        )
        if self.synthetic:
            notes.warnings.append(f"{self.synthetic} edits have no outcome in the {source}; they were given a synthetic 'Applied edit' result")


# -- chat history ----------------------------------------------------------------------------


class _Bookkeeping:
    """Aider's notices and commands in the session read: never the model's input, so never skipped records."""

    def __init__(self) -> None:
        self.notices = 0
        self.commands: dict[str, int] = {}

    def note(self, notes: ImportNotes) -> None:
        if not self.notices and not self.commands:
            return
        parts = [f"{self.notices} notice line{'s' if self.notices != 1 else ''}"] if self.notices else []
        if self.commands:
            total = sum(self.commands.values())
            named = ", ".join(f"{c} {k}" for c, k in sorted(self.commands.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{total} command{'s' if total != 1 else ''} ({named})")
        notes.dropped.append(f"aider's own bookkeeping, never sent to the model: {', '.join(parts)}")


def _is_command(item: Item) -> bool:
    """A user item that is an aider command the model never sees (not one of ``_CHAT_COMMANDS`` with text)."""
    text = item.text.strip()
    if not text.startswith("/"):
        return False
    command, _, rest = text.partition(" ")
    return not (command in _CHAT_COMMANDS and rest.strip())


def _user_text(item: Item, notes: ImportNotes, aside: _Bookkeeping) -> str | None:
    text = item.text.strip()
    if not text or text == "<blank>":
        notes.skip("empty_input")
        return None
    if text.startswith("/"):
        command, _, rest = text.partition(" ")
        if command in _CHAT_COMMANDS and rest.strip():
            return rest.strip()
        # Only the command's own word: its arguments can be paths or shell text, and several lines long.
        name = command.split("\n", 1)[0][:40]
        aside.commands[name] = aside.commands.get(name, 0) + 1
        return None
    return text


def _notices(items: Sequence[Item], start: int) -> tuple[list[Item], int]:
    end = start
    while end < len(items) and items[end].kind == "notice":
        end += 1
    return list(items[start:end]), end


def _read_notices(run: list[Item], aside: _Bookkeeping, meta: dict[str, str]) -> tuple[Usage | None, dict[str, str], str | None]:
    """A run of notices after a reply: (usage, normalised path -> notice, failure text)."""
    usage: Usage | None = None
    applied: dict[str, str] = {}
    failure: list[str] = []
    for item in run:
        text = item.text
        report = parse_tokens(text)
        if report is not None:
            usage = report
        elif usage is not None and usage.cost_usd is None and (cost := parse_cost(text)) is not None:
            # A cost report on a notice of its own, after the token report it prices.
            usage = usage.model_copy(update={"cost_usd": cost})
        for m in _APPLIED.finditer(text):
            applied[normalise_path(m.group("path"))] = m.group(0).strip()
        for line in item.lines:
            if _TOKENS.search(line) or _APPLIED.match(line) or line.startswith("Cost: "):
                continue
            model = _MODEL.match(line)
            if model:
                meta.setdefault("model", model.group(1))
            if _FAILED.search(line) or failure:
                failure.append(line)
            if line.strip():
                aside.notices += 1
    return usage, applied, ("\n".join(failure).strip() or None)


def _system_from_log(chat: Path, session: Session, later: Session | None, notes: ImportNotes) -> list[Message]:
    log = chat.with_name(LLM_HISTORY)
    if not log.is_file() or session.started is None:
        return []
    try:
        start = datetime.fromisoformat(session.started)
        end = datetime.fromisoformat(later.started) if later is not None and later.started else None
        sections = parse_llm_history(log.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        notes.warnings.append(f"{LLM_HISTORY} beside the chat history could not be read; no system prompt added")
        return []
    requests = [
        s for s in sections
        if s.kind == "TO LLM" and s.timestamp is not None and s.timestamp >= start and (end is None or s.timestamp < end)
    ]
    if not requests:
        return []
    texts = [text for role, text in requests[-1].messages if role == "system" and text.strip()]
    return [Message(role="system", content=(TextBlock(text="\n\n".join(texts)),), id="system-0")] if texts else []


def _with_turns(sessions: list[Session]) -> list[Session]:
    return [s for s in sessions if any(i.kind in ("user", "assistant") for i in s.items)]


def read_chat_history(path: Path, session: int | None = None, *, text: str | None = None, parsed: list[Session] | None = None) -> Transcript:
    """Import one session of an aider chat history (the last with turns unless ``session`` says); ``parsed``:
    the file's sessions as ``parse_chat_history`` gave them, when the caller reads several."""
    path = Path(path)
    file = str(path)
    sessions = parsed if parsed is not None else parse_chat_history(_read_text(path) if text is None else text)
    with_turns = _with_turns(sessions)
    if not with_turns:
        raise TranscriptError("no user or assistant turn in any session", file=file, expected="an aider chat history with '#### ' user lines")
    try:
        chosen = with_turns[-1 if session is None else session]
    except IndexError:
        raise TranscriptError(f"no session {session} (the file has {len(with_turns)} with turns)", file=file) from None
    # The other sessions are other conversations, not records of this one that were skipped: counted as
    # skipped, a history of many short sessions would look like a misread (lab.formats.sanity).
    notes = ImportNotes(records_read=len(chosen.items))
    others, empty = len(with_turns) - 1, len(sessions) - len(with_turns)
    if others or empty:
        at = with_turns.index(chosen)
        also = f" and {empty} without a turn" if empty else ""
        notes.warnings.append(
            f"the history holds {len(with_turns)} sessions with turns{also}; read session {at} "
            f"({'the last' if at == len(with_turns) - 1 else 'as asked'}); --session N (0 first) picks another"
        )
    builder = HistoryBuilder(notes)
    replies = _Replies(builder)
    aside = _Bookkeeping()
    meta: dict[str, str] = {}
    items = chosen.items
    i = 0
    while i < len(items):
        item = items[i]
        if item.kind == "user":
            text = _user_text(item, notes, aside)
            if text is not None:
                builder.close_results()
                builder.add("user", [TextBlock(text=text)], key=f"u{item.line}")
            i += 1
        elif item.kind == "assistant":
            run, i = _notices(items, i + 1)
            usage, applied, failure = _read_notices(run, aside, meta)
            replies.add(item.text, f"a{item.line}", usage=usage, applied=applied, failure=failure)
        else:
            run, i = _notices(items, i)
            _read_notices(run, aside, meta)
    messages = builder.finish()
    aside.note(notes)
    replies.warn(notes, "chat history")
    later = sessions[sessions.index(chosen) + 1] if sessions.index(chosen) + 1 < len(sessions) else None
    system = _system_from_log(path, chosen, later, notes)
    title = f"aider chat started at {chosen.started}" if chosen.started else None
    out_meta = TranscriptMeta(source_format=NAME, model=meta.get("model"), title=title, session_id=chosen.started, source_path=file)
    return Transcript(meta=out_meta, messages=system + messages, notes=notes)


# -- LLM log ---------------------------------------------------------------------------------


def _reply_after(sections: list[Section], request: Section) -> Section | None:
    after = sections[sections.index(request) + 1 :]
    for s in after:
        if s.kind == "TO LLM":
            return None
        if s.kind == "LLM RESPONSE":
            return s
    return None


def read_llm_history(path: Path, *, text: str | None = None) -> Transcript:
    """Import the last request (and its reply) of an aider LLM log."""
    path = Path(path)
    file = str(path)
    sections = parse_llm_history(_read_text(path) if text is None else text)
    requests = [s for s in sections if s.kind == "TO LLM"]
    if not requests:
        raise TranscriptError("no 'TO LLM' request in the log", file=file, expected="an aider .aider.llm.history")
    last = requests[-1]
    reply = _reply_after(sections, last)
    notes = ImportNotes(records_read=len(sections))
    if len(requests) > 1:
        notes.skip("earlier_request", len(requests) - 1)
    unused = len(sections) - len(requests) - (reply is not None)
    if unused:
        notes.skip("response", unused)
    builder = HistoryBuilder(notes)
    replies = _Replies(builder)
    turns = list(last.messages) + (list(reply.messages) if reply is not None else [])
    for n, (role, text) in enumerate(turns):
        stamp = reply.timestamp if reply is not None and n >= len(last.messages) else None
        if not text.strip():
            notes.skip("empty_message")
        elif role == "assistant":
            replies.add(text, f"m{n}", timestamp=stamp)
        elif role in ("system", "user"):
            builder.close_results()
            builder.add("system" if role == "system" else "user", [TextBlock(text=text)], key=f"m{n}")
        else:
            notes.skip(f"role:{role}")
    messages = builder.finish()
    if not messages:
        raise TranscriptError("the last request holds no messages", file=file, where=f"line {last.line}")
    replies.warn(notes, "LLM log")
    meta = TranscriptMeta(source_format=NAME, source_path=file, session_id=last.timestamp.isoformat() if last.timestamp else None)
    return Transcript(meta=meta, messages=messages, notes=notes)


def read(path: Path, session: int | None = None) -> Transcript:
    """Import an aider chat history or LLM log, whichever the file is."""
    path = Path(path)
    text = _read_text(path)
    if HEADER.match(_first_line(text)):
        return read_llm_history(path, text=text)
    return read_chat_history(path, session, text=text)


# -- picking a session -----------------------------------------------------------------------
# Aider's sessions have no id: each is named by its index, in file order, among those with turns
# (the ones ``read_chat_history`` can import), so appending a session never renames the others.


def list_sessions(path: Path) -> list[session_pick.SessionInfo]:
    """The sessions of a chat history that have turns, newest (last in the file) first."""
    listed = [
        session_pick.SessionInfo(
            id=str(n),
            title=f"aider chat started at {s.started}" if s.started else None,
            # Turns, without the commands the import leaves out (aider's bookkeeping, not the model's input).
            messages=sum(1 for i in s.items if i.kind == "assistant" or (i.kind == "user" and not _is_command(i))),
            # The file records when a session started, not when it was last updated.
            updated=None,
            format=NAME,
        )
        for n, s in enumerate(_with_turns(parse_chat_history(_read_text(Path(path)))))
    ]
    return listed[::-1]


def read_session(path: Path, session: str) -> Transcript:
    """The session with index ``session`` (``list_sessions``'s id) of a chat history."""
    path = Path(path)
    text = _read_text(path)
    count = len(_with_turns(parse_chat_history(text)))
    if not (session.isdecimal() and session.isascii() and int(session) < count):
        raise session_pick.unknown_session(session, [str(n) for n in range(count - 1, -1, -1)], file=str(path), what="this aider chat history")
    return read_chat_history(path, int(session), text=text)


def _is_chat_history(path: Path) -> bool:
    # The LLM log holds one conversation; only a chat history holds sessions.
    if not Path(path).is_file():
        return False
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(4096).decode("utf-8-sig", errors="replace")
    except OSError:
        return True  # reading it says what is wrong
    return not HEADER.match(_first_line(head))


def each_session(path: Path) -> Iterator[tuple[str, Transcript | TranscriptError]]:
    """Every session with turns, the file read and parsed once, as (its ``list_sessions`` id, its transcript
    or why it cannot be read)."""
    path = Path(path)
    parsed = parse_chat_history(_read_text(path))
    for n in range(len(_with_turns(parsed))):
        try:
            yield str(n), read_chat_history(path, n, parsed=parsed)
        except TranscriptError as e:
            yield str(n), e


# -- detection -------------------------------------------------------------------------------

_HEAD_SESSION = re.compile(r"^# aider chat started at \d{4}-\d\d-\d\d", re.M)


def is_chat_history_head(head: str) -> bool:
    """Whether the head of a text file (its first KiBs) is an aider chat history's: a folder walk claims such
    a ``.md`` file, where it leaves other notes out (``lab.formats.containers.session_folder.is_note_file``)."""
    return bool(SESSION_START.match(_first_line(head)) or _HEAD_SESSION.search(head.replace("\r\n", "\n").replace("\r", "\n")))


def sniff(probe: FileHead) -> int:
    if probe.shape != "unknown":
        return 0
    first = _first_line(probe.head)
    if SESSION_START.match(first) or HEADER.match(first):
        return 95
    # A history whose start was cut off still shows a later session's header.
    return 60 if _HEAD_SESSION.search(probe.head) else 0


FORMAT = Format(
    name=NAME,
    description="Aider chat history (.aider.chat.history.md) or LLM log (.aider.llm.history)",
    sniff=sniff,
    read=read,
    sessions=SessionSource(what="an aider .aider.chat.history.md", holds=_is_chat_history, list=list_sessions, read=read_session, each=each_session),
)
