"""The canonical transcript model every importer converts into.

Messages are frozen pydantic models holding tuples of blocks, so a stage that
wants to change one must build a new one (``model_copy(update=...)``); the
input list it was given can never be edited in place by accident.

Tool results live in ``user`` messages as ``tool_result`` blocks, the way the
Anthropic Messages API carries them; the OpenAI exporter splits them into
``tool`` messages. A compaction boundary is a ``system`` message whose
``boundary`` field is set: it is kept in the lab's history but never sent to
a provider.
"""

from __future__ import annotations

import json
from datetime import datetime
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, Self, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ImageBlock",
    "Block",
    "Usage",
    "Boundary",
    "Message",
    "ToolSpec",
    "ImportNotes",
    "TranscriptMeta",
    "Transcript",
    "Role",
    "block_text",
    "message_text",
    "tool_pairs",
    "has_tool_result",
    "is_sent",
    "shared_prefix",
    "model_builder",
]

Role = Literal["system", "user", "assistant"]

_M = TypeVar("_M", bound=BaseModel)

# What a compacted tool_result now holds instead of its original content.
Compacted = Literal["spill", "dedup", "cleared", "masked", "truncated"]

# Marks on messages the pipeline itself inserted.
MessageTag = Literal["summary", "placeholder", "truncation_note", "boundary", "memory"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> Self:
        """The model holding ``fields`` as they are, without validating them: for values already checked.

        Why: an importer that has checked every value while reading (``lab.formats``) would pay a
        second, full validation per block and message, a large share of a 100 MB import. The result
        is what ``model_validate(fields)`` gives for such values (equal, and the same fields set);
        nested values must already be models (``content`` a tuple of blocks, ``usage`` a ``Usage``).
        Fields left out get their defaults. ``fields`` becomes the model's own: the caller drops it.
        """
        obj = _new(cls)
        given = set(fields)
        defaults = _DEFAULTS.get(cls)
        if defaults is None:
            defaults = _DEFAULTS[cls] = [(name, info.default_factory, info.default) for name, info in cls.__pydantic_fields__.items()]
        if len(given) != len(defaults):
            # Declaration order, as validation gives it (repr and iteration show it).
            fields = {name: fields[name] if name in given else factory() if factory is not None else default for name, factory, default in defaults}
        _set_values(obj, fields)
        _set_fields_set(obj, given)
        _set_extra(obj, None)
        _set_private(obj, None)
        return obj

    @classmethod
    def trusted_builder(cls, *given: str) -> Callable[[dict[str, Any]], Self]:
        """``trusted`` for one shape of values: ``build(fields)``, ``fields`` holding every field in declaration order.

        Why: an importer builds the same few shapes by the hundred thousand, and ``trusted``'s
        generic work (the set of keys, the defaults filled in) is a large share of each build. The
        caller writes each field out, defaults included (a model's ``__dict__`` holds them all);
        ``given`` names the ones validation would count as set (``model_fields_set``). Nothing is
        checked per build: the caller's tests hold the shape to ``model_validate``'s.

        The models one builder makes share one ``model_fields_set`` set: a frozen model's is never
        changed (``model_copy`` and ``copy`` copy it before adding to it), and a set per model was
        an allocation and some 200 bytes for every block and message of an import, a measurable
        share of its time (``python -m lab bench --section imports``).
        """
        return model_builder(cls, *given)


def model_builder(cls: type[_M], *given: str) -> Callable[[dict[str, Any]], _M]:
    """``_Frozen.trusted_builder`` for any pydantic model class, e.g. a report's many small records.

    A model that is not frozen may be built so too when ``given`` names every field: assigning a field
    later then adds nothing to the shared ``model_fields_set`` set (it already holds them all).
    """
    unknown = set(given) - set(cls.__pydantic_fields__)
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    if not cls.model_config.get("frozen") and set(given) != set(cls.__pydantic_fields__):
        raise ValueError(f"{cls.__name__} is not frozen: its builder must name every field as given")
    names = set(given)
    # Closure cells, not globals: each build reads them once.
    new, set_value, set_fields_set, set_extra, set_private = _new, _set_value, _set_fields_set, _set_extra, _set_private

    def build(fields: dict[str, Any]) -> Any:
        obj = new(cls)
        # Field by field, never ``__dict__ = fields``: see ``_set_values``.
        for name, value in fields.items():
            set_value(obj, name, value)
        set_fields_set(obj, names)
        set_extra(obj, None)
        set_private(obj, None)
        return obj

    return cast(Callable[[dict[str, Any]], _M], build)


# ``_Frozen.trusted``'s machinery: a model's fields and slots set past its own ``__setattr__`` (a frozen
# model's refuses), and each class's fields with their defaults, in order.
_new = object.__new__
_set_value = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_DEFAULTS: dict[type, list[tuple[str, Any, Any]]] = {}


def _set_values(obj: BaseModel, fields: dict[str, Any]) -> None:
    """Set a new model's fields one by one, in declaration order, as its instance attributes.

    Why: a dict handed over as ``__dict__`` is a dict of its own (272 bytes for a message's 7 fields,
    a quarter of a tiny message's memory). Set as attributes, the values live in the object itself
    under keys every instance of the class shares (CPython's inline values, 3.11+), and a dict is
    made only if something asks for ``__dict__`` (pydantic's equality, hash and dump do; 64 bytes then).
    A model built so is the one ``model_validate`` gives: same fields, same order, same values.
    """
    for name, value in fields.items():
        _set_value(obj, name, value)


class TextBlock(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(_Frozen):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class ToolUseBlock(_Frozen):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(_Frozen):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str = ""
    is_error: bool = False
    # Set by compaction stages; None means the content is the tool's own output.
    compacted: Compacted | None = None
    # Where a spilled result's full content can be read back.
    spill_path: str | None = None
    # Size in characters of the content before any stage replaced it.
    original_chars: int | None = None


class ImageBlock(_Frozen):
    """A placeholder for an image: its size is kept, its pixels never are."""

    type: Literal["image"] = "image"
    media_type: str = "image/png"
    size_bytes: int = 0
    source: Literal["base64", "url", "file", "unknown"] = "base64"
    url: str | None = None


Block = Annotated[
    TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]


class Usage(_Frozen):
    """Token usage the provider reported for the request that produced a message."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # What the agent itself recorded the request cost, in US dollars (Claude Code's costUSD, Cline's and
    # Aider's cost reports); None when it recorded none. The replay prices tokens itself: this is the bill
    # its price table is checked against.
    cost_usd: float | None = None

    @property
    def total(self) -> int:
        # Without the cache terms an anchor is far too low whenever the cache hits.
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


class Boundary(_Frozen):
    """Where and why history was compacted (MiniCode's CompactBoundary)."""

    trigger: Literal["manual", "auto", "reactive", "emergency", "microcompact_time", "microcompact_cached", "import"]
    strategy: str
    timestamp: datetime | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    messages_removed: int = 0
    # Ids of the first and last messages kept verbatim after the boundary.
    preserved_first_id: str | None = None
    preserved_last_id: str | None = None
    # Messages right after the marker that the compaction wrote as copies of kept history (Codex's
    # replacement history), besides its summary; replaying the raw history drops them with the marker.
    replaced_messages: int = Field(0, ge=0)


class Message(_Frozen):
    role: Role
    content: tuple[Block, ...] = ()
    id: str
    timestamp: datetime | None = None
    usage: Usage | None = None
    tag: MessageTag | None = None
    boundary: Boundary | None = None


class ToolSpec(_Frozen):
    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


class ImportNotes(BaseModel):
    """What an importer skipped, dropped, repaired or flagged, with counts."""

    model_config = ConfigDict(extra="forbid")

    skipped: dict[str, int] = Field(default_factory=dict)
    dropped: list[str] = Field(default_factory=list)
    orphan_tool_results: list[str] = Field(default_factory=list)
    unanswered_tool_uses: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    records_read: int = 0

    def skip(self, kind: str, n: int = 1) -> None:
        self.skipped[kind] = self.skipped.get(kind, 0) + n


class TranscriptMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_format: str = "lab"
    session_id: str | None = None
    model: str | None = None
    title: str | None = None
    source_path: str | None = None
    # The agent's working directory when the source records it, to resolve relative tool paths.
    cwd: str | None = None
    # Facts planted by the generator, so retention can be scored on them.
    planted_facts: list[str] = Field(default_factory=list)


class Transcript(BaseModel):
    model_config = ConfigDict(extra="forbid")

    meta: TranscriptMeta = Field(default_factory=TranscriptMeta)
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    # Subagent threads, kept apart from the main thread, keyed by thread id.
    sidechains: dict[str, list[Message]] = Field(default_factory=dict)
    notes: ImportNotes = Field(default_factory=ImportNotes)


def block_text(block: Block) -> str:
    """The text a block contributes to a prompt, for counting and searching."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolResultBlock):
        return block.content
    if isinstance(block, ToolUseBlock):
        return block.name + " " + json.dumps(block.input, ensure_ascii=False, sort_keys=True)
    if isinstance(block, ThinkingBlock):
        return block.thinking
    return ""


def message_text(message: Message) -> str:
    return "\n".join(block_text(b) for b in message.content)


def has_tool_result(messages: Sequence[Message]) -> bool:
    """Whether any of ``messages`` carries a tool result (what the tool dispatcher's hook looks at)."""
    return any(isinstance(b, ToolResultBlock) for m in messages for b in m.content)


def is_sent(message: Message) -> bool:
    """Whether a message reaches the provider: boundary markers stay in the lab's history only."""
    return message.boundary is None and message.tag != "boundary"


def tool_pairs(messages: list[Message]) -> dict[str, tuple[int | None, int | None]]:
    """Map each tool_use id to (index of its tool_use message, index of its result message)."""
    pairs: dict[str, list[int | None]] = {}
    for i, m in enumerate(messages):
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                pairs.setdefault(b.id, [None, None])[0] = i
            elif isinstance(b, ToolResultBlock):
                pairs.setdefault(b.tool_use_id, [None, None])[1] = i
    return {k: (v[0], v[1]) for k, v in pairs.items()}


def shared_prefix(a: Sequence[Message], b: Sequence[Message], limit: int | None = None) -> int:
    """How many leading messages ``a`` and ``b`` share (the same or equal objects), up to ``limit``.

    Incremental work (the Compactor's settled prefix, the replay's running
    sums, the validity checks) asks this several times on every request, over
    the whole history. The usual case, one history extending the other with
    the same objects, is one list comparison in C (identity first, then
    equality). Copying the heads to compare them costs less than any
    element-by-element iterator chain: a pointer copy per message against
    several iterator steps (measured: 7 us against 51 us at 1,200 messages).
    Past the first difference, slice comparisons and a binary search find it.
    """
    n = min(len(a), len(b)) if limit is None else min(limit, len(a), len(b))
    if n <= 0:
        return 0
    if _equal(_head(a, n), _head(b, n)):
        return n
    lo, hi = 0, n
    # Invariant: a[:lo] == b[:lo], and the first difference lies in [lo, hi).
    while hi - lo > 16:
        mid = (lo + hi) // 2
        if _equal(a[lo:mid], b[lo:mid]):
            lo = mid
        else:
            hi = mid
    for i in range(lo, hi):
        if a[i] is not b[i] and a[i] != b[i]:
            return i
    return hi


def _head(x: Sequence[Message], n: int) -> Sequence[Message]:
    return x if len(x) == n else x[:n]


def _equal(x: Sequence[Message], y: Sequence[Message]) -> bool:
    # A list never equals a tuple: compare as lists only when the kinds differ.
    return x == y if type(x) is type(y) else list(x) == list(y)
