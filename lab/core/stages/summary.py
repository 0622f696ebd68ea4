"""Stage 6, summary compaction: session memory first, then the full summary.

The caller (the watermark decision, a manual ``/compact``, or recovery) has
already decided that compaction runs; this stage does it. The new history is

    system prompt + boundary marker + user summary (+ placeholder) + verbatim tail

The summary is a ``user`` message so the request stays valid for both
providers whichever design's text is used. The tail is chosen by
``lab.core.tail`` and never splits a tool pair. A compaction that saves less
than ``min_saving`` is refused: the input comes back unchanged with a failed
event, as MiniCode does.

Session memory and the full summary keep different tails in MiniCode: session
memory scans back within ``tail_min_tokens..tail_max_tokens`` (``tail_policy``),
the rule-based full compact keeps only the newest ``min(n / 3,
tail_min_messages)`` messages (``full_tail_policy="third"``), counted as
MiniCode's list holds them or as the lab's turns (``full_tail_unit``). With one tail for
both, a context smaller than the session-memory tail could never be
summarised at all, which is what broke MiniCode at small windows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from collections.abc import Generator, Sequence
from typing import Literal

from pydantic import Field

from ...errors import SummaryError
from ..events import Event
from ..ids import id_key
from ..messages import Boundary, Message, TextBlock
from ..summarizers.attachment import build_attachment
from ..summarizers.base import SummaryRequest, SummaryResult
from ..summarizers.rules import first_user_request, render_user_messages, user_texts
from ..summarizers.session_memory import SessionMemorySummarizer
from ..tail import adjust_for_pairs, count_units, repair_roles, select_tail, third_tail_start
from .base import StageConfig
from .contract import Decision, Rewrite, Summarize, View

__all__ = ["SummaryConfig", "SummaryStage"]

# Strategies whose text is MiniCode's own format; anything else is an LLM summary.
_MINICODE_STRATEGIES = ("session_memory", "full")
_BOUNDARY_TRIGGERS = ("manual", "auto", "reactive", "emergency")


class SummaryConfig(StageConfig):
    session_memory: bool = Field(True, description="Try session-memory compaction first (MiniCode 6a).")
    memory_text: str | None = Field(None, description="Project memory supplied by the user; when empty it is extracted by rules from the transcript.")
    memory_max_tokens: int = Field(6000, ge=100, le=100_000, description="Cap on the session-memory text (MiniCode 6000 tokens).")
    summarizer: Literal["rules", "anthropic", "openai"] = Field("rules", description="Who writes the full summary: offline rules, or an LLM.")
    tail_policy: Literal["minicode", "mewcode"] = Field("minicode", description="MiniCode: scan back within min..max tokens and at least N messages. MewCode: keep the wider of >= min tokens AND >= N messages.")
    tail_min_tokens: int = Field(10_000, ge=0, le=500_000, description="Minimum tokens in the verbatim tail (both designs 10,000).")
    tail_max_tokens: int = Field(40_000, ge=1000, le=1_000_000, description="Maximum tokens in the verbatim tail (MiniCode 40,000).")
    tail_min_messages: int = Field(5, ge=1, le=200, description="Minimum messages in the verbatim tail (both designs 5); with full_tail_policy 'third' also the most the full summary keeps, and it fails with this many or fewer (counted in full_tail_unit; MiniCode's min_keep_messages, 5).")
    full_tail_policy: Literal["third", "same"] = Field("third", description="Tail of the full summary (not session memory). 'third': the newest min(n/3, tail_min_messages) messages (counted in full_tail_unit), no token bounds (MiniCode 6b). 'same': the tail_policy tail, as session memory keeps (MewCode's only summary).")
    full_tail_unit: Literal["turns", "minicode_messages"] = Field("turns", description="What full_tail_policy 'third' counts. 'minicode_messages': "
                                                                  "MiniCode's len(non_system), every user and assistant message with each tool result "
                                                                  "one message and harness lines included, the cut moved only to keep tool pairs whole "
                                                                  "(MiniCode 6b). 'turns': the conversation turns the agent wrote, not tagged harness "
                                                                  "lines or the lab's own messages.")
    rules_format: Literal["lab", "seed"] = Field("lab", description="The rule-based full summary. 'seed': MiniCode's text: topics (100 chars "
                                                 "of up to 8 user messages), tools, files touched (file_path inputs, up to 10) and errors (80 chars "
                                                 "of up to 3), from the removed messages only, plus the first request verbatim and any earlier summary "
                                                 "carried whole. 'lab': those sections from the lab's own reading, items of earlier summaries "
                                                 "carried into them, and the sections a continuing agent needs (user messages, files changed and read, "
                                                 "commands, errors, decisions, current step).")
    min_saving: float = Field(0.05, ge=0.0, le=0.9, description="Fail the compaction when it saves less than this share (MiniCode 5%).")
    summary_max_tokens: int = Field(20_000, ge=500, le=200_000, description="Budget for the summary text.")
    attachment_files: int = Field(5, ge=0, le=50, description="Recovery attachment: most recently read files (MewCode 5).")
    attachment_file_tokens: int = Field(5000, ge=100, le=100_000, description="Recovery attachment: tokens per file (MewCode 5000).")
    attachment_max_window_share: float = Field(0.25, ge=0.0, le=1.0, description="Recovery attachment: at most this share of the context window, in tokens; over it, tool schemas go first, then files oldest first, the newest kept being cut (MewCode has no cap; 25% of 200k leaves its 5 x 5000 whole; 0 = no attachment).")
    keep_user_messages_tokens: int = Field(0, ge=0, le=200_000, description="Codex-style: also keep the most recent user messages, verbatim, up to this many tokens inside the summary message (0 = off).")
    llm_model: str = Field("", max_length=200, description="Model for an LLM summarizer; empty picks the provider's default.")
    llm_base_url: str | None = Field(None, max_length=2000, description="Base URL for an LLM summarizer (OpenAI-compatible local servers: include /v1). The API key never goes in a config; it comes from the environment or the app's session.")
    attachment_for_rules: bool = Field(False, description="Also append the recovery attachment (recent files, tools, lossy notice) to rule-based and session-memory summaries; LLM summaries always get it.")

    tail_window_share: float = Field(0.0, ge=0.0, le=0.9, description="Window-relative tail: when above 0, the tail keeps at most this share of the window and needs at least half of it, within the absolute min/max above, so a small window still leaves something to summarise (0 = the absolute bounds only, as both designs).")

    def attachment_tokens(self, window: int) -> int:
        """The most tokens the recovery attachment may take at a ``window``-token context."""
        return int(self.attachment_max_window_share * window)

    def tail_bounds(self, window: int) -> tuple[int, int]:
        """(min, max) tokens of the verbatim tail at a ``window``-token context."""
        if self.tail_window_share <= 0:
            return self.tail_min_tokens, self.tail_max_tokens
        cap = int(self.tail_window_share * window)
        return min(self.tail_min_tokens, cap // 2), min(self.tail_max_tokens, max(cap, 1))


def _visible_tokens(messages: Sequence[Message], view: View) -> int:
    """Tokens of ``messages`` without boundary markers (never sent, so they cost nothing).

    ``view.tokens`` reads the settled prefix from the running totals instead of recounting it.
    """
    markers = [m for m in messages if m.tag == "boundary"]
    return view.tokens(messages) - (view.counter.count_messages(markers) if markers else 0)


def _text(m: Message) -> str:
    return "\n".join(b.text for b in m.content if isinstance(b, TextBlock))


def _is_pipeline(m: Message) -> bool:
    return m.tag is not None or m.role == "system"


class SummaryStage:
    """Replace everything before a verbatim tail with one summary message."""

    name = "summary"

    def __init__(self, config: SummaryConfig | None = None) -> None:
        self.config = config or SummaryConfig()

    def decide(self, view: View, config: SummaryConfig, state: None = None) -> Generator[Summarize, SummaryResult, Decision]:
        """A generator: the full summary is a ``Summarize`` request the Compactor hands to the session's summarizer."""
        cfg = config
        msgs = list(view.messages)
        if not cfg.enabled:
            return Decision()
        tokens_before = _visible_tokens(msgs, view)
        n_head = 0
        while n_head < len(msgs) and msgs[n_head].role == "system" and msgs[n_head].tag != "boundary":
            n_head += 1
        head, body = msgs[:n_head], msgs[n_head:]

        events: list[Event] = []
        # MiniCode's forced full compact (reactive recovery) skips session memory.
        if cfg.session_memory and view.trigger != "reactive":
            removed, tail = self._split(body, view, cfg, full=False)
            if not any(not _is_pipeline(m) for m in removed):
                detail = f"session memory: nothing to summarise: the tail keeps {len(tail)} of {len(body)} messages"
                events.append(self._event(view, tokens_before, tokens_before, "session_memory", False, detail))
            else:
                # Session memory is the lab's own rule-based text: no summarizer to ask.
                memory = SessionMemorySummarizer(cfg.memory_max_tokens)
                try:
                    result = memory.summarize(self._request(removed, view, cfg, tokens_before, len(msgs)))
                except SummaryError as e:
                    events.append(self._event(view, tokens_before, tokens_before, "session_memory", False, f"session memory failed: {e}"))
                else:
                    done = self._build(head, removed, tail, result, view, cfg, tokens_before)
                    if done.changes:
                        return Decision(done.changes, tuple(events) + done.events)
                    events += done.events
        strategy = "full" if view.summarizer == "rules" else "llm"
        size = count_units(body, cfg.full_tail_unit)
        if cfg.full_tail_policy == "third" and size <= cfg.tail_min_messages:
            # MiniCode's _run_full_compact: "Too few messages to compact" at min_keep_messages or fewer.
            what = "turn(s)" if cfg.full_tail_unit == "turns" else "message(s)"
            detail = f"too few messages to compact: {size} {what}, at most summary.tail_min_messages ({cfg.tail_min_messages})"
            return self._fail(view, tokens_before, strategy, detail, events)
        removed, tail = self._split(body, view, cfg, full=True)
        if not any(not _is_pipeline(m) for m in removed):
            return self._fail(view, tokens_before, None, f"nothing to summarise: the tail keeps {len(tail)} of {len(body)} messages", events)
        try:
            # PromptTooLongError from an LLM summarizer propagates: the caller owns the PTL retry.
            request = self._request(removed, view, cfg, tokens_before, len(msgs))
            result = yield Summarize(request, seed=cfg.rules_format == "seed")
        except SummaryError as e:
            return self._fail(view, tokens_before, strategy, f"summary failed: {e}", events)
        done = self._build(head, removed, tail, result, view, cfg, tokens_before)
        return Decision(done.changes, tuple(events) + done.events)

    @staticmethod
    def _split(body: list[Message], view: View, cfg: SummaryConfig, *, full: bool) -> tuple[list[Message], list[Message]]:
        """(removed, tail) for session memory or, with ``full``, for the full summary; never splits a tool pair."""
        if full and cfg.full_tail_policy == "third":
            start = third_tail_start(body, cfg.tail_min_messages, cfg.full_tail_unit)
        else:
            low, high = cfg.tail_bounds(view.window)
            start = select_tail(body, view.counter, cfg.tail_policy, low, high, cfg.tail_min_messages)
        start = adjust_for_pairs(body, start)
        return body[:start], body[start:]

    @staticmethod
    def _request(removed: list[Message], view: View, cfg: SummaryConfig, tokens_before: int, messages_before: int) -> SummaryRequest:
        return SummaryRequest(
            messages=removed,
            counter=view.counter,
            trigger=view.trigger,
            instructions=view.instructions,
            tools=tuple(view.tools),
            max_tokens=cfg.summary_max_tokens,
            memory=cfg.memory_text,
            now=view.now,
            tokens_before=tokens_before,
            messages_before=messages_before,
        )

    @staticmethod
    def _summary_text(removed: list[Message], tail: list[Message], result: SummaryResult, view: View, cfg: SummaryConfig) -> tuple[str, str]:
        llm = result.strategy not in _MINICODE_STRATEGIES
        cap = cfg.attachment_tokens(view.window)
        attachment = result.attachment
        # An LLM summarizer builds its attachment without knowing the window: rebuilt within the cap when over it.
        if (not attachment and (llm or cfg.attachment_for_rules)) or (attachment and view.counter.count_text(attachment) > cap):
            attachment = build_attachment(removed, view.tools, view.counter, cfg.attachment_files, cfg.attachment_file_tokens, max_tokens=cap)
        text = f"## Session summary\n{result.text}" if llm else result.text
        if cfg.keep_user_messages_tokens:
            # A rule summary may already hold a message verbatim; do not pay for it twice.
            texts = [t for t in user_texts(removed) if not t.carried and t.text not in text]
            kept = render_user_messages(texts, cfg.keep_user_messages_tokens, view.counter)
            if kept:
                text += "\n\n## Recent user messages (verbatim)\n" + kept
        first = first_user_request(removed)
        if first is None and view.first_request and not any(view.first_request in _text(m) for m in tail):
            # A truncation note carries the request in a form the summarizer does not read; the session remembers it.
            first = view.first_request
        if first is not None and first not in text:
            # An LLM may paraphrase; the lab guarantees the first request survives word for word.
            text += f"\n\n## The user's first request (verbatim)\n<primary-request>\n{first}\n</primary-request>"
        if attachment:
            text += "\n\n" + attachment
        return text, attachment

    def _build(
        self, head: list[Message], removed: list[Message], tail: list[Message], result: SummaryResult, view: View, cfg: SummaryConfig, tokens_before: int
    ) -> Decision:
        """The compacted history for one summary (a ``Rewrite``), or only a failed event when it saves too little."""
        text, attachment = self._summary_text(removed, tail, result, view, cfg)
        strategy = result.strategy
        key = id_key(strategy, removed[0].id, removed[-1].id, text)
        stamp = next((m.timestamp for m in reversed(removed) if m.timestamp is not None), None)
        summary = Message(role="user", content=(TextBlock(text=text),), id=f"summary-{key}", timestamp=stamp, tag="summary")
        rest = repair_roles([summary, *tail])
        tokens_after = view.counter.count_messages(head) + view.counter.count_messages(rest)
        if tokens_after > (1.0 - cfg.min_saving) * tokens_before:
            detail = f"{strategy} summary saves too little: {tokens_before} -> {tokens_after} tokens (needs {cfg.min_saving:.0%})"
            event = self._event(view, tokens_before, tokens_after, strategy, False, detail, text, attachment)
            return Decision(events=(event,))
        boundary = Boundary(
            trigger=view.trigger if view.trigger in _BOUNDARY_TRIGGERS else "auto",  # type: ignore[arg-type]
            strategy=strategy,
            timestamp=datetime.fromtimestamp(view.now, tz=UTC),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            messages_removed=len(removed),
            preserved_first_id=tail[0].id if tail else None,
            preserved_last_id=tail[-1].id if tail else None,
        )
        marker = Message(
            role="system",
            content=(TextBlock(text=f"[Compaction boundary: {strategy} summary, {len(removed)} messages removed]"),),
            id=f"boundary-{key}",
            timestamp=stamp,
            tag="boundary",
            boundary=boundary,
        )
        detail = f"{strategy} summary replaced {len(removed)} messages; kept a tail of {len(tail)}"
        event = self._event(view, tokens_before, tokens_after, strategy, True, detail, text, attachment, tuple([m.id for m in removed]))
        return Decision((Rewrite((*head, marker, *rest), boundary),), (event,))

    def _event(
        self,
        view: View,
        before: int,
        after: int,
        strategy: str | None,
        success: bool,
        detail: str,
        text: str | None = None,
        attachment: str | None = None,
        ids: tuple[str, ...] = (),
    ) -> Event:
        return Event(
            stage=self.name,
            trigger=view.trigger,
            tokens_before=before,
            tokens_after=after,
            ids=ids,
            strategy=strategy,
            success=success,
            detail=detail,
            summary_text=text,
            attachment=attachment or None,
        )

    def _fail(self, view: View, before: int, strategy: str | None, detail: str, events: Sequence[Event] = ()) -> Decision:
        return Decision(events=(*events, self._event(view, before, before, strategy, False, detail)))
