"""Files of the app, without Streamlit: session temp folders, safe upload names, importing.

``lab.ui.transcript`` wraps these with the per-browser-session state; kept apart
so they can be tested as plain functions.

Each browser session gets a folder ``s-XXXX`` under ``temp_root()``, owned by a
``SessionDir`` object that lives in the session's state: when the session
ends and its state is collected, a weakref finalizer removes the folder. A
folder left behind by a killed server is swept at the next start once it is
older than a day.

Uploads are saved under ``uploads/`` by their sanitised name. A SQLite upload holding OpenCode's
tables under another name (a download's "opencode (1).db", a renamed copy) is saved as
``opencode.db``, the name OpenCode gives it, so notes and errors name the file a user knows. An
archive (``lab.formats.containers.archive``) is unpacked into ``unpacked/``, emptied before and removed after
each import: the transcript is in memory by then, and one session's disk use stays one archive's.

An upload that holds several sessions (``lab.formats.sessions``: a Goose or OpenCode store, an aider
history, an OpenHands output.jsonl, also inside an archive) is listed on import (``import_upload``) as
``StoreSessions``; another of its sessions is read from the saved upload again (``read_stored_session``),
an archive unpacked again for that one read, so the rule above holds for picks too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
import unicodedata
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.messages import ImportNotes, Transcript
from ..errors import TranscriptError
from ..formats.databases import opencode_storage
from ..formats.containers import archive
from ..formats import detect, load, sessions
from ..formats.detect import path_format
from ..formats.session_choice import READERS
from ..formats.containers.session_folder import holds_sessions
from ..formats.openhands import openhands

if TYPE_CHECKING:  # pragma: no cover
    from ..formats.session_choice import SessionInfo

__all__ = [
    "MAX_DIR_AGE_SECONDS",
    "SessionDir",
    "temp_root",
    "sweep_old_dirs",
    "sanitize_name",
    "save_upload",
    "import_file",
    "import_upload",
    "StoreSessions",
    "store_sessions",
    "read_stored_session",
    "several_sessions",
    "sample_files",
    "digest",
]

MAX_DIR_AGE_SECONDS = 24 * 3600
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# What the readers of multi-session stores warn when they picked one (goose_db, opencode_storage).
_SEVERAL = re.compile(r"\b\d[\d,]* sessions (?:with messages|in)\b")
_OPENCODE_DB = "opencode.db"
log = logging.getLogger(__name__)


def digest(data: bytes | str) -> str:
    """sha256 hex of ``data`` (str as UTF-8): the content part of every cache key (an upload's, a store's)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def temp_root() -> Path:
    """Where session folders live: $LAB_APP_TMP, else <system temp>/compaction-lab-app."""
    root = Path(os.environ.get("LAB_APP_TMP") or Path(tempfile.gettempdir()) / "compaction-lab-app")
    root.mkdir(parents=True, exist_ok=True)
    return root


def sweep_old_dirs(root: Path | None = None, max_age: float = MAX_DIR_AGE_SECONDS, now: float | None = None) -> list[Path]:
    """Remove session folders not touched for ``max_age`` seconds (left behind by a crash or kill)."""
    root = root or temp_root()
    now = time.time() if now is None else now
    removed = []
    for child in root.iterdir():
        try:
            if child.is_dir() and child.name.startswith("s-") and now - child.stat().st_mtime > max_age:
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child)
        except OSError:
            continue
    return removed


class SessionDir:
    """Owns one session's folder; the folder goes when this object is collected (or on ``remove``)."""

    def __init__(self, root: Path) -> None:
        # mkdtemp: a fresh, unguessable name created with mode 0700, so two sessions never share one.
        self.path = Path(tempfile.mkdtemp(prefix="s-", dir=root))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def remove(self) -> None:
        self._finalizer()

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self.path.is_dir()


def sanitize_name(name: str, default: str = "upload") -> str:
    """A file name safe to join to a folder: no separators, no '..', no control or odd characters."""
    base = unicodedata.normalize("NFKC", str(name)).replace("\\", "/").rsplit("/", 1)[-1]
    base = _UNSAFE.sub("_", base).strip("._-")[:120]
    return base or default


def save_upload(folder: Path, name: str, data: bytes) -> Path:
    """Write uploaded bytes to ``folder`` under a sanitised name; errors name the file as uploaded.

    OpenCode's database is saved as ``opencode.db`` whatever it was called (see the module docstring).
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / sanitize_name(name)
    try:
        path.write_bytes(data)
        if _opencode_db_renamed(path):
            path = path.replace(folder / _OPENCODE_DB)
    except OSError as e:
        raise TranscriptError(f"cannot save the upload: {e.strerror or e}", file=name) from None
    return path


def _opencode_db_renamed(path: Path) -> bool:
    """Whether ``path`` is OpenCode's SQLite database under another name (found by its tables)."""
    return not opencode_storage.DB_NAME.fullmatch(path.name) and opencode_storage.database(path) is not None


def import_file(
    path: Path, *, shown_as: str | None = None, unpack_to: Path | None = None, session: str | None = None
) -> tuple[Transcript, str]:
    """Import with auto-detection; returns the transcript and the detected format.

    ``shown_as`` replaces the (temp) path in error messages and import notes with the name the user
    knows. An archive is unpacked into ``unpack_to`` (emptied first, removed after), else a temporary
    folder. Folders, archives and stores ``load`` finds by path (``opencode.db``) are read as ``load``
    reads them, the format being the one the transcript records. ``session`` reads that session of
    a file that holds several (``lab.formats.load(path, session=...)``), inside an archive too.
    """
    transcript, fmt, _ = _import(path, shown_as, unpack_to, session, listing=False)
    return transcript, fmt


def import_upload(path: Path, *, shown_as: str | None = None, unpack_to: Path | None = None) -> tuple[Transcript, str, list[SessionInfo]]:
    """``import_file``, and the sessions the file holds when it holds several (else an empty list).

    An archive's sessions are listed while it is still unpacked, so it is unpacked once.
    """
    return _import(path, shown_as, unpack_to, None, listing=True)


def _import(
    path: Path, shown_as: str | None, unpack_to: Path | None, session: str | None, *, listing: bool
) -> tuple[Transcript, str, list[SessionInfo]]:
    try:
        if archive.is_archive(path):
            return _import_archive(path, shown_as, unpack_to, session, listing)
        if path.is_dir() or path_format(path) is not None:
            t = _guarded(path, None, session)
            if shown_as is not None:
                t.notes.warnings[:] = [w.replace(str(path), shown_as) for w in t.notes.warnings]
            return t, t.meta.source_format, _listed(path, t) if listing else []
        try:
            name = detect(path)
        except TranscriptError:
            raise
        except Exception as exc:  # an input no sniffer foresaw still surfaces as the lab's error
            raise TranscriptError(f"could not detect the format: {type(exc).__name__}: {exc}", file=str(path)) from exc
        t = _guarded(path, name, session)
        return t, name, _listed(path, t) if listing else []
    except TranscriptError as e:
        if shown_as is None or (archive.is_archive(path) and shown_as in (e.file or "")):
            raise  # an archive's errors already name it, and the member at fault, as the user knows them
        raise TranscriptError(e.reason, file=shown_as, where=e.where, expected=e.expected) from None


def _guarded(path: Path, format: str | None, session: str | None = None) -> Transcript:
    """``load``, with any failure as the lab's error: folder readers run outside detection's own guard."""
    try:
        return load(path, format=format, session=session)
    except TranscriptError:
        raise
    except (Exception, RecursionError) as exc:
        raise TranscriptError(f"could not import: {type(exc).__name__}: {exc}", file=str(path)) from exc


def _import_archive(
    path: Path, shown_as: str | None, unpack_to: Path | None, session: str | None, listing: bool
) -> tuple[Transcript, str, list[SessionInfo]]:
    listed: list[SessionInfo] = []

    def read(entry: Path) -> Transcript:
        t = _guarded(entry, None, session)
        if listing:
            listed[:] = _listed(entry, t)
        return t

    if unpack_to is not None:
        shutil.rmtree(unpack_to, ignore_errors=True)
    try:
        t = archive.load_archive(path, read, dest=unpack_to, shown_as=shown_as)
    finally:
        if unpack_to is not None:
            shutil.rmtree(unpack_to, ignore_errors=True)
    return t, t.meta.source_format, listed


def _listed(path: Path, transcript: Transcript) -> list[SessionInfo]:
    """The sessions ``path`` holds when it holds several, read as the format ``transcript`` was read in; else []."""
    fmt = transcript.meta.source_format
    folder = holds_sessions(path)  # an archive of a folder of session files: each file is a session
    if fmt not in READERS and not folder:
        return []  # a format of one session per file: nothing to list, and no second read
    try:
        found = sessions(path, None if folder else fmt)
    except (Exception, RecursionError) as exc:
        # The transcript is read: a listing that fails (a one-session file of a store format, a
        # damaged index) only means there is nothing to pick from, not a failed import.
        log.debug("no sessions to pick in %s: %s: %s", path, type(exc).__name__, exc)
        return []
    return found if len(found) > 1 else []


# --- picking one session of an upload that holds several -----------------------------------------

# Longest id or title a one-line label shows: a store from anyone may hold a title of any length.
_LABEL_CHARS = 80
_SPACE = re.compile(r"\s+")


def _one_line(text: str, limit: int = _LABEL_CHARS) -> str:
    """``text`` on one line of at most ``limit`` characters: no newlines or control characters."""
    flat = _SPACE.sub(" ", "".join(c if c.isprintable() else " " for c in text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class StoreSessions:
    """The sessions of an upload that holds several, and the one loaded; plain values, kept in the session state.

    Labels are plain text (a select box shows its options as written); a page that shows them through
    markdown escapes them first (``lab.views.markdown.literal_markdown``).
    """

    # The saved upload (under the session's uploads/), read again for another session.
    path: str
    # The file as the user uploaded it: what labels, notes and errors say.
    name: str
    # Of the upload's bytes: a pick reads only the very file that was listed.
    digest: str
    # Newest first, as ``lab.formats.sessions`` lists them.
    sessions: tuple[SessionInfo, ...]
    # Id of the loaded session.
    shown: str

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.sessions]

    def info(self, session: str) -> SessionInfo | None:
        return next((s for s in self.sessions if s.id == session), None)

    def label(self, session: str) -> str:
        """One option of the picker: title, id, messages, updated."""
        info = self.info(session)
        if info is None:
            return _one_line(session)
        title = _one_line(info.title) if info.title and info.title.strip() else "(untitled)"
        kind = f" [{_one_line(info.kind, 20)}]" if info.kind else ""
        updated = f"updated {info.updated.replace('T', ' ')[:19]}" if info.updated else "no time recorded"
        return f"{title}{kind} · {_one_line(session)} · {info.messages:,} messages · {updated}"

    def describe(self) -> str:
        """What the page says of the loaded session."""
        n = len(self.sessions)
        place = self.ids.index(self.shown) + 1 if self.shown in self.ids else 0
        return f"{self.name} holds {n} sessions, newest first; showing session {place} of {n}: {self.label(self.shown)}"

    def transcript_label(self) -> str:
        """The sidebar's name for the loaded session: the file, then the session."""
        return f"{sanitize_name(self.name)} · session {_one_line(self.shown, 40)}"

    def transcript_key(self, session: str) -> str:
        """The cache key of ``session``: the upload's bytes and the session id, so no two sessions share replays."""
        return f"f:{self.digest}/session:{digest(session)}"

    def showing(self, session: str) -> StoreSessions:
        return replace(self, shown=session)


def store_sessions(path: Path, name: str, data_digest: str, transcript: Transcript, listed: list[SessionInfo]) -> StoreSessions:
    """The picker's state for an upload just read by default: which listed session ``transcript`` is.

    Most readers record the id of the session they read. Those whose sessions have no id of their own
    read a default they do not name: aider its last session (listed first, the newest), an OpenHands
    output.jsonl of records without distinct instance ids its first record ("0", listed last, since
    no record says when it ran and later lines count as newer).
    """
    ids = [s.id for s in listed]
    if transcript.meta.session_id in ids:
        shown = str(transcript.meta.session_id)
    elif transcript.meta.source_format == openhands.NAME:
        shown = ids[-1]
    else:
        shown = ids[0]
    return StoreSessions(path=str(path), name=name, digest=data_digest, sessions=tuple(listed), shown=shown)


def read_stored_session(store: StoreSessions, session: str, *, unpack_to: Path | None = None) -> tuple[Transcript, str]:
    """Session ``session`` of the upload ``store`` lists, read from the saved file again (an archive unpacked again).

    A file that is gone, or was replaced by a later upload of the same name, is an error: a pick never
    reads other bytes than the ones listed.
    """
    if session not in store.ids:
        raise TranscriptError(f"no session {_one_line(session)!r} in the upload", file=store.name, expected="one of the sessions the picker lists")
    path = Path(store.path)
    try:
        same = digest(path.read_bytes()) == store.digest
    except OSError:
        same = False
    if not same:
        raise TranscriptError("the uploaded file is no longer there to read another session from; upload it again", file=store.name)
    return import_file(path, shown_as=store.name, unpack_to=unpack_to, session=session)


def several_sessions(notes: ImportNotes) -> list[str]:
    """The import warnings that say the file held several sessions and which one was read."""
    return [w for w in notes.warnings if _SEVERAL.search(w)]


def sample_files(folder: Path, first: str | None = None) -> list[str]:
    """Transcript files of ``folder`` (README excluded), ``first`` leading."""
    if not folder.is_dir():
        return []
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md")
    return sorted(names, key=lambda n: n != first)
