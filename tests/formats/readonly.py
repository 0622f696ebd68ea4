"""A check the session-database readers share: reading leaves the file and its folder as they were."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_reads_leave_untouched(path: Path, *reads: Callable[[Path], Any]) -> None:
    """Run each read on ``path``; the file's bytes and mtime, and its folder's listing, must not change.

    The listing catches the ``-wal`` / ``-shm`` files a plain read-only open of a WAL database creates.
    """
    folder = path.parent
    before, listing, mtime = file_digest(path), sorted(os.listdir(folder)), path.stat().st_mtime_ns
    for read in reads:
        read(path)
    assert file_digest(path) == before and path.stat().st_mtime_ns == mtime
    assert sorted(os.listdir(folder)) == listing
