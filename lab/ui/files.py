"""Files of the app, without Streamlit: session temp folders, safe upload names, importing.

``lab.ui.state`` wraps these with the per-browser-session state; kept apart
so they can be tested as plain functions.

Each browser session gets a folder ``s-XXXX`` under ``temp_root()``, owned by a
``SessionDir`` object that lives in the session's state: when the session
ends and its state is collected, a weakref finalizer removes the folder. A
folder left behind by a killed server is swept at the next start once it is
older than a day.

Uploads are saved under ``uploads/`` by their sanitised name. A SQLite upload holding OpenCode's
tables under another name (a download's "opencode (1).db", a renamed copy) is saved as
``opencode.db``, the name OpenCode gives it, so notes and errors name the file a user knows. An
archive (``lab.formats.archive``) is unpacked into ``unpacked/``, emptied before and removed after
each import: the transcript is in memory by then, and one session's disk use stays one archive's.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import unicodedata
import weakref
from pathlib import Path

from ..core.messages import ImportNotes, Transcript
from ..errors import TranscriptError

__all__ = [
    "MAX_DIR_AGE_SECONDS",
    "SessionDir",
    "temp_root",
    "sweep_old_dirs",
    "sanitize_name",
    "save_upload",
    "import_file",
    "several_sessions",
    "sample_files",
]

MAX_DIR_AGE_SECONDS = 24 * 3600
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# What the readers of multi-session stores warn when they picked one (goose_db, opencode_storage).
_SEVERAL = re.compile(r"\b\d[\d,]* sessions (?:with messages|in)\b")
_OPENCODE_DB = "opencode.db"


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
    from ..formats import opencode_storage

    return not opencode_storage.DB_NAME.fullmatch(path.name) and opencode_storage.database(path) is not None


def import_file(path: Path, *, shown_as: str | None = None, unpack_to: Path | None = None) -> tuple[Transcript, str]:
    """Import with auto-detection; returns the transcript and the detected format.

    ``shown_as`` replaces the (temp) path in error messages and import notes with the name the user
    knows. An archive is unpacked into ``unpack_to`` (emptied first, removed after), else a temporary
    folder. Folders, archives and stores ``load`` finds by path (``opencode.db``) are read as ``load``
    reads them, the format being the one the transcript records.
    """
    from ..formats import archive, detect, opencode_storage

    try:
        if archive.is_archive(path):
            return _import_archive(path, shown_as, unpack_to)
        if path.is_dir() or opencode_storage.is_storage(path):
            t = _guarded(path, None)
            if shown_as is not None:
                t.notes.warnings[:] = [w.replace(str(path), shown_as) for w in t.notes.warnings]
            return t, t.meta.source_format
        try:
            name = detect(path)
        except TranscriptError:
            raise
        except Exception as exc:  # an input no sniffer foresaw still surfaces as the lab's error
            raise TranscriptError(f"could not detect the format: {type(exc).__name__}: {exc}", file=str(path)) from exc
        return _guarded(path, name), name
    except TranscriptError as e:
        if shown_as is None or (archive.is_archive(path) and shown_as in (e.file or "")):
            raise  # an archive's errors already name it, and the member at fault, as the user knows them
        raise TranscriptError(e.reason, file=shown_as, where=e.where, expected=e.expected) from None


def _guarded(path: Path, format: str | None) -> Transcript:
    """``load``, with any failure as the lab's error: folder readers run outside detection's own guard."""
    from ..formats import load

    try:
        return load(path, format=format)
    except TranscriptError:
        raise
    except (Exception, RecursionError) as exc:
        raise TranscriptError(f"could not import: {type(exc).__name__}: {exc}", file=str(path)) from exc


def _import_archive(path: Path, shown_as: str | None, unpack_to: Path | None) -> tuple[Transcript, str]:
    from ..formats import archive

    if unpack_to is not None:
        shutil.rmtree(unpack_to, ignore_errors=True)
    try:
        t = archive.load_archive(path, lambda entry: _guarded(entry, None), dest=unpack_to, shown_as=shown_as)
    finally:
        if unpack_to is not None:
            shutil.rmtree(unpack_to, ignore_errors=True)
    return t, t.meta.source_format


def several_sessions(notes: ImportNotes) -> list[str]:
    """The import warnings that say the file held several sessions and which one was read."""
    return [w for w in notes.warnings if _SEVERAL.search(w)]


def sample_files(folder: Path, first: str | None = None) -> list[str]:
    """Transcript files of ``folder`` (README excluded), ``first`` leading."""
    if not folder.is_dir():
        return []
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md")
    return sorted(names, key=lambda n: n != first)
