"""The copy of a relayed response, read after the bytes have gone to the client.

The relay forwards upstream chunks as they arrive and keeps a copy; once the
response ends, the copy is parsed here: a stream is assembled into the body the
API would have sent unstreamed (``lab.formats.http.http_sse``), for the recording
and for the usage ``/stats`` reads.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.messages import ImportNotes
from ..formats.history_builder import Loc
from ..formats.http.http_sse import assemble, stream_events

__all__ = ["read_copy", "usage_of"]


def read_copy(api: str, data: bytes, streamed: bool) -> tuple[dict[str, Any] | None, str | None]:
    """(body, raw text): the parsed or assembled body when it reads as one, else the text as it came."""
    text = data.decode("utf-8", "replace")
    if not streamed:
        try:
            body = json.loads(text)
        except ValueError:
            return None, text
        return (body, None) if isinstance(body, dict) else (None, text)
    notes = ImportNotes()
    try:
        events = stream_events(text, notes)
        body = assemble(api, events, notes, Loc(None)) if events else None
    except Exception:  # a copy that does not parse is kept as text, never a failure of the relay
        body = None
    return (body, None) if body else (None, text)


def usage_of(body: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(body, dict):
        return None
    usage = body.get("usage")
    if isinstance(usage, dict):
        return usage
    inner = body.get("response")  # a Responses stream's final event
    return usage_of(inner) if isinstance(inner, dict) else None
