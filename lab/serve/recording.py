"""``--record DIR``: each exchange appended as one line, in the HTTP-log shape the lab reads.

One file per conversation, ``<DIR>/<conversation hash>.jsonl``, so a recording
folder is a folder of sessions for ``lab replay``, ``compare`` and ``sweep``
(``lab.formats.http.http_log``): ``request`` is the body as the agent sent it,
``upstream_request`` what went upstream, ``response`` the upstream's answer
(a stream assembled into its unstreamed body), ``usage`` the upstream's usage.
Headers are never written (they hold keys), nor the URL's query.

The folder is created private to the user (0700) and each file 0600. A line is
written with one ``write`` on a file opened for appending, under a lock, so
concurrent exchanges never interleave and a reader never sees half a line
except the one being written.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["Recorder", "RecordedSession", "list_recordings", "make_private_dir", "iso_now"]


def iso_now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def make_private_dir(path: Path) -> Path:
    """``path`` created if missing, with owner-only permissions."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class Recorder:
    def __init__(self, folder: Path) -> None:
        self.folder = make_private_dir(Path(folder))
        self._lock = threading.Lock()

    def path_of(self, conversation: str) -> Path:
        # The key is a hex digest already (lab.serve.conversations.conversation_key); checked, never trusted.
        name = "".join(ch for ch in conversation if ch in "0123456789abcdef")[:64] or "unknown"
        return self.folder / f"{name}.jsonl"

    def append(self, conversation: str, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode("utf-8", "surrogatepass")
        path = self.path_of(conversation)
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)


@dataclass(frozen=True)
class RecordedSession:
    """One conversation's recording file, as the Live page lists it."""

    path: Path
    requests: int
    size: int
    modified: float
    api: str | None
    first_text: str | None
    saved: int


def _first_text(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    items = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    if isinstance(items, str):
        return items
    for m in items or []:
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
                if texts:
                    return texts[0]
    return None


def _summary(path: Path) -> RecordedSession:
    requests = saved = 0
    api: str | None = None
    first: str | None = None
    stat = path.stat()
    with path.open("rb") as fh:
        for raw in fh:
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # the line being written, or a damaged one: the file is still listed
            if not isinstance(rec, dict):
                continue
            requests += 1
            request: dict[str, Any] = rec["request"] if isinstance(rec.get("request"), dict) else {}
            if first is None:
                first = _first_text(request.get("body"))
                url = request.get("url")
                api = "anthropic" if isinstance(url, str) and "/messages" in url else "openai" if isinstance(url, str) else None
            up: dict[str, Any] = rec["upstream_request"] if isinstance(rec.get("upstream_request"), dict) else {}
            if isinstance(up.get("tokens_agent"), int) and isinstance(up.get("tokens_upstream"), int):
                saved += up["tokens_agent"] - up["tokens_upstream"]
    return RecordedSession(path, requests, stat.st_size, stat.st_mtime, api, first[:120] if first else None, saved)


def list_recordings(folder: Path) -> list[RecordedSession]:
    """The conversations recorded in ``folder`` (``--record DIR``), the most recently active first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.jsonl"):
        try:
            found.append(_summary(path))
        except OSError:
            continue  # removed while listing
    return sorted(found, key=lambda s: s.modified, reverse=True)
