"""What a replay starts from: its config and transcript, its request points, its clock, its summarizer.

``resolve_config`` and ``as_transcript`` turn what a caller hands ``replay`` into
a config value and a transcript; ``request_points`` says where the requests
are; ``ReplayClock`` says when each is sent; ``RecordingSummarizer`` keeps each
summary call a row reports; ``prompt_too_long_error`` is the provider's refusal
the replay plays. The caches keyed by message identity, and the running sums a
row is read from, are ``identity_caches``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, cast
from collections.abc import Sequence

from ..core.config import CompactionConfig, parse_config, with_value
from ..core.messages import Message, Transcript, Usage, is_sent
from ..core.presets import preset
from ..core.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from ..core.summarizers.rules import message_plain_text
from ..errors import ConfigError, PromptTooLongError, TranscriptError
from .settings import ReplaySettings
from ..core.summarizers.rules import RuleSummarizer

__all__ = [
    "EPOCH",
    "ConfigLike",
    "request_points",
    "resolve_config",
    "with_session_cwd",
    "as_transcript",
    "prompt_too_long_error",
    "RecordingSummarizer",
    "default_summarizer",
    "sendable",
    "ReplayClock",
    "first_request_in",
    "message_has_text",
    "summary_numbers",
]

# 2025-01-01T00:00:00Z: the simulated clock's start, fixed so replays are reproducible.
EPOCH = 1_735_689_600.0

ConfigLike = CompactionConfig | str | dict | None


def request_points(messages: Sequence[Message]) -> list[int]:
    """Indices of assistant messages that answer a request (an assistant after a non-assistant).

    A recorded compaction's summary written as an assistant message (Continue's cn) answered the
    original agent's compaction call, not one of its requests, so it is no request point.
    """
    return [
        i for i in range(1, len(messages))
        if messages[i].role == "assistant" and messages[i - 1].role != "assistant" and messages[i].tag != "summary"
    ]


def resolve_config(config: ConfigLike, window: int | None = None) -> CompactionConfig:
    """``config`` as a value (a config, a preset name, a mapping, or None for the defaults), at ``window`` when given."""
    if config is None:
        cfg = CompactionConfig()
    elif isinstance(config, CompactionConfig):
        cfg = config  # frozen: shared as it is, never changed
    elif isinstance(config, str):
        cfg = preset(config)
    elif isinstance(config, dict):
        cfg = parse_config(config)
    else:
        raise ConfigError(f"config must be a CompactionConfig, a preset name or a mapping, got {type(config).__name__}")
    if window is not None and window != cfg.window:
        try:
            cfg = with_value(cfg, "window", window)
        except ConfigError as e:
            raise ConfigError(f"window: {str(e).split(': ', 1)[1]}") from None
    return cfg


def as_transcript(source: Transcript | str | os.PathLike[str] | Sequence[Message]) -> Transcript:
    """A transcript from a ``Transcript``, a file path (format detected) or a list of messages."""
    if isinstance(source, Transcript):
        return source
    if isinstance(source, (str, os.PathLike)):
        # Lazy: the format readers load only when a path is given (the replayer needs none of them otherwise).
        from ..formats import load

        return load(source)
    if isinstance(source, Sequence) and all(isinstance(m, Message) for m in source):
        # str was returned above; mypy's isinstance(Sequence) narrowing brings it back from the declared type.
        return Transcript(messages=list(cast(Sequence[Message], source)))
    raise TranscriptError(f"cannot replay a {type(source).__name__}", expected="a Transcript, a path, or a list of messages")


def prompt_too_long_error(tokens: int, window: int) -> PromptTooLongError:
    """The error Anthropic answers with when a prompt does not fit, body included."""
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return PromptTooLongError(message, body=body, provider="anthropic")


class RecordingSummarizer:
    """Passes calls through and keeps each result's usage, so rows can show summary calls and what they cost (a
    replay that records no trace clears them once its row has read them).

    Usages, not results: a resume reads only the usage of the summaries before its checkpoint, and a trace
    that kept the results held every summary text the session wrote (the report keeps them, compressed).
    """

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        # The summary stage names the strategy of a failure after the summarizer.
        self.name = getattr(inner, "name", "rules")
        self.calls = 0
        self.usages: list[Usage | None] = []

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        result = self.inner.summarize(request)
        self.usages.append(result.usage)
        return result


def default_summarizer(cfg: CompactionConfig, given: Summarizer | None, notes: list[str]) -> Summarizer:
    if given is not None:
        return given

    if cfg.summary.summarizer != "rules":
        # A replay reaches a provider only when the caller hands it an LLM summarizer on purpose.
        notes.append(f"config asks for the {cfg.summary.summarizer} summarizer but none was given: rule-based summaries used")
    return RuleSummarizer()


def with_session_cwd(cfg: CompactionConfig, t: Transcript, notes: list[str]) -> CompactionConfig:
    """``cfg`` with read dedup resolving relative paths against the session's recorded working directory.

    Only when the config names no ``dedup.cwd`` and the transcript recorded an
    absolute POSIX one (Claude Code and Codex do): the agent's own config would
    name it, so a replay of its session should resolve paths as it would.
    """
    cwd = t.meta.cwd
    if cfg.dedup.cwd is not None or cwd is None or not cwd.startswith("/"):
        return cfg
    try:
        dedup = with_value(cfg.dedup, "cwd", cwd)
    except ConfigError:
        return cfg
    notes.append(f"read dedup resolves relative paths against the session's working directory {dedup.cwd} (dedup.cwd was not set)")
    return cfg.model_copy(update={"dedup": dedup})


def sendable(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if is_sent(m)]


@dataclass
class ReplayClock:
    settings_use: bool
    seconds_per_request: float
    mode: str = "simulated"
    last: float | None = None

    @classmethod
    def for_transcript(cls, transcript: Transcript, settings: ReplaySettings) -> ReplayClock:
        clock = cls(settings.use_timestamps, settings.seconds_per_request)
        if clock.settings_use and any(m.timestamp is not None for m in transcript.messages):
            clock.mode = "timestamps"
        return clock

    def at(self, k: int, messages: Sequence[Message], start: int, point: int) -> float:
        """The time of request ``k``, sent after ``messages[start:point]`` arrived."""
        if self.mode == "simulated":
            return EPOCH + k * self.seconds_per_request
        # Only the messages new since the last request are searched, so a replay stays linear.
        stamp = next((messages[i].timestamp for i in range(point - 1, start - 1, -1) if messages[i].timestamp is not None), None)
        if stamp is None and self.last is None:
            stamp = messages[point].timestamp or next((m.timestamp for m in messages if m.timestamp is not None), None)
        now = stamp.timestamp() if stamp is not None else (self.last if self.last is not None else EPOCH)
        # Clocks in logs can step back (merged threads, skew); the replay's time never does.
        if self.last is not None and now < self.last:
            now = self.last
        self.last = now
        return now


def message_has_text(message: Message, text: str) -> bool:
    # The user's words are the message's text blocks joined (``message_plain_text``): a request sent as
    # several blocks (an IDE's attached file, then the typed words) is only found in that join.
    return text in message_plain_text(message)


def first_request_in(context: Sequence[Message], first: str | None) -> bool | None:
    if first is None:
        return None
    return any(message_has_text(m, first) for m in context)


def summary_numbers(usages: Sequence[Usage | None], pricing: Any) -> tuple[int, int, float]:
    inp = out = 0
    cost = 0.0
    for u in usages:
        if u is None:
            continue
        inp += u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        out += u.output_tokens
        cost += (
            u.input_tokens * pricing.input_per_mtok
            + u.cache_write_tokens * pricing.cache_write_per_mtok
            + u.cache_read_tokens * pricing.cache_read_per_mtok
            + u.output_tokens * pricing.output_per_mtok
        ) / 1_000_000
    return inp, out, cost
