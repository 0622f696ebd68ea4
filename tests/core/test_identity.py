"""``lab.core.identity``: one digest and one held tuple per sequence of message objects, while a memo holds it."""

from __future__ import annotations

import gc
import weakref

from lab.core.identity import identity_key
from tests.builders import assistant, user


def test_the_same_objects_share_a_key_and_a_held_tuple() -> None:
    msgs = [user("go"), assistant("ok")]
    key, held = identity_key(msgs)
    again, same = identity_key(tuple(msgs))
    assert len(key) == 16 and again == key and same is held
    assert held.messages == tuple(msgs) and all(a is b for a, b in zip(held.messages, msgs, strict=True))


def test_equal_but_other_objects_get_another_key() -> None:
    msgs = [user("go"), assistant("ok")]
    copies = [m.model_copy() for m in msgs]
    key, held = identity_key(msgs)
    other, other_held = identity_key(copies)
    assert other != key and other_held is not held


def test_the_table_does_not_keep_a_held_tuple_alive() -> None:
    # The memos holding it decide how long it lives: once none does, it is gone.
    msgs = [user("go"), assistant("ok")]
    _, held = identity_key(msgs)
    ref = weakref.ref(held)
    del held
    gc.collect()
    assert ref() is None
    assert identity_key(msgs)[1].messages == tuple(msgs)
