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
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO

__all__ = ["atomic_writer", "write_text_atomic"]


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text file handle whose content replaces ``path`` when the block ends without error."""
    target = Path(path)
    # A unique name: two writers of one target never share a temp file; "x" refuses to reuse one.
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the original error is the one to report
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_writer(path) as fh:
        fh.write(text)
    return Path(path)
