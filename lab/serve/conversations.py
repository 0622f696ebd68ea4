"""One ``Compactor`` per live conversation, fed only the new suffix of each request.

Agents resend the whole history on every request. A proxy that compacted
each request from scratch could decide differently from one request to the
next, and the upstream's prompt cache would miss on every request. So each
conversation keeps its Compactor, the canonical history it was given last
time and what it sent: the next request's history must extend the last one
(compared as canonical messages), its new messages are put behind the last
*output*, and the Compactor's incremental path (``lab.core.incremental``) keeps
every earlier decision frozen. Request k+1 then exports, byte for byte, the
same prefix as request k up to the first message a new decision touches.

A conversation is recognised by a session header when the client sends one
(Claude Code's ``x-claude-code-session-id``), else by a hash of the API, the
system prompt and the first user turn. A history that does not extend the last
one (the agent compacted or edited it) starts the conversation's Compactor
over, counted as a reset.

Bodies are converted with the lab's own importers and exporters
(``lab.formats.claude.anthropic``, ``openai_chat``, ``openai_responses``,
``export``): what goes upstream is what ``lab replay`` would send for those
messages. Only ``messages`` (the Responses API's ``input``) is rewritten;
every other field of the agent's body (system, instructions, tools, model,
sampling, metadata) is forwarded as it came.

A Responses request carries items the lab does not model (encrypted
reasoning, provider-run tools such as ``web_search_call``, compaction items).
So the import remembers which of the agent's items each canonical message came
from (an item the importer skips goes with the next message: reasoning and
searches precede the answer they belong to), and the export
(``lab.formats.export.to_responses``) sends, for every message the Compactor
left as it was, the agent's own items byte for byte; for one whose only change
is a rewritten tool output (spill, dedup, clearing), the same items with that
output replaced; only messages the Compactor made or changed otherwise (a
summary, a truncation) are exported, and their items are dropped with them.

This module never touches the network: ``lab.serve.app`` calls it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.compactor import CompactionOutcome, Compactor
from ..core.config import CompactionConfig
from ..core.events import Event
from ..core.messages import Message, ToolResultBlock, ToolUseBlock, has_tool_result
from ..core.store import FolderStore, MemoryStore, SpillStore
from ..errors import LabError
from ..core.messages import ImportNotes
from ..formats.history_builder import HistoryBuilder, Loc
from ..formats.openai.openai_responses import add_item, from_items
from ..formats.claude.anthropic import request_to_transcript
from ..formats.openai.openai_chat import from_messages
from ..formats.export import to_anthropic, to_openai, to_responses

__all__ = [
    "API_ANTHROPIC",
    "API_CHAT",
    "API_RESPONSES",
    "SESSION_HEADERS",
    "Conversation",
    "Conversations",
    "HashedStore",
    "Step",
    "conversation_key",
    "dumps_body",
    "strip_cache_control",
]

API_ANTHROPIC = "anthropic"
API_CHAT = "chat"
API_RESPONSES = "responses"

# Headers agents send that name their session; the first present wins.
SESSION_HEADERS = ("x-claude-code-session-id", "x-session-id", "session_id", "x-codex-session-id")

# Conversations kept in memory; the least recently used beyond this start over if they come back.
MAX_CONVERSATIONS = 2000


def strip_cache_control(value: Any) -> Any:
    """``value`` without ``cache_control`` markers: clients move them between requests, the content is what counts."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def _digest(value: Any) -> str:
    text = json.dumps(strip_cache_control(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _first_user(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    return next((m for m in items if isinstance(m, dict) and m.get("role") == "user"), None)


def conversation_key(api: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The conversation's id: a hash of the session header if any, else of the system prompt and the first user turn."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return _digest(["header", api, value])[:24]
    if api == API_RESPONSES:
        raw_input = body.get("input")
        return _digest([api, body.get("instructions"), raw_input if isinstance(raw_input, str) else _first_user(raw_input)])[:24]
    messages = body.get("messages")
    system = body.get("system") if api == API_ANTHROPIC else [m for m in messages or [] if isinstance(m, dict) and m.get("role") in ("system", "developer")][:1]
    return _digest([api, system, _first_user(messages)])[:24]


def dumps_body(body: Mapping[str, Any]) -> bytes:
    """A request body as compact JSON with the history (``messages``, or the Responses API's ``input``) last.

    The upstream's prompt cache reads tools, system, then messages; written in that order, a request that
    extends the last one shares its bytes up to the first message that changed.
    """
    ordered = {k: v for k, v in body.items() if k not in ("messages", "input")}
    for history in ("messages", "input"):  # Anthropic and Chat's history, the Responses API's
        if history in body:
            ordered[history] = body[history]
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


class HashedStore:
    """A spill store whose file names come from hashes only, never from ids or paths a request carries.

    The stub the Compactor writes names the file, so the agent's own read tool brings the output back.
    """

    def __init__(self, inner: SpillStore) -> None:
        self.inner = inner

    @staticmethod
    def _hashed(value: str) -> str:
        return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
        return self.inner.write(self._hashed(session_id), self._hashed(tool_use_id), content, header)

    def read(self, path: str) -> str:
        return self.inner.read(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def cleanup(self, max_age_seconds: float, now: float | None = None) -> int:
        return self.inner.cleanup(max_age_seconds, now)


@dataclass
class _Items:
    """The agent's Responses items behind each canonical message of one request."""

    by_message: dict[str, list[Any]] = field(default_factory=dict)
    imported: dict[str, Message] = field(default_factory=dict)
    # call_id -> the agent's call item, for exported items that must keep its kind (custom, local shell, namespaced).
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)


def _import_responses(raw: list[Any]) -> tuple[list[Message], _Items]:
    """``from_items(raw).messages``, item by item, noting which items each message came from."""
    b = HistoryBuilder(ImportNotes())
    base = Loc(None, "$")
    source = _Items()
    waiting: list[Any] = []
    for j, item in enumerate(raw):
        count, last = len(b.messages), b.messages[-1] if b.messages else None
        add_item(b, item, base.at(j), f"i{j}")
        waiting.append(item)
        if isinstance(item, dict) and isinstance(item.get("call_id"), str) and item.get("type") in _RESPONSES_CALLS:
            source.calls[item["call_id"]] = item
        if b.messages and (len(b.messages) != count or b.messages[-1] is not last):
            source.by_message.setdefault(b.messages[-1].id, []).extend(waiting)
            waiting = []
    if waiting and b.messages:
        # Items after the last message (skipped kinds only) go with it.
        source.by_message.setdefault(b.messages[-1].id, []).extend(waiting)
    messages = b.finish()
    source.imported = {m.id: m for m in messages}
    return messages, source


def _import(api: str, raw: list[Any]) -> list[Message]:
    if api == API_ANTHROPIC:
        return list(request_to_transcript({"messages": raw}).messages)
    if api == API_RESPONSES:
        return list(from_items(raw).messages)

    return list(from_messages(raw).messages)


def _had_cache_marker(raw: list[Any]) -> bool:
    return any(isinstance(m, dict) and isinstance(m.get("content"), list) and any(isinstance(b, dict) and "cache_control" in b for b in m["content"])
               for m in raw)


def _export(api: str, messages: Sequence[Message], mark_cache: bool) -> list[Any]:
    if api == API_ANTHROPIC:
        turns: list[Any] = to_anthropic(list(messages))["messages"]
        if mark_cache and turns and turns[-1]["content"]:
            # The agent asked the upstream to cache its history; the exporter drops markers, so the newest block carries one again.
            last = turns[-1]
            blocks = list(last["content"])
            blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
            turns[-1] = {**last, "content": blocks}
        return turns
    return list(to_openai(list(messages))["messages"])


# Responses items that carry a tool's output, and the calls they answer (``lab.formats.openai.openai_responses`` reads the same kinds).
_RESPONSES_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
_RESPONSES_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "computer_call", "tool_search_call"}
# The output item kind each call kind the exporter cannot spell (it writes function calls) is answered with.
_OUTPUT_OF = {"custom_tool_call": "custom_tool_call_output", "local_shell_call": "local_shell_call_output"}


def _call_ids(items: Sequence[Any]) -> set[str]:
    return {i["call_id"] for i in items if isinstance(i, dict) and isinstance(i.get("call_id"), str)}


def _patched(items: list[Any], imported: Message, now: Message) -> list[Any] | None:
    """The agent's ``items`` with the tool outputs the Compactor rewrote in ``now`` replaced; None when it changed more."""
    if now.role != imported.role or len(now.content) != len(imported.content):
        return None
    changed: dict[str, str] = {}
    for a, b in zip(imported.content, now.content, strict=True):
        if a == b:
            continue
        if not (isinstance(a, ToolResultBlock) and isinstance(b, ToolResultBlock) and a.tool_use_id == b.tool_use_id):
            return None
        changed[b.tool_use_id] = b.content
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and item.get("type") in _RESPONSES_OUTPUTS and item.get("call_id") in changed:
            item = {**item, "output": changed.pop(item["call_id"])}
        out.append(item)
    return None if changed else out


def _export_responses(messages: Sequence[Message], source: _Items) -> list[Any]:
    """The ``input`` items for ``messages``: the agent's own items wherever they still say the same (module docstring)."""
    reused: set[int] = set()

    def reuse(msg: Message) -> list[Any] | None:
        items, imported = source.by_message.get(msg.id), source.imported.get(msg.id)
        if not items or imported is None:
            return None
        out = list(items) if msg == imported else _patched(items, imported, msg)
        if out is None:
            return None
        ids = {b.id for b in msg.content if isinstance(b, ToolUseBlock)} | {b.tool_use_id for b in msg.content if isinstance(b, ToolResultBlock)}
        if not ids <= _call_ids(out):
            return None  # the importer renamed a repeated call id: the agent's items would not pair with the export
        reused.update(id(i) for i in out)
        return out

    items: list[Any] = to_responses(list(messages), instructions=False, reuse=reuse)["input"]
    fixed: list[Any] = []
    for item in items:
        call = source.calls.get(item.get("call_id", "")) if isinstance(item, dict) and id(item) not in reused else None
        if call is not None and item["type"] == "function_call" and (call["type"] != "function_call" or "namespace" in call):
            item = call  # a call the exporter cannot spell (custom, local shell, namespaced): the agent's own
        elif call is not None and item["type"] == "function_call_output" and call["type"] in _OUTPUT_OF:
            item = {**item, "type": _OUTPUT_OF[call["type"]]}
        fixed.append(item)
    return fixed


@dataclass
class Step:
    """What one request became: the body to send upstream and how the compaction went."""

    body: dict[str, Any]
    outcome: CompactionOutcome | None
    tokens_agent: int
    tokens_upstream: int
    reset: bool = False
    # Every event of the request: the dispatcher's (dedup, spill of new results), then the auto path's.
    events: tuple[Event, ...] = ()
    # A Responses request's items per message, for a recovery's export.
    source: _Items | None = None


@dataclass
class Conversation:
    """One conversation's Compactor and the history it was last given and produced."""

    key: str
    api: str
    compactor: Compactor
    seen: list[Message] = field(default_factory=list)
    sent: list[Message] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen_tokens: int = 0
    resets: int = 0

    def _extends(self, canon: list[Message]) -> bool:
        n = len(self.seen)
        return bool(n) and len(canon) >= n and canon[:n] == self.seen

    def step(self, body: Mapping[str, Any], *, now: float, commit: bool = True) -> Step:
        """Compact ``body``'s messages; ``commit=False`` (count_tokens) leaves the conversation as it was."""
        field = "input" if self.api == API_RESPONSES else "messages"
        raw = body.get(field)
        if self.api == API_RESPONSES and not isinstance(raw, list):
            # A plain-text input (or a continuation by previous_response_id): nothing the config could rewrite.
            return Step(dict(body), None, 0, 0)
        if not isinstance(raw, list):
            raise LabError(f"the request has no '{field}' list")
        with self.lock:
            source = None
            if self.api == API_RESPONSES:
                canon, source = _import_responses(raw)
            else:
                canon = _import(self.api, raw)
            extends = self._extends(canon)
            reset = commit and bool(self.seen) and not extends
            if commit and extends:
                compactor, given = self.compactor, self.sent + canon[len(self.seen):]
                agent_tokens = self.seen_tokens + self.compactor.count_tokens(canon[len(self.seen):])
            else:
                # A count, or a history that does not extend the last one: no frozen decisions apply.
                compactor = _fresh(self.compactor) if (reset or not commit) else self.compactor
                given = canon
                agent_tokens = compactor.count_tokens(canon)
            if has_tool_result(given[len(self.sent):] if commit and extends else given):
                # As an agent loop does (and ``lab replay``): newly arrived tool results go through the dispatcher's dedup and spill first.
                dispatched = compactor.dispatch(given, now=now)
                given, events = dispatched.messages, dispatched.events
            else:
                events = ()
            outcome = compactor.process_request(given, now=now)
            if commit:
                if reset:
                    self.compactor = compactor
                    self.resets += 1
                self.seen, self.sent, self.seen_tokens = canon, outcome.messages, agent_tokens
        out = dict(body)
        if source is not None:
            out["input"] = _export_responses(outcome.messages, source)
        else:
            out["messages"] = _export(self.api, outcome.messages, _had_cache_marker(raw))
        return Step(out, outcome, agent_tokens, outcome.tokens_after, reset=reset, events=events + outcome.events, source=source)

    def count(self, body: Mapping[str, Any]) -> int:
        """The tokens of ``body``'s messages as the agent sent them (audit mode); only the new suffix is counted."""
        field = "input" if self.api == API_RESPONSES else "messages"
        raw = body.get(field)
        if self.api == API_RESPONSES and isinstance(raw, str):
            raw = [{"role": "user", "content": raw}]
        if not isinstance(raw, list):
            raise LabError(f"the request has no '{field}' list")
        with self.lock:
            canon = _import(self.api, raw)
            extends = self._extends(canon)
            tokens = (self.seen_tokens if extends else 0) + self.compactor.count_tokens(canon[len(self.seen):] if extends else canon)
            self.seen, self.sent, self.seen_tokens = canon, canon, tokens
        return tokens

    def recover(self, step: Step, error: Any, *, now: float) -> Step:
        """The config's reactive recovery after the upstream refused ``step`` as too long (raises ``StageError`` when it gives up)."""
        if step.outcome is None:
            raise LabError("nothing to recover: the request was not compacted")
        with self.lock:
            outcome = self.compactor.recover(step.outcome.messages, error, now=now)
            self.sent = outcome.messages
        out = dict(step.body)
        if step.source is not None:
            out["input"] = _export_responses(outcome.messages, step.source)
        else:
            out["messages"] = _export(self.api, outcome.messages, _had_cache_marker(step.body.get("messages") or []))
        return Step(out, outcome, step.tokens_agent, outcome.tokens_after, events=outcome.events, source=step.source)


def _fresh(compactor: Compactor) -> Compactor:
    # A new Compactor with the same config, counter, store and summarizer; no frozen decisions.
    return Compactor(compactor.config, compactor.counter, compactor.store, compactor.summarizer, session_id=compactor.state.session_id)


class Conversations:
    """The live conversations, least recently used first out past ``limit``."""

    def __init__(self, config: CompactionConfig, *, spill_dir: Path | None = None, limit: int = MAX_CONVERSATIONS,
                 summarizer_factory: Callable[[CompactionConfig, str, str | None], Any] | None = None) -> None:
        self.config = config
        self.limit = limit
        inner: SpillStore = FolderStore(spill_dir) if spill_dir is not None else MemoryStore()
        self.store = HashedStore(inner)
        self._summarizer_factory = summarizer_factory
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, api: str, api_key: str | None = None) -> Conversation:
        """The conversation ``key`` speaking ``api``, made on first sight; ``api_key`` (the caller's) is for an LLM summarizer only."""
        with self._lock:
            conv = self._items.get(key)
            if conv is not None and conv.api == api:
                self._items.move_to_end(key)
                return conv
            summarizer = self._summarizer_factory(self.config, api, api_key) if self._summarizer_factory else None
            compactor = Compactor(self.config, store=self.store, summarizer=summarizer, session_id=key)
            conv = Conversation(key, api, compactor)
            self._items[key] = conv
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
            return conv

    def __len__(self) -> int:
        return len(self._items)
