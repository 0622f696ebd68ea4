"""Which session to read from a file or folder that holds several.

Some agents keep many sessions in one place; their readers read one (the
newest, or the first record) and name the others in a warning. Each such
reader registers a ``SessionReader`` here, and ``lab.formats`` offers two
calls over all of them:

* ``sessions(path, format=None)``: the sessions the path holds, as
  ``SessionInfo`` (id, title, messages, updated time when known), newest
  first (file order reversed when the file records no times: these files
  are appended to, so later is newer);
* ``load(path, format=None, session=ID)``: that one session.

The ids are the ones each reader lists:

    goose_db    Goose's session id (``sessions.id``, ``20260101_1``)
    opencode    OpenCode's session id (``ses_...``): a storage root, its data
                dir or ``opencode.db``; a session's own folder holds one
    aider       an index in file order ("0", "1", ...) over the sessions of a
                ``.aider.chat.history.md`` that have turns (sessions have no id)
    openhands   an evaluation ``output.jsonl``: the records' ``instance_id``
                when every record has a distinct one, else their index in
                file order ("0", "1", ...)
    http_log    an HTTP log (claude-trace, a proxy dump): an index in log order
                ("0", "1", ...) over its conversations (``lab.formats.http_log``)
    cursor      Cursor's composer id (``composerData:<id>``), or a chat tab's
                ``tabId`` in a workspace ``state.vscdb``
    zed         Zed's thread id (``threads.id``)
    crush       Crush's session id (``sessions.id``; a sub-agent's is its tool call's id)
    agents_sdk_db  the OpenAI Agents SDK's ``session_id`` (``agent_sessions``)
    (a folder)  a path inside it (``session_folder``)

The path names its format as ``load`` would find it (its folder checks, then
the best-scored format of the file); ``format`` forces one. A file (or session
folder) that holds one session lists as that one session: ``sessions`` reads
it (``one_session``), its id is the transcript's own session id ("0" when the
file records none), and ``load(path, session=ID)`` accepts that id, so what a
listing shows can always be picked. Its subagent threads (``Transcript.sidechains``:
a Claude Code file's sidechain records) are listed after it, kind ``subagent``,
by the thread's name (the id of the Task call that started it), and picked the
same way: the thread alone, as a transcript of its own. Any other id for such a file, or an id a
reader does not list, is a ``TranscriptError`` (the latter naming up to
``SHOWN`` ids).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.messages import ImportNotes, Message, Transcript
from ..errors import TranscriptError
from ._build import parse_timestamp
from .detect import HELP_HINT, accept, close_names, ranked_candidates
from .jsonio import check_file
from .registry import FORMATS

__all__ = [
    "SHOWN", "SessionInfo", "SessionReader", "READERS", "register_reader", "sessions", "read_session", "unknown_session", "iso_time",
    "newest_first", "Candidate", "pick_session", "several", "Several", "read_each", "BATCH_SKIPS", "one_session",
]  # fmt: skip

# How many ids an unknown-id error names: enough to spot a typo, few enough for one line.
SHOWN = 10
# What the errors tell a user to run for the whole list.
_HOW = "`python -m lab sessions PATH` or lab.formats.sessions(path) lists them"


@dataclass(frozen=True)
class SessionInfo:
    """One session of a multi-session file, as ``sessions`` lists it.

    ``messages`` counts what the file holds for the session before import (Goose's
    and OpenCode's message rows or files, Aider's turns, OpenHands' events), so listing
    never imports. ``updated`` is ISO 8601 when the file records it, else None.
    ``kind`` says what the agent calls a session that is not a plain one
    (Goose's ``sub_agent``, an OpenCode subagent), else None.
    """

    id: str
    title: str | None
    messages: int
    updated: str | None
    format: str
    kind: str | None = None


@dataclass(frozen=True)
class SessionReader:
    """A format's hook for picking sessions; ``holds`` must be cheap (it runs before any read)."""

    name: str
    # What holds several sessions, for errors: "Goose's sessions.db".
    what: str
    # Whether the path is one of this format's several-session containers (not one session of it).
    holds: Callable[[Path], bool]
    list: Callable[[Path], list[SessionInfo]]
    # Reads the session with this id; an id it does not list is ``unknown_session``'s error.
    read: Callable[[Path, str], Transcript]
    # Every session in one pass, as (id, transcript or the reason it cannot be read), for a file whose
    # sessions ``read`` would find only by reading it all again (an output.jsonl, a chat history).
    each: Callable[[Path], Iterator[tuple[str, Transcript | TranscriptError]]] | None = None


READERS: dict[str, SessionReader] = {}


def register_reader(reader: SessionReader) -> SessionReader:
    READERS[reader.name] = reader
    return reader


def iso_time(value: object) -> str | None:
    """A recorded time (ISO text, epoch seconds or milliseconds) as ISO 8601, or None."""
    stamp = parse_timestamp(value)
    return stamp.isoformat() if stamp is not None else None


def newest_first(infos: Sequence[SessionInfo]) -> list[SessionInfo]:
    """Sessions by ``updated``, newest first; those without a time keep their order, after the others."""
    stamped = [(parse_timestamp(s.updated), n, s) for n, s in enumerate(infos)]
    timed = [(stamp, n, s) for stamp, n, s in stamped if stamp is not None]
    # Newest first; equal times keep the reader's order (-n, as the sort is reversed).
    timed.sort(key=lambda row: (row[0], -row[1]), reverse=True)
    return [s for _, _, s in timed] + [s for stamp, _, s in stamped if stamp is None]


def unknown_session(session: str, ids: Sequence[str], *, file: str, what: str, how: str = _HOW) -> TranscriptError:
    """The error for an id the file does not hold: up to ``SHOWN`` of the ids it does."""
    shown = ", ".join(repr(i) for i in ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")
    return TranscriptError(
        f"no session {session!r} in {what}",
        file=file,
        expected=f"one of its {len(ids)} session ids ({shown or 'none'}); {how}",
    )


@dataclass(frozen=True)
class Candidate:
    """One session of a store as ``pick_session`` weighs it: the store's own rows, newest first."""

    id: str
    messages: int
    title: str | None = None
    # False for a session the agent's own list leaves out (a sub-agent's, a hidden one): never the default
    # while another has messages.
    listed: bool = True


def pick_session(
    candidates: Sequence[Candidate], session_id: str | None, *, file: str, store: str, noun: str, module: str, notes: ImportNotes
) -> int:
    """The index of the session a store's reader reads: ``session_id``, else the newest listed one with messages.

    One rule for every database that holds several sessions (Goose, Crush, Cursor): asked by id, an
    unknown id or an empty session is a ``TranscriptError``; by default, the newest listed session with
    messages (any, when none is listed), with a warning naming how many the store holds and how to pick
    another. ``store`` names the file in messages ("Goose database"), ``noun`` one of its sessions
    ("Goose session"), ``module`` the reader under ``lab.formats``.
    """
    if session_id is not None:
        for k, c in enumerate(candidates):
            if c.id == session_id:
                if not c.messages:
                    raise TranscriptError(f"{noun} {session_id!r} has no messages", file=file)
                return k
        raise unknown_session(
            session_id, [c.id for c in candidates], file=file, what=f"this {store}",
            how=f"`python -m lab sessions PATH` or lab.formats.{module}.list_sessions(path) lists them",
        )  # fmt: skip
    full = [k for k, c in enumerate(candidates) if c.messages]
    if not full:
        raise TranscriptError(f"this {store} holds {len(candidates)} session(s), none with messages", file=file, expected="a session with messages")
    listed = [k for k in full if candidates[k].listed]
    chosen = (listed or full)[0]
    if len(full) > 1:
        c = candidates[chosen]
        unlisted = len(full) - len(listed)
        aside = f" ({unlisted} of them sub-agents' or hidden, never the default)" if unlisted and listed else ""
        rest = [candidates[k] for k in full if k != chosen]
        others = ", ".join(f"{o.id} ({o.messages} messages{'' if o.listed else ', sub-agent or hidden'})" for o in rest[:3]) + (", ..." if len(rest) > 3 else "")
        notes.warnings.append(
            f"this {store} holds {len(full)} sessions with messages{aside}; read the most recently updated"
            f"{' main' if unlisted and listed else ''} one, {c.id!r} ({c.title or 'untitled'}); others: {others}; pick one with --session ID "
            f"or lab.formats.{module}.read_db(path, session_id=...) (all ids: `python -m lab sessions PATH`, lab.formats.{module}.list_sessions(path))"
        )
    return chosen


def _known(format: str | None, path: Path) -> str | None:
    """``format`` when the lab has it (or None); TranscriptError for a name it lacks."""
    if format is not None and format not in FORMATS:
        raise TranscriptError(f"unknown format {format!r}", file=str(path), expected=f"a format such as {close_names(format)}; {HELP_HINT}")
    return format


def _format_of(path: Path, format: str | None) -> str:
    """The format ``load`` would read ``path`` as: its folder checks in load's order, then detection."""
    if _known(format, path) is not None:
        return str(format)
    # Imported here: the readers it tries import this module to register, so it cannot import them first.
    from .by_path import path_format

    found = path_format(path)
    return found if found is not None else ranked_candidates(check_file(path))[0][0]


def _reader_or_refusal(path: Path, format: str | None, asked: str) -> SessionReader | TranscriptError:
    """The reader of a path that holds several sessions, or the error saying it holds one."""
    name = _format_of(path, format)
    reader = READERS.get(name)
    if reader is not None and reader.holds(path):
        return reader
    several = "; ".join(r.what for r in READERS.values())
    place = "folder" if path.is_dir() else "file"
    if format is None:
        reason = f"read as {name}, this {place} holds one session: there is no session to pick ({asked})"
    elif reader is None:
        reason = f"{name} holds one session per {place}: there is no session to pick ({asked})"
    else:
        reason = f"not {reader.what}, so there is no session to pick ({asked})"
    return TranscriptError(reason, file=str(path), expected=f"a file or folder of several sessions: {several}")


def one_session(path: str | os.PathLike[str], format: str | None = None) -> tuple[SessionInfo, Transcript]:
    """A file (or session folder) that holds one session, as the one session ``sessions`` lists, and its transcript.

    Listing it reads it: its message count, title and time are the transcript's. The id is the transcript's own
    session id, or "0" when the file records none; ``load(path, session=ID)`` accepts it.
    """
    # Imported here: lab.formats imports this module before it defines load.
    from . import load

    name = _format_of(Path(path), format)
    t = load(path, format)
    title = t.meta.title or _title(t.messages)
    return _info(t.meta.session_id or "0", title, t.messages, name), t


def _info(sid: str, title: str | None, messages: Sequence[Message], format: str, kind: str | None = None) -> SessionInfo:
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    return SessionInfo(id=sid, title=title, messages=len(messages), updated=max(stamps).isoformat() if stamps else None, format=format, kind=kind)


def _title(messages: Sequence[Message]) -> str | None:
    return next((line for m in messages if m.role == "user" and (line := _first_line(m))), None)


def _threads(info: SessionInfo, t: Transcript) -> list[SessionInfo]:
    """The subagent threads of a one-session file, as ``sessions`` lists them after the session itself."""
    return [_info(name, _title(msgs), msgs, info.format, "subagent") for name, msgs in t.sidechains.items() if name != info.id]


def _thread(t: Transcript, name: str, format: str, file: str) -> Transcript:
    """One subagent thread of ``t`` as a transcript of its own, checked as ``load`` checks an import."""
    main = t.meta.session_id or "0"
    notes = ImportNotes(records_read=len(t.sidechains[name]))
    notes.warnings.append(f"the subagent thread {name!r} of session {main!r}, read alone as asked (--session); its parent is read without --session")
    meta = t.meta.model_copy(update={"session_id": name, "title": f"subagent thread {name} of {main}"})
    return accept(Transcript(meta=meta, messages=list(t.sidechains[name]), tools=list(t.tools), notes=notes), format, file=file)


# A title is one line of at most this many characters.
_TITLE_CHARS = 80


def _first_line(message: Message) -> str | None:
    for block in message.content:
        text = getattr(block, "text", None)
        if isinstance(text, str) and text.strip():
            line = " ".join(text.split())
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return None


def sessions(path: str | os.PathLike[str], format: str | None = None) -> list[SessionInfo]:
    """The sessions ``path`` holds, newest first (see the module docstring); a one-session file is one entry."""
    p = Path(path)
    # Imported here: archive reads through the readers, which import this module to register.
    from . import archive

    if not archive.is_archive(p):
        return _sessions(p, format)
    # A zip, tar or compressed file: list what it holds, said as the archive (as ``load`` reads it).
    with tempfile.TemporaryDirectory(prefix="lab-sessions-") as tmp:
        entry = p
        try:
            entry = archive.unpack(p, tmp)
            return _sessions(entry, format)
        except TranscriptError as e:
            said = e.reason.replace(str(entry), str(p)).replace(tmp, str(p))
            raise TranscriptError(said, file=str(p), where=e.where, expected=e.expected) from None


def _sessions(p: Path, format: str | None) -> list[SessionInfo]:
    from . import session_folder

    if session_folder.holds_sessions(p):
        return session_folder.list_sessions(p, _known(format, p))
    found = _reader_or_refusal(p, format, "nothing to list")
    if isinstance(found, TranscriptError):
        # One session: listed as itself, then its subagent threads. A file no format reads raises its own import's error.
        info, t = one_session(p, format)
        return [info, *newest_first(_threads(info, t))]
    return newest_first(found.list(p))


def read_session(path: str | os.PathLike[str], format: str | None, session: str) -> Transcript:
    """The session ``session`` of ``path``, checked as ``load`` checks every import."""
    p = Path(path)
    from . import session_folder

    if session_folder.holds_sessions(p):
        return session_folder.read_session(p, _known(format, p), str(session))
    found = _reader_or_refusal(p, format, f"asked for {session!r}")
    if not isinstance(found, TranscriptError):
        return accept(found.read(p, str(session)), found.name, file=str(p))
    try:
        info, t = one_session(p, format)
    except TranscriptError:
        raise found from None
    if str(session) == info.id:
        return t
    if str(session) in t.sidechains:
        return _thread(t, str(session), info.format, str(p))
    threads = f", with {len(t.sidechains)} subagent thread(s) `python -m lab sessions PATH` lists" if t.sidechains else ""
    raise TranscriptError(
        f"{found.reason}; its one session is {info.id!r}{threads} (read without --session, or with that id)", file=str(p), expected=found.expected
    )


# Sessions a batch run (compare, sweep) leaves out of a store: a sub-agent's history is part of its parent's
# work, not a session of its own, and the agent's own session list leaves it out too; a side request of an HTTP
# log (a title or a quota check a client sent beside its conversation) is no session a compaction config changes.
BATCH_SKIPS = ("subagent", "sub_agent")
_SIDE = "side"


@dataclass(frozen=True)
class Several:
    """The sessions of a file or store that a batch run reads (``several``), and what it leaves out."""

    reader: SessionReader
    sessions: list[SessionInfo]
    # Every session as the reader listed it (a folder listing shows them all), sub-agents' and empty ones too.
    listed: list[SessionInfo]
    # Sessions the store lists but a batch leaves out: sub-agents' (part of their parent's work), side requests and empty ones.
    subagents: int = 0
    empty: int = 0
    side: int = 0

    def describe(self, name: str) -> str:
        """One line for a batch's notes: what ``name`` holds and how it is read."""
        out = [f"{self.subagents} sub-agent session(s)"] if self.subagents else []
        out += [f"{self.empty} empty session(s)"] if self.empty else []
        out += [f"{self.side} side request(s)"] if self.side else []
        aside = f"; left out: {' and '.join(out)}" if out else ""
        return (f"{name} holds {len(self.sessions)} sessions ({self.reader.what}): each is read as its own transcript, "
                f"named '{name} [ID]' (--session ID reads one alone){aside}")


def several(path: str | os.PathLike[str]) -> Several | None:
    """The sessions of a file or store that holds more than one, as a batch run takes them: in the store's own
    order (oldest first where it keeps one), without sub-agents' sessions, side requests or empty ones (counted).

    None for anything else: a one-session file, a folder of sessions (walked file by file instead), an
    archive, or a file detection cannot read (its own import then says why). Cheap for a one-session file:
    detection reads its head, nothing is imported.
    """
    p = Path(path)
    from . import archive, session_folder

    if session_folder.holds_sessions(p) or archive.is_archive(p):
        return None
    try:
        name = _format_of(p, None)
    except TranscriptError:
        return None
    reader = READERS.get(name)
    if reader is None or not reader.holds(p):
        return None
    try:
        listed = reader.list(p)
    except TranscriptError:
        return None
    # The readers list newest first; file order reversed: a batch reads a file in its own order.
    kept: list[SessionInfo] = []
    subagents = empty = side = 0
    for s in reversed(newest_first(listed)):
        if _is_subagent(s.kind):
            subagents += 1
        elif s.kind is not None and s.kind.lower().startswith(_SIDE):
            side += 1
        elif s.messages <= 0:
            empty += 1
        else:
            kept.append(s)
    return Several(reader, kept, listed, subagents, empty, side) if len(kept) > 1 else None


def _is_subagent(kind: str | None) -> bool:
    # Readers spell it their own way: "subagent", Goose's "sub_agent", OpenCode's "subagent of <parent id>".
    return kind is not None and kind.lower().replace("-", "_").startswith(BATCH_SKIPS)


def read_each(path: str | os.PathLike[str], reader: SessionReader, infos: Sequence[SessionInfo]) -> Iterator[tuple[SessionInfo, Transcript | TranscriptError]]:
    """Each of ``infos`` (sessions ``several`` gave), read and checked as ``load`` checks an import, or the
    reason it cannot be: one session that fails does not stop the others."""
    p = Path(path)
    wanted = {s.id: s for s in infos}
    if reader.each is not None:
        for sid, got in reader.each(p):
            info = wanted.get(sid)
            if info is not None:
                yield info, _checked(got, reader.name, p)
        return
    for info in infos:
        try:
            one: Transcript | TranscriptError = reader.read(p, info.id)
        except TranscriptError as e:
            one = e
        yield info, _checked(one, reader.name, p)


def _checked(got: Transcript | TranscriptError, name: str, path: Path) -> Transcript | TranscriptError:
    if isinstance(got, TranscriptError):
        return got
    try:
        return accept(got, name, file=str(path))
    except TranscriptError as e:
        return e
