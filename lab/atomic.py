"""Files that appear complete or not at all, leave nothing behind, and never hold a pasted key.

The text goes to a hidden temp file beside the target (same folder, so the
rename is atomic), which then replaces the target. On any failure, including
a rename onto a folder or an interrupt, the temp file is removed before the
error propagates: a stray ``out.json.tmp`` would later be read as a transcript
by ``compare .``. Errors stay ``OSError``; callers turn them into the lab's own.

A process killed outright (SIGKILL, power loss) cannot remove its temp file,
so its name says who made it: ``.NAME.<pid>-<host>-<random>.tmp``. The next
write of ``NAME`` removes the siblings whose process is gone (same host) or
that are older than ``STALE_AFTER`` seconds (any host, and names from before
the pid was in them).

What every writer here does to the text, so no caller has to remember:

- lone UTF-16 surrogates (a JSON ``"\\ud800"`` a transcript held, a file name
  decoded with ``surrogateescape``) are written as U+FFFD: the file is always
  valid UTF-8, where a strict encode would crash the write;
- known secrets are redacted (``lab.core.redact``), unless the caller is
  inside ``redaction(False)``; ``with redaction() as tally:`` collects the
  counts of every write in the block, for the note a command prints.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import os
import re
import secrets
import socket
import time
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast
from collections.abc import Callable, Iterator

from .core.redact import Tally, redact_text
from .errors import ConfigError, LabError

__all__ = [
    "STALE_AFTER",
    "TEXT_ERRORS",
    "atomic_path",
    "atomic_writer",
    "encode_text",
    "file_digest",
    "redaction",
    "redacting",
    "remove_stale_temps",
    "write_text_atomic",
    "write_table",
]

# A temp file this old is a leftover whoever made it: no write of the lab takes a day.
STALE_AFTER = 24 * 3600.0
# The codec error handler that writes a lone surrogate as U+FFFD.
TEXT_ERRORS = "lab.surrogate-to-fffd"


def _to_fffd(err: UnicodeError) -> tuple[str | bytes, int]:
    if isinstance(err, UnicodeEncodeError):
        # Bytes: the UTF-8 encoder takes only ASCII back as a str.
        return "\ufffd".encode() * (err.end - err.start), err.end
    raise err


codecs.register_error(TEXT_ERRORS, _to_fffd)


def encode_text(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates as U+FFFD (the only thing UTF-8 cannot encode)."""
    return text.encode("utf-8", TEXT_ERRORS)


# --- redaction policy ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Policy:
    redact: bool
    tally: Tally


_POLICY: ContextVar[_Policy | None] = ContextVar("lab_redaction", default=None)


@contextmanager
def redaction(enabled: bool = True) -> Iterator[Tally]:
    """Within the block, writes redact secrets (or, with ``enabled=False``, keep them); yields the counts."""
    policy = _Policy(enabled, Tally())
    token = _POLICY.set(policy)
    try:
        yield policy.tally
    finally:
        _POLICY.reset(token)


def redacting() -> bool:
    """Whether a write here redacts: yes unless inside ``redaction(False)``."""
    policy = _POLICY.get()
    return policy is None or policy.redact


def _redact(text: str) -> str:
    policy = _POLICY.get()
    if policy is None:
        return redact_text(text)
    return redact_text(text, policy.tally) if policy.redact else text


# --- temp files ---------------------------------------------------------------------------------------

_HOST = hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:6]
_FULL = re.compile(r"\..+\.(?P<pid>[0-9]+)-(?P<host>[0-9a-f]{6})-[0-9a-f]{8}\.tmp")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would send Ctrl-C there; only the age tells
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, someone else's
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str], now: float | None = None) -> int:
    """Remove temp files beside ``target`` that dead writers left; return how many went.

    Any name of this module's full form (``.X.<pid>-<host>-<8 hex>.tmp``) whose process is gone, whatever
    ``X`` (a killed run may have written under another name); and ``.NAME.*.tmp`` of ``target`` itself
    older than ``STALE_AFTER``.
    """
    path = Path(target)
    prefix, suffix = f".{path.name}.", ".tmp"
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(suffix)):
            continue
        full = _FULL.fullmatch(name)
        mine = name.startswith(prefix) and len(name) > len(prefix) + len(suffix)
        if full is None and not mine:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        dead = full is not None and full["host"] == _HOST and not _pid_alive(int(full["pid"]))
        if dead or (mine and age > STALE_AFTER):
            with suppress(OSError):
                os.unlink(entry.path)
                removed += 1
    return removed


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (parquet); it replaces ``path`` when the block ends."""
    target = Path(path)
    remove_stale_temps(target)
    # Unique (two writers of one target never share a temp file) and traceable to its process.
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{_HOST}-{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):  # the original error is the one to report
            tmp.unlink(missing_ok=True)
        raise


class _Sink(io.TextIOBase):
    """A text handle over a binary file: redacts, encodes (surrogates as U+FFFD) and hashes what it writes."""

    def __init__(self, raw: io.BufferedWriter) -> None:
        super().__init__()
        self._raw = raw
        self._hash = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        data = encode_text(_redact(s))
        self._hash.update(data)
        self._raw.write(data)
        return len(s)

    def flush(self) -> None:
        if not self._raw.closed:
            self._raw.flush()

    def hexdigest(self) -> str:
        """sha256 of the bytes written so far."""
        return self._hash.hexdigest()


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text file handle whose content replaces ``path`` when the block ends without error.

    The handle redacts and encodes as the module docstring says; ``hexdigest()`` (via ``file_digest``)
    gives the sha256 of the bytes written.
    """
    # "x" refuses to reuse a temp file someone else made.
    with atomic_path(path) as tmp, tmp.open("xb") as raw:
        sink = _Sink(raw)
        try:
            yield cast(TextIO, sink)
        finally:
            sink.close()


def file_digest(handle: TextIO) -> str:
    """The sha256 of what an ``atomic_writer`` handle has written so far."""
    return cast(Any, handle).hexdigest()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8, redacted) to ``path`` atomically; returns the path."""
    data = encode_text(_redact(text))
    with atomic_path(path) as tmp, tmp.open("xb") as fh:
        fh.write(data)
    return Path(path)


def write_table(df: Any, payload: Callable[[], Any], path: str | os.PathLike[str], what: str) -> Path:
    """A pandas table as .csv or .parquet, or ``payload()`` as .json, by the extension, atomically.

    ``what`` names the table in the error a wrong extension gets; failures of the write become ``LabError``.
    """
    target = Path(path)
    ext = target.suffix.lower()
    if ext not in (".csv", ".parquet", ".json"):
        raise ConfigError(f"cannot write a {what} to {target.name!r}: use a .csv, .parquet or .json file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if ext == ".json":
            write_text_atomic(target, json.dumps(payload(), indent=1, ensure_ascii=False) + "\n")
        elif ext == ".csv":
            with atomic_writer(target) as fh:
                df.to_csv(fh, index=False)
        else:
            with atomic_path(target) as tmp:
                _clean_frame(df).to_parquet(tmp, index=False)
    except OSError as e:
        raise LabError(f"cannot write {target}: {e.strerror or e}") from None
    return target


def _clean_frame(df: Any) -> Any:
    """A copy of ``df`` whose text cells are redacted and hold no lone surrogate (parquet encodes them strictly)."""
    text_columns = [c for c in df.columns if df[c].dtype == object or str(df[c].dtype) in ("string", "str")]
    if not text_columns:
        return df
    out = df.copy()

    def clean(v: Any) -> Any:
        return encode_text(_redact(v)).decode("utf-8") if isinstance(v, str) else v

    for c in text_columns:
        out[c] = out[c].map(clean)
    return out
