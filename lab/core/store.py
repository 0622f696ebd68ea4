"""Spill stores: where oversized tool results go, and come back from byte for byte.

Two implementations share one naming scheme:

- ``FolderStore(root)`` writes ``<root>/<session>/tool-results/<name>``;
- ``MemoryStore()`` keeps the same files in a dict under ``mem://<session>/<name>``.

``<name>`` is the sanitised tool_use_id, a dash, a short sha256 of the
content and ``.txt``. Ids come from transcripts, which anyone can craft
(MewCode used the raw id and ``../../x`` escaped its folder), so names are
built from ``[A-Za-z0-9_-]`` only and every path is resolved and checked to be
inside the root before it is touched.

A stored file is MiniCode's layout: one JSON header line, ``---CONTENT---``,
then the original text. The name contains the content hash, so an existing
file means the result was already spilled (MewCode's idempotence) and a
rewrite is skipped.

A transcript may hold a pasted key, and a spill file is a copy of a tool
result on disk: ``FolderStore`` redacts known secrets (``lab.core.redact``)
before it writes, unless made with ``redact=False``, and counts them in
``redacted``. The name and header still describe the original content, so the
same result spills to the same file. ``MemoryStore`` writes no file and keeps
the content as it is. A temp file names its process (``.tmp-<pid>-...``), so
``cleanup`` can remove the ones a killed run left.

``FailingStore`` is the test double: it fails the first N writes, the way a
full disk would, so callers can prove a failed spill records nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..errors import StoreError
from .redact import Tally, redact_text

__all__ = [
    "SpillStore",
    "FolderStore",
    "MemoryStore",
    "FailingStore",
    "safe_name",
    "spill_file_name",
    "encode_spill",
    "decode_spill",
    "SEPARATOR",
    "MAX_NAME_CHARS",
]

SEPARATOR = "\n---CONTENT---\n"
# Leaves room for "-<hash>.txt" under the 255-byte file name limit of common file systems.
MAX_NAME_CHARS = 80
_HASH_CHARS = 12
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MEM_PREFIX = "mem://"
# Strings may hold lone surrogates (from JSON "\ud800"); they must round-trip too.
_ENCODING_ERRORS = "surrogatepass"


@runtime_checkable
class SpillStore(Protocol):
    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        """Store ``content`` atomically; return the path (or memory key) it can be read back from."""
        ...

    def read(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        """Remove sessions older than ``max_age_seconds``; return how many were removed."""
        ...


def safe_name(raw: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """A file-name-safe form of an id: only ``[A-Za-z0-9_-]``, never empty, never a dot name.

    When anything had to be mapped or cut, a short hash of the raw id is added,
    so two different ids never share a name by accident (``a/b`` vs ``a_b``).
    """
    if not isinstance(raw, str):
        raise StoreError(f"an id must be a string, got {type(raw).__name__}")
    cleaned = _UNSAFE.sub("_", raw)
    if cleaned == raw and 0 < len(raw) <= max_chars:
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", _ENCODING_ERRORS)).hexdigest()[:8]
    return f"{cleaned[: max_chars - 9]}_{digest}"


def _content_bytes(content: str) -> bytes:
    return content.encode("utf-8", _ENCODING_ERRORS)


def spill_file_name(tool_use_id: str, content: str) -> str:
    digest = hashlib.sha256(_content_bytes(content)).hexdigest()[:_HASH_CHARS]
    return f"{safe_name(tool_use_id)}-{digest}.txt"


def encode_spill(content: str, header: dict) -> bytes:
    # ensure_ascii keeps the header on one line whatever the tool name or path holds.
    line = json.dumps(header, ensure_ascii=True, sort_keys=True, default=str)
    return line.encode("ascii") + SEPARATOR.encode("ascii") + _content_bytes(content)


def decode_spill(data: bytes, where: str) -> str:
    sep = SEPARATOR.encode("ascii")
    cut = data.find(sep)
    if cut < 0:
        raise StoreError(f"{where}: not a spill file (no {SEPARATOR.strip()} line)")
    try:
        json.loads(data[:cut].decode("ascii"))
        return data[cut + len(sep) :].decode("utf-8", _ENCODING_ERRORS)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StoreError(f"{where}: damaged spill file: {e}") from None


def _full_header(session: str, tool_use_id: str, content: str, header: dict) -> dict:
    data = dict(header)
    data.update(
        tool_use_id=tool_use_id,
        session_id=session,
        chars=len(content),
        bytes=len(_content_bytes(content)),
        sha256=hashlib.sha256(_content_bytes(content)).hexdigest(),
    )
    return data


class FolderStore:
    """Spill files on disk, confined to ``root``; secrets redacted unless ``redact=False``."""

    def __init__(self, root: str | os.PathLike[str], *, redact: bool = True) -> None:
        self.root = Path(root).resolve()
        self.redact = redact
        # Secrets replaced in the files this store wrote (see ``Tally.note``).
        self.redacted = Tally()

    def __repr__(self) -> str:
        return f"FolderStore({str(self.root)!r})"

    def _inside(self, path: Path) -> Path:
        resolved = path.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise StoreError(f"path {str(path)!r} is outside the spill folder {str(self.root)!r}")
        return resolved

    def folder(self, session_id: str) -> Path:
        return self._inside(self.root / safe_name(session_id) / "tool-results")

    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        folder = self.folder(session_id)
        target = self._inside(folder / spill_file_name(tool_use_id, content))
        if target.parent != folder:
            raise StoreError(f"spill name for {tool_use_id!r} leaves its folder")
        if target.exists():
            return str(target)
        full = _full_header(session_id, tool_use_id, content, header)
        if self.redact:
            # The header's own strings (tool name, input paths) may quote a key too.
            line = redact_text(json.dumps(full, ensure_ascii=True, sort_keys=True, default=str), self.redacted)
            full = json.loads(line)
            content = redact_text(content, self.redacted)
        data = encode_spill(content, full)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", suffix=_TMP_SUFFIX, dir=folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
            except BaseException:
                # A half-written temp file must never be mistaken for a spill.
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:
            raise StoreError(f"cannot write spill file {str(target)!r}: {e}") from None
        return str(target)

    def _checked(self, path: str) -> Path:
        if not isinstance(path, str) or not path or "\x00" in path:
            raise StoreError(f"not a spill path: {path!r}")
        return self._inside(Path(path))

    def read(self, path: str) -> str:
        target = self._checked(path)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise StoreError(f"no spill file at {path!r}") from None
        except OSError as e:
            raise StoreError(f"cannot read spill file {path!r}: {e}") from None
        return decode_spill(data, path)

    def exists(self, path: str) -> bool:
        try:
            return self._checked(path).is_file()
        except StoreError:
            return False

    def sessions(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and (p / "tool-results").is_dir())

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        """Remove whole session folders whose newest file is older than ``max_age_seconds``.

        Temp files of writers that are gone (killed mid-write) go too, whatever their age; they are not counted.
        """
        now = time.time() if now is None else now
        removed = 0
        for name in self.sessions():
            session = self.root / name
            # Only folders this store could have made; anything else in root is left alone.
            if safe_name(name) != name:
                continue
            _remove_dead_temps(session / "tool-results", now)
            stamps = [p.stat().st_mtime for p in session.rglob("*") if p.is_file()]
            newest = max(stamps, default=session.stat().st_mtime)
            if now - newest > max_age_seconds:
                shutil.rmtree(session, ignore_errors=True)
                removed += 1
        return removed


_TMP_PREFIX = ".tmp-"
_TMP_SUFFIX = ".part"
_TMP_PID = re.compile(r"\.tmp-([0-9]+)-")
# A temp file this old is a leftover whoever made it (also names from before the pid was in them).
_STALE_TEMP = 24 * 3600.0


def _pid_gone(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # on Windows os.kill(pid, 0) is not a probe
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _remove_dead_temps(folder: Path, now: float) -> None:
    try:
        temps = [p for p in folder.iterdir() if p.name.startswith(_TMP_PREFIX) and p.name.endswith(_TMP_SUFFIX)]
    except OSError:
        return
    for p in temps:
        m = _TMP_PID.match(p.name)
        try:
            stale = (m is not None and _pid_gone(int(m[1]))) or now - p.stat().st_mtime > _STALE_TEMP
            if stale and p.is_file():
                p.unlink()
        except OSError:
            continue


class MemoryStore:
    """The same semantics as ``FolderStore``, kept in a dict (for the app and tests)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._files: dict[str, bytes] = {}
        self._touched: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._files)} files)"

    def keys(self) -> list[str]:
        return sorted(self._files)

    def fork(self) -> MemoryStore:
        """An independent store holding the same files now (a replay resumed at a checkpoint writes on its own)."""
        copy = MemoryStore(self._clock)
        copy._files = dict(self._files)
        copy._touched = dict(self._touched)
        return copy

    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        session = safe_name(session_id)
        key = f"{_MEM_PREFIX}{session}/{spill_file_name(tool_use_id, content)}"
        if key not in self._files:
            self._files[key] = encode_spill(content, _full_header(session_id, tool_use_id, content, header))
        self._touched[session] = self._clock()
        return key

    def read(self, path: str) -> str:
        data = self._files.get(path) if isinstance(path, str) else None
        if data is None:
            raise StoreError(f"no spill file at {path!r}")
        return decode_spill(data, path)

    def exists(self, path: str) -> bool:
        return isinstance(path, str) and path in self._files

    def sessions(self) -> list[str]:
        return sorted(self._touched)

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        now = self._clock() if now is None else now
        old = [s for s, t in self._touched.items() if now - t > max_age_seconds]
        for session in old:
            prefix = f"{_MEM_PREFIX}{session}/"
            for key in [k for k in self._files if k.startswith(prefix)]:
                del self._files[key]
            del self._touched[session]
        return len(old)


class FailingStore:
    """Test double: the first ``fail_first`` writes raise, the rest go to ``inner``."""

    def __init__(self, fail_first: int = 1, inner: SpillStore | None = None, error: type[Exception] = StoreError) -> None:
        self.inner: SpillStore = inner if inner is not None else MemoryStore()
        self.fail_first = fail_first
        self.error = error
        self.attempts = 0
        self.failures = 0

    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        self.attempts += 1
        if self.failures < self.fail_first:
            self.failures += 1
            raise self.error(f"simulated write failure {self.failures} of {self.fail_first}")
        return self.inner.write(session_id, tool_use_id, content, header)

    def read(self, path: str) -> str:
        return self.inner.read(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        return self.inner.cleanup(max_age_seconds, now)
