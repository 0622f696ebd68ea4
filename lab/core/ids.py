"""Ids of the messages the pipeline writes itself: summaries, truncation notes, boundaries, placeholders.

An id is derived from what the message stands for (its kind, its neighbours'
or sources' ids, its text), never from a counter or the clock, so a replay,
an incremental run and a run from scratch all give the very same message the
very same id, and the prompt cache sees the same prefix.
"""

from __future__ import annotations

import hashlib

__all__ = ["id_key"]

# A separator no id or text of ours contains, so ("ab", "c") and ("a", "bc") never meet.
_SEPARATOR = "\x1f"
_KEY_CHARS = 16


def id_key(*parts: str) -> str:
    """A short stable key for the parts: 16 hex characters of their SHA-256.

    Lone surrogates (text read from JSON escapes such as ``"\\ud800"``) are
    hashed as they are instead of failing; every other text hashes as UTF-8.
    """
    joined = _SEPARATOR.join(parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:_KEY_CHARS]
