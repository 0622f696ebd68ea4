"""One key and one held copy per sequence of message objects, shared by the memos keyed by those objects.

Repair's memo, retention's shared targets and content recall's history are keyed by the identities of
a transcript's messages, and each entry must hold the messages alive (``SharedLRU.get``'s ``holds``) so
no id is reused while it lives. Each used to keep its own copy of the ids (8 bytes a message) or its own
tuple of the messages (8 more): five arrays as long as the transcript, kept to the end of a replay.
``identity_key`` gives a 16-byte digest of the ids and one ``Held`` tuple per sequence, found again
by the next memo that asks while any entry still holds it (a weak table: the memos decide how long
it lives, not this module).
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections.abc import Sequence
from hashlib import blake2b
from operator import is_

from .messages import Message

__all__ = ["Held", "identity_key"]


class Held:
    """The messages an identity-keyed memo entry keeps alive, as one tuple; a tuple cannot be weakly referenced, so
    this holder is what the weak table names and what each memo entry holds."""

    __slots__ = ("messages", "__weakref__")

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages: tuple[Message, ...] = tuple(messages)


_HELD: weakref.WeakValueDictionary[bytes, Held] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def identity_key(messages: Sequence[Message]) -> tuple[bytes, Held]:
    """A 16-byte digest of the identities of ``messages`` (in order), and the ``Held`` tuple of them to keep alive.

    The digest stays a safe key while its ``Held`` lives (the ids it was made from cannot be reused), and two
    sequences never share a ``Held``: one found by the digest is checked object by object.
    """
    ids = array("Q", map(id, messages)).tobytes()
    key = blake2b(ids, digest_size=16).digest()
    with _LOCK:
        held = _HELD.get(key)
        if held is None:
            held = _HELD[key] = Held(messages)
        elif len(held.messages) != len(messages) or not all(map(is_, held.messages, messages)):
            # Another sequence with this digest is alive (never seen): key this one by its ids themselves,
            # an odd number of bytes, so no digest can equal it.
            return b"\0" + ids, Held(messages)
    return key, held
