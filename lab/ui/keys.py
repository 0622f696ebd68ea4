"""The ``st.session_state`` keys the app owns, in one place, and the content hash its caches use.

The state modules (``transcript``, ``settings``, ``replays``, ``navigation``)
each own some of these keys but clear each other's (a new transcript drops
the selected request), so the names live here rather than in any one of
them. The AppTests read some keys directly ("lab.config", "lab.request"):
the strings are part of the app's contract and must not change.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "PREFIX",
    "TRANSCRIPT",
    "LABEL",
    "TKEY",
    "FORMAT",
    "CONFIG",
    "PRESET",
    "GEN",
    "CFG_ERROR",
    "REQUEST",
    "REQUEST_URL",
    "LLM",
    "DIR",
    "UPLOAD_ID",
    "UPLOAD_ERROR",
    "SAVED",
    "digest",
]

PREFIX = "lab."
TRANSCRIPT, LABEL, TKEY, FORMAT = PREFIX + "transcript", PREFIX + "transcript_label", PREFIX + "transcript_key", PREFIX + "format"
CONFIG, PRESET, GEN, CFG_ERROR = PREFIX + "config", PREFIX + "preset", PREFIX + "widget_gen", PREFIX + "config_error"
REQUEST, REQUEST_URL = PREFIX + "request", PREFIX + "request_url"
LLM, DIR, UPLOAD_ID, UPLOAD_ERROR = PREFIX + "llm", PREFIX + "dir", PREFIX + "upload_id", PREFIX + "upload_error"
SAVED = PREFIX + "saved_configs"


def digest(data: bytes | str) -> str:
    """sha256 hex of ``data`` (str as UTF-8): the content part of every cache key."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
