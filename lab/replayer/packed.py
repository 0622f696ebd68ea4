"""Big pipeline-written text a report keeps only for display, held zlib-compressed until it is read.

Why: a report keeps every request's context (``report.Contexts``) and every
row's events so that the pages can show any of them, and a session of many
summaries kept every summary's text whole to the end of the replay (198 texts
of about 50 KB for 100,000 tiny messages: 0.23x the file). Nothing reads them
during the replay; the pages read one at a time. A summary's text compresses
about ten to one, and packing or reading one back costs about a tenth of a millisecond.

- ``PackedText``: one string, compressed. ``pack_text`` shares one between the
  holders of one text packed moments apart (a summary's event, then its message).
- ``PackedMessage``: a pipeline-written message (a summary) in a report's
  contexts: its pickle without its big strings, compressed, and those strings
  as PackedTexts. ``get()`` gives the message: the very object the pipeline
  made while anything still holds it (a weak reference), else one rebuilt from
  the bytes, equal in every field (its fields set too), which is then the one
  ``get()`` gives while anything holds it. So two reads that overlap (two
  contexts side by side, a diff) see one object, as readers that compare
  messages by identity first (``shared_prefix``, the identity caches) expect.
- ``PackedEvents``: a row's events with their big strings (a summary's text,
  its attachment) packed. ``light`` holds the events with a ``PackedText`` in
  place of each such string, for readers that need only the small fields (what
  kind of compaction an event was); ``unpack()`` gives the events as they were
  given, every string read back exactly (lone surrogates included).
"""

from __future__ import annotations

import io
import pickle
import weakref
import zlib
from typing import Any
from collections.abc import Sequence

from ..core.messages import Message, TextBlock

__all__ = ["MIN_PACKED_CHARS", "PackedMessage", "PackedText", "PackedEvents", "packs", "pack_text", "pack_events"]

# Texts shorter than this stay as they are: the bytes and the object around them would save little.
MIN_PACKED_CHARS = 1024
# zlib's fastest: on a tiny session's summaries 10.2:1 where the default (6) gives 10.6:1 in three times the
# time (2.35:1 against 2.7:1 on prose); reading back is as fast. A replay packs each summary as it is written.
_LEVEL = 1


def packs(message: Message) -> bool:
    """Whether a report keeps ``message`` packed: one the pipeline wrote (it carries a tag) holding big text."""
    if message.tag is None:
        return False
    chars = 0
    for block in message.content:
        if type(block) is TextBlock:
            chars += len(block.text)
    return chars >= MIN_PACKED_CHARS


class PackedText:
    """One string as compressed UTF-8 (lone surrogates passed through, so every ``str`` reads back exactly).

    Made by ``pack_text``, which gives the one object for a text packed a moment ago: a summary's text is
    packed for its row's event and again for the context holding its message, and both share the bytes.
    """

    __slots__ = ("blob",)

    def __init__(self, text: str) -> None:
        self.blob = zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)

    def text(self) -> str:
        return zlib.decompress(self.blob).decode("utf-8", "surrogatepass")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedText):
            return NotImplemented
        return self is other or self.blob == other.blob or self.text() == other.text()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_text_of_blob, (self.blob,))

    def __copy__(self) -> PackedText:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PackedText:
        return self

    def __repr__(self) -> str:
        return f"PackedText({len(self.blob)} bytes)"


def _text_of_blob(blob: bytes) -> PackedText:
    out = PackedText.__new__(PackedText)
    out.blob = blob
    return out


# The texts packed last, by (length, hash): bytes only, never the texts, so nothing is kept alive by it. A hit
# is read back and compared (a tenth of the time packing takes) before it is shared.
_RECENT: dict[tuple[int, int], PackedText] = {}
_RECENT_MAX = 8


def pack_text(text: str) -> PackedText:
    """``text`` packed: the PackedText of an equal text packed lately, else a new one."""
    key = (len(text), hash(text))
    found = _RECENT.get(key)
    if found is not None and found.text() == text:
        return found
    packed = PackedText(text)
    if len(_RECENT) >= _RECENT_MAX:
        _RECENT.pop(next(iter(_RECENT)), None)
    _RECENT[key] = packed
    return packed


class _Pickler(pickle.Pickler):
    """Pickles a message with every big string left out, by number (``persistent_id``): packed apart."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.texts: list[str] = []
        self._at: dict[int, int] = {}

    def persistent_id(self, obj: Any) -> int | None:
        if type(obj) is not str or len(obj) < MIN_PACKED_CHARS:
            return None
        at = self._at.get(id(obj))
        if at is None:
            at = self._at[id(obj)] = len(self.texts)
            self.texts.append(obj)
        return at


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, texts: tuple[PackedText, ...]) -> None:
        super().__init__(file)
        self._texts = texts
        self._read: dict[int, str] = {}

    def persistent_load(self, pid: Any) -> str:
        text = self._read.get(pid)
        if text is None:
            text = self._read[pid] = self._texts[pid].text()
        return text


class PackedMessage:
    """One message as its pickle (compressed) and its big texts (each a ``PackedText``), with a weak reference
    to the object last given (see the module)."""

    __slots__ = ("_blob", "_texts", "_ref")

    def __init__(self, message: Message) -> None:
        buf = io.BytesIO()
        pickler = _Pickler(buf)
        pickler.dump(message)
        self._blob = zlib.compress(buf.getvalue(), _LEVEL)
        self._texts = tuple(pack_text(t) for t in pickler.texts)
        self._ref: weakref.ReferenceType[Message] | None = weakref.ref(message)

    @classmethod
    def _of(cls, blob: bytes, texts: tuple[PackedText, ...]) -> PackedMessage:
        out = cls.__new__(cls)
        out._blob, out._texts, out._ref = blob, texts, None
        return out

    def holds(self, message: Message) -> bool:
        """``message`` is the object ``get()`` gives now, without rebuilding one."""
        return self._ref is not None and self._ref() is message

    def get(self) -> Message:
        message = self._ref() if self._ref is not None else None
        if message is None:
            # Our own bytes, made from a Message in this process (or pickled along with the report holding them).
            message = _Unpickler(io.BytesIO(zlib.decompress(self._blob)), self._texts).load()
            self._ref = weakref.ref(message)
        return message

    @property
    def nbytes(self) -> int:
        """The bytes it holds (its texts' included, though another holder may share them)."""
        return len(self._blob) + sum(len(t.blob) for t in self._texts)

    def __reduce__(self) -> tuple[Any, ...]:
        # A weak reference does not pickle; the bytes are the whole value.
        return (PackedMessage._of, (self._blob, self._texts))

    def __copy__(self) -> PackedMessage:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PackedMessage:
        # Immutable in value: a copy of a report shares it, as it shares the messages themselves.
        return self

    def __repr__(self) -> str:
        return f"PackedMessage({self.nbytes} bytes)"


class PackedEvents:
    """A row's events with every big string a ``PackedText`` (``light``); ``unpack()`` gives them back."""

    __slots__ = ("light",)

    def __init__(self, light: list[dict[str, Any]]) -> None:
        self.light = light

    def unpack(self) -> list[dict[str, Any]]:
        return [{k: v.text() if type(v) is PackedText else v for k, v in e.items()} if _has_packed(e) else e for e in self.light]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedEvents):
            return self.light == other.light
        if isinstance(other, list):
            return self.unpack() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedEvents({self.unpack()!r})"


def _has_packed(event: dict[str, Any]) -> bool:
    return any(type(v) is PackedText for v in event.values())


def _big(value: Any) -> bool:
    return type(value) is str and len(value) >= MIN_PACKED_CHARS


def pack_events(events: Sequence[dict[str, Any]]) -> Any:
    """``events`` as a ``PackedEvents`` when any of them holds a big string, else ``events`` itself.

    An event without a big string stays the very dict given (as rows kept every event before).
    """
    if not any(_big(v) for e in events for v in e.values()):
        return events
    return PackedEvents([{k: pack_text(v) if _big(v) else v for k, v in e.items()} if any(_big(v) for v in e.values()) else e
                         for e in events])
