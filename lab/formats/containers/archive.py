"""Session folders packed as one file: a ``.zip`` or a tar (``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.tar.zst``).

Some agents keep a session as a folder (a Cline task folder, an OpenHands V1
conversation folder, OpenCode's ``storage/``), and a browser can upload only
files. ``unpack(archive, dest)`` unpacks one into an empty folder and returns
what to read: the folder itself, or its single top-level entry (an archive of
``task-123/`` holds that folder); ``load_archive`` unpacks, reads and says the
archive's name, not the unpack folder's, in errors and notes. ``lab.formats.load``
reads an archive path the same way, unpacked into a temporary folder that goes
once the transcript is read. A compressed file that holds no tar is one transcript
file (``lab.formats.containers.compressed``): it is decompressed into the same folder, under
the same limit, and said as the compressed file itself.

An archive comes from anyone, so each member is checked before it is written;
why each check exists:

* an absolute name (``/etc/cron.d/x``, ``C:\\x``) or a ``..`` component would
  write outside ``dest``: refused (backslashes count as separators, as
  Windows zip tools write them; the resolved path must also lie in ``dest``);
* a symlink or hard link could point outside ``dest`` and make a later member,
  or a reader following it, write or read there; a device or FIFO has no
  business in a transcript: all refused, only files and folders are unpacked;
* control characters (NUL, newline) in a name are no real file name and can
  forge what an error line says: refused;
* an encrypted member cannot be read without a password the lab never asks for:
  refused with that reason;
* size: a zip bomb (a few KiB that inflate to gigabytes) must not fill the
  disk. A zip member's bytes are counted as they are written, not taken from
  its headers (they are the sender's word); a tar member's header size is the
  byte count its stream holds, so it is counted before the member is written.
  Unpacking stops with an error past ``MAX_UNPACKED_BYTES`` (512 MiB per
  archive; the app keeps one unpacked archive per browser session, and only
  while it reads it), and ``MAX_MEMBERS`` (100,000)
  bounds the file count, since a million empty files fill the inodes without
  a byte of data;
* an archive inside the archive is not unpacked in turn: a zip that holds
  itself (a "quine") would unpack without end;
* macOS archives carry ``__MACOSX/`` resource forks: skipped, so that they
  are not taken for a second top-level folder.

A refused or unreadable archive is a ``TranscriptError`` naming the archive and,
where one is at fault, the member; what was unpacked before it is removed.
Tar members go through ``tarfile``'s ``filter="data"`` as well (Python 3.11.4+),
which also drops permissions no transcript needs.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

import zstandard

from ...core.messages import Transcript
from ...errors import TranscriptError
from ..registry import Loader, SessionInfo, Wrapper
from . import compressed

__all__ = ["MAX_UNPACKED_BYTES", "MAX_MEMBERS", "WRAPPER", "is_archive", "unpack", "load_archive", "list_archive"]

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 100_000

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member first, or an empty archive's end record
_SKIPPED_TOP = "__MACOSX"
_CHUNK = 1 << 20
_EXPECTED = "a .zip or .tar(.gz) of a session folder (Cline task, OpenHands V1 conversation, OpenCode storage)"


def _kind(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(compressed.TAR_HEAD)
    except OSError:
        return None
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if compressed.is_tar_header(head):
        return "tar"
    packed = compressed.compression_of(head)
    if packed is None:
        return None
    # A compressed tar is a folder archive; any other compressed stream is one transcript file.
    return "tar" if compressed.holds_tar(path, packed) else "single"


def is_archive(path: str | Path) -> bool:
    """Whether ``path`` is a file that starts as a zip, a tar or a compressed (zstd, gzip, bzip2, xz) stream."""
    p = Path(path)
    return p.is_file() and _kind(p) is not None


def _member_path(name: str, dest: Path, archive: str) -> Path | None:
    """Where member ``name`` goes under ``dest``; None for what is skipped; TranscriptError for what is refused."""
    def refuse(why: str) -> TranscriptError:
        return TranscriptError(f"refused to unpack: {why}", file=archive, where=repr(name), expected=_EXPECTED)

    if any(ord(c) < 32 or c == "\x7f" for c in name):
        raise refuse("a control character in a member name")
    posix = name.replace("\\", "/")
    parts = PurePosixPath(posix).parts
    if posix.startswith("/") or (parts and len(parts[0]) == 2 and parts[0][1] == ":"):
        raise refuse("an absolute member path")
    if ".." in parts:
        raise refuse("a member path with '..'")
    parts = tuple(p for p in parts if p not in ("", "."))
    if not parts or parts[0] == _SKIPPED_TOP:
        return None
    target = dest.joinpath(*parts)
    # Belt and braces: whatever the checks above missed, nothing is written outside dest.
    if not target.resolve().is_relative_to(dest.resolve()):
        raise refuse("a member path outside the folder")
    return target


class _Budget:
    """Bytes and members unpacked so far, against the limits."""

    def __init__(self, archive: str, max_bytes: int, max_members: int) -> None:
        self.archive, self.max_bytes, self.max_members = archive, max_bytes, max_members
        self.bytes = self.members = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise TranscriptError(f"refused to unpack: more than {self.max_members:,} members", file=self.archive, where=repr(name), expected=_EXPECTED)

    def add(self, n: int, name: str) -> None:
        self.bytes += n
        if self.bytes > self.max_bytes:
            raise TranscriptError(
                f"refused to unpack: it unpacks to more than {self.max_bytes / 2**20:,.0f} MiB (the limit for an archive)",
                file=self.archive, where=repr(name), expected=_EXPECTED,
            )


def _copy(src: IO[bytes], target: Path, budget: _Budget, name: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        while chunk := src.read(_CHUNK):
            budget.add(len(chunk), name)
            out.write(chunk)


def _unpack_zip(archive: Path, dest: Path, budget: _Budget) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            budget.member(info.filename)
            target = _member_path(info.filename, dest, budget.archive)
            if target is None:
                continue
            mode = info.external_attr >> 16
            if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                what = "a symlink" if stat.S_ISLNK(mode) else "a member that is no file or folder"
                raise TranscriptError(f"refused to unpack: {what}", file=budget.archive, where=repr(info.filename), expected=_EXPECTED)
            if info.flag_bits & 0x1:
                raise TranscriptError("refused to unpack: an encrypted member", file=budget.archive, where=repr(info.filename), expected=_EXPECTED)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            with zf.open(info) as src:
                _copy(src, target, budget, info.filename)
            _keep_time(target, info.date_time)


def _keep_time(target: Path, date_time: tuple[int, int, int, int, int, int]) -> None:
    """Give an unpacked file its time in the zip (local time, as zip records it), as tar's extract does.

    A folder of session files is listed newest first by modification time
    (``lab.formats.containers.session_folder``): unpacked at one instant, every file would be as new as the others.
    """
    try:
        stamp = time.mktime((*date_time, 0, 0, -1))
        os.utime(target, (stamp, stamp))
    except (OverflowError, ValueError, OSError):
        pass  # a time the platform cannot hold: the file keeps its unpack time


def _unpack_tar(archive: Path, dest: Path, budget: _Budget) -> None:
    if not hasattr(tarfile, "data_filter"):  # pragma: no cover - Python 3.11.0-3.11.3, before tarfile's filters
        raise TranscriptError("a tar archive needs Python 3.11.4 or newer here (tarfile's data filter); a .zip works", file=budget.archive, expected=_EXPECTED)
    # "r:*" reads plain, gzip, bzip2 and xz tars; members are read one by one, so a bomb stops at the limit.
    with ExitStack() as stack:
        try:
            if compressed.compression(archive) == "zstd":
                # tarfile knows no zstd (before Python 3.14): read as a stream, its members in order.
                raw = stack.enter_context(open(archive, "rb"))
                reader = stack.enter_context(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True))
                tf = stack.enter_context(tarfile.open(fileobj=reader, mode="r|"))
            else:
                tf = stack.enter_context(tarfile.open(archive, mode="r:*"))
        except tarfile.ReadError:
            raise TranscriptError("not a readable tar archive", file=budget.archive, expected=_EXPECTED) from None
        for member in tf:
            budget.member(member.name)
            target = _member_path(member.name, dest, budget.archive)
            if target is None:
                continue
            if not (member.isreg() or member.isdir()):
                what = "a symlink" if member.issym() else "a hard link" if member.islnk() else "a member that is no file or folder"
                raise TranscriptError(f"refused to unpack: {what}", file=budget.archive, where=repr(member.name), expected=_EXPECTED)
            # A tar header's size is exactly what the stream holds for the member (unlike a zip's): counted before writing.
            budget.add(member.size, member.name)
            tf.extract(member, dest, filter="data")


def _entry(dest: Path) -> Path:
    """What to read: ``dest``, or its one top-level entry when it holds exactly one."""
    children = [c for c in dest.iterdir() if c.name != ".DS_Store"]
    return children[0] if len(children) == 1 else dest


def unpack(
    archive: str | Path,
    dest: str | Path,
    *,
    max_bytes: int | None = None,
    max_members: int | None = None,
) -> Path:
    """Unpack ``archive`` into the new or empty folder ``dest``; the path to read (see the module docstring).

    The limits default to ``MAX_UNPACKED_BYTES`` and ``MAX_MEMBERS`` (read at call time, so a caller
    or a test can lower them). On any error what was unpacked is removed and a ``TranscriptError`` raised.
    """
    src, out = Path(archive), Path(dest)
    name = str(src)
    kind = _kind(src)
    if kind is None:
        raise TranscriptError("not a zip or tar archive", file=name, expected=_EXPECTED)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise TranscriptError(f"the folder to unpack into is not empty: {out}", file=name)
    budget = _Budget(name, MAX_UNPACKED_BYTES if max_bytes is None else max_bytes, MAX_MEMBERS if max_members is None else max_members)
    try:
        if kind == "single":
            compressed.decompress(src, out, max_bytes=budget.max_bytes, shown=name)
        else:
            (_unpack_zip if kind == "zip" else _unpack_tar)(src, out, budget)
    except TranscriptError:
        _empty(out)
        raise
    except tarfile.FilterError as exc:
        _empty(out)
        raise TranscriptError(f"refused to unpack: {exc}", file=name, expected=_EXPECTED) from None
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, zstandard.ZstdError, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        # A damaged archive, a compression the stdlib lacks, a compressed tar that breaks off: one line, no traceback.
        _empty(out)
        raise TranscriptError(f"cannot unpack {kind} archive: {type(exc).__name__}: {exc}", file=name, expected=_EXPECTED) from None
    except OSError as exc:
        _empty(out)
        raise TranscriptError(f"cannot unpack: {exc.strerror or exc}", file=name, expected=_EXPECTED) from None
    if not any(out.iterdir()):
        raise TranscriptError("the archive holds no files", file=name, expected=_EXPECTED)
    return _entry(out)


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


@contextmanager
def _folder(dest: Path | None) -> Iterator[Path]:
    if dest is not None:
        yield dest
        return
    with tempfile.TemporaryDirectory(prefix="lab-archive-") as tmp:
        yield Path(tmp)


def _shown(text: str, folder: Path, archive: str) -> str:
    return text.replace(str(folder), archive)


# How ``load`` starts what it says of a folder with nothing it reads (lab.formats.jsonio.check_file,
# lab.formats.containers.session_folder.list_sessions).
_A_DIRECTORY = "is a directory"


def load_archive(archive: str | Path, read: Callable[[Path], Transcript], *, dest: Path | None = None, shown_as: str | None = None) -> Transcript:
    """Unpack ``archive`` (into ``dest``, else a temporary folder removed afterwards) and ``read`` what it holds.

    Paths under the unpack folder are said as inside the archive (``shown_as``, else its path), in
    errors, warnings and the transcript's ``source_path``: the unpack folder is the lab's, not the user's.
    A compressed single file is said as the compressed file itself: it is the one file the user gave.
    """
    shown = shown_as or str(archive)
    single = _kind(Path(archive)) == "single"
    with _folder(dest) as folder:
        entry = folder

        def said(text: str) -> str:
            if single and entry != folder:
                text = text.replace(str(entry), shown)
            return _shown(text, folder, shown)

        try:
            entry = unpack(archive, folder)
            if entry.is_file() and is_archive(entry):
                # Read on, and a zip that holds itself (a zip quine) would unpack without end.
                raise TranscriptError("refused to unpack: an archive inside the archive", file=str(archive), where=repr(entry.name), expected=_EXPECTED)
            try:
                t = read(entry)
            except TranscriptError as e:
                if entry.is_dir() and e.file == str(entry) and e.reason.startswith(_A_DIRECTORY):
                    raise TranscriptError("holds nothing the lab reads (no session folder, nor one transcript file)", file=str(archive), expected=_EXPECTED) from None
                raise
        except TranscriptError as e:
            file = said(e.file or str(archive)).replace(str(archive), shown)
            raise TranscriptError(said(e.reason), file=file, where=e.where, expected=e.expected) from None
        t.notes.warnings[:] = [said(w) for w in t.notes.warnings]
        t.meta.source_path = said(str(entry))
        return t


def list_archive(archive: Path, list_entry: Callable[[Path], list[SessionInfo]]) -> list[SessionInfo]:
    """The sessions of what ``archive`` holds (``list_entry`` of it, unpacked into a temporary folder), errors said as the archive."""
    with tempfile.TemporaryDirectory(prefix="lab-sessions-") as tmp:
        entry = archive
        try:
            entry = unpack(archive, tmp)
            if entry.is_file() and is_archive(entry):
                # As ``load_archive``: a zip that holds itself would unpack without end.
                raise TranscriptError("refused to unpack: an archive inside the archive", file=str(archive), where=repr(entry.name), expected=_EXPECTED)
            return list_entry(entry)
        except TranscriptError as e:
            said = e.reason.replace(str(entry), str(archive)).replace(tmp, str(archive))
            raise TranscriptError(said, file=str(archive), where=e.where, expected=e.expected) from None


def _load(path: Path, format: str | None, session: str | None, loader: Loader) -> Transcript:
    return load_archive(path, lambda entry: loader.load(entry, format, session=session))


def _sessions(path: Path, format: str | None, loader: Loader) -> list[SessionInfo]:
    return list_archive(path, lambda entry: loader.sessions(entry, format))


WRAPPER = Wrapper(
    name="archive",
    description="a .zip or tar of a session folder (or of one transcript), or a compressed transcript file (zstd, gzip, bzip2, xz)",
    holds=is_archive,
    load=_load,
    sessions=_sessions,
)
