"""The one ``Format`` type and the one registry of formats, open to plugins.

A format is a value: its name, the kinds of path it claims, ``sniff`` (does this
file head look like mine?), ``read``, and optionally a path claim (a folder or a
store known by its path) and a ``SessionSource`` (a file or store that holds
several sessions). A format module defines ``FORMAT = Format(...)`` and imports
nothing of the registry's loader; the registry imports the modules instead, by
name, as ``simonw/llm`` loads its default plugins:

    BUILTIN        the lab's own formats, in registration order
    "lab.formats"  the entry-point group a plugin package declares, e.g. in its
                   pyproject.toml: [project.entry-points."lab.formats"]
                   myformat = "my_package.my_module:FORMAT"

A plugin that cannot be loaded (an import error, not a ``Format``, a name the lab
already has) is skipped with a ``LabWarning``: one broken package never stops an
import of a file it has nothing to do with.

Containers of transcripts (archives and compressed files, folders of sessions)
are ``Wrapper`` values in the same registry: they hold transcripts rather than
being one, and hand what they hold back to the loader.

Which format wins when several claim a file is declared, not scored: each format
names the formats it is ``more_specific_than`` (a format's own schema beats a
generic message list), and ``order`` sorts by that relation (``specificity``).
Only formats that declare themselves ``rivals`` (the provider request bodies,
which share their shapes) are told apart by their sniff's strength, within
their one place in the order.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import LabWarning, TranscriptError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import Transcript

__all__ = [
    "FileHead", "SessionInfo", "SessionSource", "Format", "Wrapper", "Loader", "PathKind", "FORMATS", "WRAPPERS", "BUILTIN",
    "BUILTIN_WRAPPERS", "ENTRY_POINT_GROUP", "register", "register_wrapper", "load_builtins", "load_plugins", "specificity", "order",
    "SpecificityError", "session_sources", "REQUEST_BODIES",
]  # fmt: skip

# The provider request bodies (Anthropic Messages, OpenAI Chat Completions and Responses): the most generic shapes,
# rivals among themselves, that any format with a schema of its own is more specific than.
REQUEST_BODIES: tuple[str, ...] = ("anthropic", "openai_chat", "openai_responses")
# The entry-point group a plugin package declares its formats in.
ENTRY_POINT_GROUP = "lab.formats"

# What a format can claim: a file (known by its head), a folder or a store known by its path, a SQLite database.
PathKind = Literal["file", "folder", "sqlite"]


@dataclass(frozen=True)
class FileHead:
    """The start of a file, read once for every format's ``sniff`` (``jsonio.make_file_head``)."""

    path: Path
    # Up to the first 64 KiB of the file, decoded as UTF-8 (errors replaced).
    head: str
    # "jsonl" when the first line is a complete JSON object and more lines follow, "json" for one
    # document, "unknown" otherwise.
    shape: str
    # The first JSONL records (up to 20), or the top-level JSON value when the file is one small
    # document (None for large single documents, which formats must sniff from ``head``).
    records: list[Any] | None
    document: Any | None

    def first_value(self) -> Any | None:
        """The first JSONL record, else the parsed document; None when only ``head`` was read."""
        if self.records:
            return self.records[0]
        return self.document


@dataclass(frozen=True)
class SessionInfo:
    """One session of a file, folder or store that holds several, as ``lab.formats.sessions`` lists it.

    ``messages`` counts what the file holds for the session before import (Goose's
    and OpenCode's message rows or files, Aider's turns, OpenHands' events), so listing
    never imports. ``updated`` is ISO 8601 when the file records it, else None.
    ``kind`` says what the agent calls a session that is not a plain one
    (Goose's ``sub_agent``, an OpenCode subagent), else None.
    """

    id: str
    title: str | None
    messages: int
    updated: str | None
    format: str
    kind: str | None = None


@dataclass(frozen=True)
class SessionSource:
    """A format's hook for picking sessions; ``holds`` must be cheap (it runs before any read)."""

    # What holds several sessions, for errors: "Goose's sessions.db".
    what: str
    # Whether the path is one of this format's several-session containers (not one session of it).
    holds: Callable[[Path], bool]
    list: Callable[[Path], list[SessionInfo]]
    # Reads the session with this id; an id it does not list is ``session_pick.unknown_session``'s error.
    read: Callable[[Path, str], Transcript]
    # Every session in one pass, as (id, transcript or the reason it cannot be read), for a file whose
    # sessions ``read`` would find only by reading it all again (an output.jsonl, a chat history).
    each: Callable[[Path], Iterator[tuple[str, Transcript | TranscriptError]]] | None = None


@dataclass(frozen=True)
class Format:
    """One transcript format: how to know it, how to read it, and which formats it is more specific than."""

    name: str
    description: str
    # Whether the head is this format's: 0 for no, else how strongly it matches (compared only between ``rivals``).
    sniff: Callable[[FileHead], int]
    read: Callable[[Path], Transcript]
    # The kinds of path it claims (``import --help`` says them): files by their head, folders and stores by their path.
    kinds: frozenset[PathKind] = frozenset({"file"})
    # Formats whose files this one's may look like, and that must yield to it when both claim a file.
    more_specific_than: tuple[str, ...] = ()
    # Formats sharing one shape (the provider request bodies) name one group; within it the sniff's strength decides.
    rivals: str | None = None
    # A folder or store known by its path (tried before any file's head is read), and how to read it.
    finds: Callable[[Path], bool] | None = None
    read_found: Callable[[Path], Transcript] | None = None
    # When a file or store of this format can hold several sessions.
    sessions: SessionSource | None = None


class Loader(Protocol):
    """What a ``Wrapper`` hands what it holds back to: ``lab.formats.loading`` (so a wrapper never imports it)."""

    def load(self, path: Path, format: str | None = None, *, session: str | None = None) -> Transcript: ...

    def sessions(self, path: Path, format: str | None = None) -> list[SessionInfo]: ...


@dataclass(frozen=True)
class Wrapper:
    """A container of transcripts: an archive or compressed file (unpacked) or a folder of sessions (one picked).

    Each call gets the ``Loader`` to read what the container holds as ``lab.formats.load`` would.
    """

    name: str
    description: str
    holds: Callable[[Path], bool]
    load: Callable[[Path, str | None, str | None, Loader], Transcript]
    sessions: Callable[[Path, str | None, Loader], list[SessionInfo]]
    # Whether ``read_session`` (a session picked by id, no unpacking) goes through it too: folders yes, archives no.
    picks_sessions: bool = False
    kinds: frozenset[PathKind] = field(default_factory=lambda: frozenset({"file"}))


FORMATS: dict[str, Format] = {}
WRAPPERS: dict[str, Wrapper] = {}

# The lab's own formats, ``module:attribute``, in registration order: the order ``import --help`` and errors list
# them in, and the tie rule of ``order`` between formats the specificity relation leaves unordered.
BUILTIN: tuple[str, ...] = (
    "lab.formats.claude.anthropic:FORMAT",
    "lab.formats.claude.claude_code:FORMAT",
    "lab.formats.labjson:FORMAT",
    "lab.formats.shell_agents.minicode:FORMAT",
    "lab.formats.openai.openai_chat:FORMAT",
    "lab.formats.openai.openai_responses:FORMAT",
    "lab.formats.openhands.openhands:FORMAT",
    "lab.formats.openhands.openhands_v1:FORMAT",
    "lab.formats.editors.gemini:FORMAT",
    "lab.formats.shell_agents.langchain:FORMAT",
    "lab.formats.claude.managed_agents:FORMAT",
    "lab.formats.claude.agent_sdk:FORMAT",
    "lab.formats.http.http_log:FORMAT",
    "lab.formats.editors.aider:FORMAT",
    "lab.formats.editors.cline:FORMAT",
    "lab.formats.databases.opencode_storage:FORMAT",
    "lab.formats.databases.goose:FORMAT",
    "lab.formats.databases.goose_db:FORMAT",
    "lab.formats.editors.continue_dev:FORMAT",
    "lab.formats.editors.copilot_chat:FORMAT",
    "lab.formats.databases.cursor:FORMAT",
    "lab.formats.databases.zed:FORMAT",
    "lab.formats.databases.crush:FORMAT",
    "lab.formats.editors.qwen_code:FORMAT",
    "lab.formats.editors.copilot_cli:FORMAT",
    "lab.formats.shell_agents.pydantic_ai:FORMAT",
    "lab.formats.shell_agents.autogen:FORMAT",
    "lab.formats.openai.agents_sdk_db:FORMAT",
    "lab.formats.claude.block_lines:FORMAT",
)
# The containers, in the order ``load`` tries them: an archive is unpacked first, a folder of sessions is
# what is left of folders once every format's path claim said no.
BUILTIN_WRAPPERS: tuple[str, ...] = (
    "lab.formats.containers.archive:WRAPPER",
    "lab.formats.containers.session_folder:WRAPPER",
)


def register(fmt: Format) -> Format:
    """Add ``fmt`` to the registry (a plugin's format goes through ``load_plugins`` instead)."""
    FORMATS[fmt.name] = fmt
    return fmt


def register_wrapper(wrapper: Wrapper) -> Wrapper:
    WRAPPERS[wrapper.name] = wrapper
    return wrapper


def _resolve(spec: str) -> object:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def load_builtins() -> None:
    """Register the lab's own formats and containers (a missing one is the lab's bug: it raises)."""
    for spec in BUILTIN:
        fmt = _resolve(spec)
        assert isinstance(fmt, Format), spec
        FORMATS.setdefault(fmt.name, fmt)
    for spec in BUILTIN_WRAPPERS:
        wrapper = _resolve(spec)
        assert isinstance(wrapper, Wrapper), spec
        WRAPPERS.setdefault(wrapper.name, wrapper)


def load_plugins(entry_points: Callable[..., Iterable[Any]] | None = None) -> list[str]:
    """Register the formats plugin packages declare in the ``lab.formats`` entry-point group; their names.

    Each entry point names a ``Format`` (or a callable returning one). One that fails to load, is not a
    ``Format`` or reuses a registered name is skipped with a ``LabWarning`` naming it.
    """
    found = (entry_points or metadata.entry_points)(group=ENTRY_POINT_GROUP)
    added: list[str] = []
    for ep in found:
        try:
            value = ep.load()
            fmt = value() if callable(value) and not isinstance(value, Format) else value
        except Exception as exc:  # a plugin's own bug: said, never raised through the lab
            warnings.warn(f"format plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}", LabWarning, stacklevel=2)
            continue
        if not isinstance(fmt, Format):
            warnings.warn(f"format plugin {ep.name!r} ({ep.value}) is not a lab.formats.Format: {type(fmt).__name__}", LabWarning, stacklevel=2)
            continue
        if fmt.name in FORMATS:
            warnings.warn(f"format plugin {ep.name!r} reuses the format name {fmt.name!r}: skipped", LabWarning, stacklevel=2)
            continue
        register(fmt)
        added.append(fmt.name)
    return added


# The last ``specificity`` computed and the registry it was computed for.
_ORDER_CACHE: list[tuple[tuple[tuple[str, tuple[str, ...], str | None], ...], tuple[str, ...]]] = []


class SpecificityError(ValueError):
    """The declared ``more_specific_than`` relation has a circle (a registry bug, found by its test)."""


def specificity(formats: dict[str, Format] | None = None) -> list[str]:
    """Every format name, most specific first: a topological order of ``more_specific_than``.

    Formats of one ``rivals`` group take one place (the group's: an edge to or from any member counts for all of
    it). Among formats the relation leaves unordered, registration order decides. A circle is a ``SpecificityError``.
    """
    fmts = FORMATS if formats is None else formats
    # Detection asks for every file; the registry changes only when a format is registered (or a test swaps one).
    key = tuple((n, f.more_specific_than, f.rivals) for n, f in fmts.items())
    if _ORDER_CACHE and _ORDER_CACHE[0][0] == key:
        return list(_ORDER_CACHE[0][1])
    names = list(fmts)
    unit = {n: (f"rivals:{fmts[n].rivals}" if fmts[n].rivals else n) for n in names}
    units = list(dict.fromkeys(unit[n] for n in names))
    above: dict[str, set[str]] = {u: set() for u in units}  # unit -> units that must come before it
    for n in names:
        for weaker in fmts[n].more_specific_than:
            if weaker in unit and unit[weaker] != unit[n]:
                above[unit[weaker]].add(unit[n])
    out: list[str] = []
    placed: set[str] = set()
    while len(placed) < len(units):
        ready = next((u for u in units if u not in placed and above[u] <= placed), None)
        if ready is None:
            stuck = [u for u in units if u not in placed]
            raise SpecificityError(f"the more_specific_than relation has a circle among: {', '.join(stuck)}")
        placed.add(ready)
        out += [n for n in names if unit[n] == ready]
    _ORDER_CACHE[:] = [(key, tuple(out))]
    return out


def order(claims: dict[str, int], formats: dict[str, Format] | None = None) -> list[tuple[str, int]]:
    """``(format, strength)`` for the formats that claim a file (strength > 0), most specific first.

    Rivals (one place in the order) are ranked by strength, ties by registration order.
    """
    fmts = FORMATS if formats is None else formats
    rank = {n: i for i, n in enumerate(specificity(fmts))}
    reg = {n: i for i, n in enumerate(fmts)}
    claimed = [(n, s) for n, s in claims.items() if s > 0 and n in rank]
    # Members of a group sit together in ``rank``: the group's first member's place is the group's place.
    group_place: dict[str, int] = {}
    for n, f in fmts.items():
        if f.rivals is not None:
            group_place[f.rivals] = min(group_place.get(f.rivals, rank[n]), rank[n])

    def key(ns: tuple[str, int]) -> tuple[int, int, int]:
        n, s = ns
        group = fmts[n].rivals
        return (group_place[group], -s, reg[n]) if group is not None else (rank[n], 0, reg[n])

    return sorted(claimed, key=key)


def session_sources() -> dict[str, SessionSource]:
    """The formats that can hold several sessions, by name, in registration order."""
    return {name: fmt.sessions for name, fmt in FORMATS.items() if fmt.sessions is not None}
