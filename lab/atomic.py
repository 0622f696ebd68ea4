"""Files that appear complete or not at all, and leave nothing behind when a write fails.

The text goes to a hidden temp file beside the target (same folder, so the
rename is atomic), which then replaces the target. On any failure, including
a rename onto a folder or an interrupt, the temp file is removed before the
error propagates: a stray ``out.json.tmp`` would later be read as a transcript
by ``compare .``. Errors stay ``OSError``; callers turn them into the lab's own.
"""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TextIO
from collections.abc import Callable, Iterator

__all__ = ["atomic_path", "atomic_writer", "write_text_atomic", "write_table"]


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that wants a file name (parquet); it replaces ``path`` when the block ends."""
    target = Path(path)
    # A unique name: two writers of one target never share a temp file.
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):  # the original error is the one to report
            tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text file handle whose content replaces ``path`` when the block ends without error."""
    # "x" refuses to reuse a temp file someone else made.
    with atomic_path(path) as tmp, tmp.open("x", encoding="utf-8") as fh:
        yield fh


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_writer(path) as fh:
        fh.write(text)
    return Path(path)


def write_table(df: Any, payload: Callable[[], Any], path: str | os.PathLike[str], what: str) -> Path:
    """A pandas table as .csv or .parquet, or ``payload()`` as .json, by the extension, atomically.

    ``what`` names the table in the error a wrong extension gets; failures of the write become ``LabError``.
    """
    import json

    from .errors import ConfigError, LabError

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
                df.to_parquet(tmp, index=False)
    except OSError as e:
        raise LabError(f"cannot write {target}: {e.strerror or e}") from None
    return target
