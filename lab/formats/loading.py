"""Reading any path: ``load``, ``sessions`` and ``read_session``, over the registry's wrappers and formats.

The order (``lab.formats.detect`` says the rest):

1. A wrapper that holds the path (``registry.WRAPPERS``): an archive or compressed
   file is unpacked and what it holds read again through this module; a folder no
   format claims by its path is a folder of sessions, of which one is read.
2. With ``session``, a file or store of several sessions reads that one
   (``SessionSource.read``); a one-session file accepts its own id and its
   subagent threads' names.
3. A folder or store a format claims by its path (``Format.finds``).
4. A file: detected, or read as the forced ``format``; UTF-16 files through a UTF-8 copy.

Wrappers get this module as a ``registry.Loader`` (``LOADER``), so none of them imports it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.messages import ImportNotes, Message, Transcript
from ..errors import TranscriptError
from .detect import accept, format_of, path_format, read_by_path, read_detected, read_forced
from .jsonio import check_file, transcode_utf16, utf16_file, with_repair_note
from .registry import WRAPPERS, Format, SessionInfo, Wrapper
from .session_choice import READERS, reader_of
from .session_pick import newest_first

__all__ = ["load", "sessions", "read_session", "one_session", "LOADER"]


def load(path: str | os.PathLike[str], format: str | None = None, *, session: str | None = None) -> Transcript:
    """Import a transcript file, detecting its format unless ``format`` names one.

    ``session`` picks one session of a file or folder that holds several, by the id
    ``sessions(path)`` lists (``lab.formats.session_choice``: Goose and OpenCode session
    ids, an index "0", "1", ... in file order where sessions have none). Without it such
    a reader reads its default (the newest) and names the others in a warning; with it,
    a format that holds one session per file, or an id the file does not hold, is a
    ``TranscriptError``.

    A folder is accepted when it is an OpenHands V1 conversation (one JSON file per event),
    a Cline / Roo Code task folder, or OpenCode storage (a session's ``storage/message/<id>``
    folder, the storage root or its data dir; also a session info file or ``opencode.db``).
    A ``.zip`` or tar of such a folder (or of one transcript file) is unpacked into a temporary
    folder and read as what it holds (``lab.formats.containers.archive``: the checks and the size limit).
    A compressed file of one transcript (zstd, as Codex's ``rollout-*.jsonl.zst``, gzip, bzip2
    or xz; known by its magic bytes) is decompressed there under the same limit and read as the
    file it holds, detected by its inner name (``lab.formats.containers.compressed``); errors name the
    compressed file. A compressed tar stays a folder archive. A UTF-16 file (with a BOM, or
    ASCII with a zero byte beside each character) is read as its UTF-8 copy, with a note.

    Any other folder is a folder of sessions (``~/.claude/projects/<project>``, Codex's
    ``sessions/``, Cline's ``tasks/``): ``session`` is a path inside it as ``sessions(folder)``
    lists, and without one the most recently modified session is read, with a warning naming
    the others (``lab.formats.containers.session_folder``).
    """
    p = Path(path)
    wrapper = _wrapper(p)
    if wrapper is not None:
        return wrapper.load(p, format, session, LOADER)
    if session is not None:
        return with_repair_note(lambda: read_session(p, format, session))
    # Folders and stores a format claims by path first, then files by detection; every result is checked.
    found = path_format(p, format)
    if found is not None:
        return accept(with_repair_note(lambda: read_by_path(found, p)), found, file=str(p))
    checked = check_file(path)
    encoding = utf16_file(checked)
    if encoding is not None:
        return with_repair_note(lambda: _read_utf16(checked, format, encoding))
    return read_detected(checked) if format is None else read_forced(format, checked)


def _wrapper(path: Path) -> Wrapper | None:
    """The first registered wrapper that holds ``path`` (archives before folders of sessions)."""
    return next((w for w in WRAPPERS.values() if w.holds(path)), None)


class _Loader:
    """This module as the ``registry.Loader`` the wrappers call back."""

    def load(self, path: Path, format: str | None = None, *, session: str | None = None) -> Transcript:
        return load(path, format, session=session)

    def sessions(self, path: Path, format: str | None = None) -> list[SessionInfo]:
        return sessions(path, format)


LOADER = _Loader()


def _read_utf16(path: Path, format: str | None, encoding: str) -> Transcript:
    """A UTF-16 file (Windows tools write them), read as the UTF-8 copy of it made in a temporary folder.

    Every reader takes UTF-8 only; errors, warnings and ``source_path`` name the user's file.
    """
    with tempfile.TemporaryDirectory(prefix="lab-utf16-") as tmp:
        copy = Path(tmp) / path.name
        transcode_utf16(path, copy, encoding)

        def said(text: str) -> str:
            return text.replace(str(copy), str(path))

        try:
            t = read_detected(copy) if format is None else read_forced(format, copy)
        except TranscriptError as e:
            raise TranscriptError(said(e.reason), file=said(e.file or str(path)), where=e.where, expected=e.expected) from None
    t.notes.warnings[:] = [said(w) for w in t.notes.warnings]
    t.notes.warnings.append(f"converted from {encoding} to UTF-8 before reading")
    t.meta.source_path = str(path)
    return t


def _reader_or_refusal(path: Path, format: str | None, asked: str) -> Format | TranscriptError:
    """The format of a path that holds several sessions, or the error saying it holds one."""
    name = format_of(path, format)
    found = reader_of(name, path)
    if found is not None:
        return found
    reader = READERS.get(name)
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
    name = format_of(Path(path), format)
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
    """The sessions ``path`` holds, newest first (see ``lab.formats.session_choice``); a one-session file is one entry."""
    p = Path(path)
    wrapper = _wrapper(p)
    if wrapper is not None:
        # A zip, tar or compressed file lists what it holds, said as the archive; a folder of sessions, its files.
        return wrapper.sessions(p, format, LOADER)
    found = _reader_or_refusal(p, format, "nothing to list")
    if isinstance(found, TranscriptError):
        # One session: listed as itself, then its subagent threads. A file no format reads raises its own import's error.
        info, t = one_session(p, format)
        return [info, *newest_first(_threads(info, t))]
    assert found.sessions is not None
    return newest_first(found.sessions.list(p))


def read_session(path: str | os.PathLike[str], format: str | None, session: str) -> Transcript:
    """The session ``session`` of ``path``, checked as ``load`` checks every import."""
    p = Path(path)
    wrapper = next((w for w in WRAPPERS.values() if w.picks_sessions and w.holds(p)), None)
    if wrapper is not None:
        return wrapper.load(p, format, str(session), LOADER)
    found = _reader_or_refusal(p, format, f"asked for {session!r}")
    if not isinstance(found, TranscriptError):
        assert found.sessions is not None
        return accept(found.sessions.read(p, str(session)), found.name, file=str(p))
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
