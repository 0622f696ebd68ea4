"""The data behind the Summary page, and the side-by-side LLM summary; no Streamlit here.

- ``compaction_summaries(report)``: every summary a replay wrote, from the
  rows' events (``summary_text`` / ``attachment``), with the attachment split
  off the text it was appended to.
- ``retention_table(report)``: the retention report as rows (part, item,
  where it went, what removed it, and where in the final context it is).
- ``summarise_request(messages, config, llm)``: what a compaction of
  ``messages`` would summarise, summarised once by the offline rules and once
  by ``llm``, from the very same ``SummaryRequest``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from ..core.compactor import Compactor
from ..core.config import CompactionConfig
from ..core.messages import Message, ToolResultBlock, ToolSpec, block_text
from ..core.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from ..core.summarizers.rules import RuleSummarizer
from ..core.tokens.base import get_counter
from ..errors import SummaryError
from ..replayer.report import column

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer import Report

__all__ = [
    "CompactionSummary",
    "SummaryComparison",
    "compaction_summaries",
    "retention_table",
    "summarise_request",
    "PART_LABELS",
    "PART_HELP",
]

# Events that can carry a summary text (recovery runs the summary stage on its ladder).
_SUMMARY_STAGES = ("summary", "recovery")


@dataclass(frozen=True)
class CompactionSummary:
    """One summary a compaction wrote (or tried to write) during the replay."""

    request: int
    stage: str
    trigger: str
    strategy: str | None
    success: bool
    tokens_before: int
    tokens_after: int
    messages_removed: int
    detail: str
    text: str
    attachment: str

    @property
    def title(self) -> str:
        outcome = "applied" if self.success else "refused"
        return (
            f"request {self.request}: {self.strategy or self.stage} summary ({self.trigger}), {outcome}, "
            f"{self.tokens_before:,} -> {self.tokens_after:,} tokens"
        )


def _split_attachment(text: str, attachment: str) -> str:
    # The summary stage appends the attachment after a blank line; show the two apart.
    if attachment and text.endswith(attachment):
        return text[: len(text) - len(attachment)].rstrip("\n")
    return text


def compaction_summaries(report: Report) -> list[CompactionSummary]:
    """Every summary text the replay's events carry, in request order."""
    out: list[CompactionSummary] = []
    # Two columns, not a Row per request (a report's rows are columns: a Row is made when read).
    for index, events in zip(column(report.rows, "index"), column(report.rows, "events"), strict=True):
        for e in events:
            text = e.get("summary_text")
            if not text or e.get("stage") not in _SUMMARY_STAGES:
                continue
            attachment = e.get("attachment") or ""
            out.append(
                CompactionSummary(
                    request=index,
                    stage=str(e.get("stage")),
                    trigger=str(e.get("trigger")),
                    strategy=e.get("strategy"),
                    success=bool(e.get("success")),
                    tokens_before=int(e.get("tokens_before") or 0),
                    tokens_after=int(e.get("tokens_after") or 0),
                    messages_removed=len(e.get("ids") or ()),
                    detail=str(e.get("detail") or ""),
                    text=_split_attachment(text, attachment),
                    attachment=attachment,
                )
            )
    return out


# The retention parts in words, and what the two that need it mean.
PART_LABELS = {
    "first_request": "first request",
    "user_messages": "user messages",
    "file_paths": "file paths",
    "errors": "errors",
    "planted_facts": "planted facts",
    "recoverable": "recoverable output",
}
PART_HELP = {
    "planted_facts": "Planted facts: facts the session generator hid in a generated session to test whether compaction "
    "keeps them; a real session has none.",
    "recoverable": "Recoverable: tool output the pipeline took out of the context that can still be read back from its "
    "spill file, through a path the context still names.",
}


def _locate(context: Sequence[Message], part: str, item: str, where: str) -> str:
    """Where in the final context an item was found: a message id, or a spill file."""
    if where == "nowhere":
        return ""
    needle = item[:-3] if item.endswith("...") else item
    if part == "recoverable" or where == "spill":
        for m in context:
            for b in m.content:
                if isinstance(b, ToolResultBlock) and b.spill_path and (b.tool_use_id == item or needle in b.content):
                    return f"spill file {b.spill_path} (stub in message {m.id})"
        return "spill store"
    for i, m in enumerate(context):
        if any(needle in block_text(b) for b in m.content):
            return f"message {i} ({m.id})"
    return ""


def retention_table(report: Report) -> list[dict[str, Any]]:
    """One row per retention item: part (in words), item, where it went, what removed it, where it is now."""
    context = report.final_context() if report.has_contexts else []
    rows: list[dict[str, Any]] = []
    for part, data in report.retention.parts.items():
        for it in data.items:
            rows.append(
                {
                    "part": PART_LABELS.get(part, part.replace("_", " ")),
                    "item": it.item,
                    "where": it.where,
                    "kept": it.where != "nowhere",
                    "lost to": it.lost_to or "",
                    "found in": _locate(context, part, it.item, it.where) if context else "",
                }
            )
    return rows


@dataclass(frozen=True)
class SummaryComparison:
    """One summary request answered twice: by the offline rules and by an LLM."""

    removed: tuple[Message, ...]
    kept: int
    rules: SummaryResult
    llm: SummaryResult | None


def _manual_config(config: CompactionConfig) -> CompactionConfig:
    # Session memory would answer first and the LLM never be asked; a refused saving has no ids.
    summary = config.summary.model_copy(update={"enabled": True, "session_memory": False, "min_saving": 0.0, "summarizer": "rules"})
    return config.model_copy(update={"summary": summary}, deep=True)


def summarise_request(
    messages: Sequence[Message],
    config: CompactionConfig,
    llm: Summarizer | None = None,
    tools: Sequence[ToolSpec] = (),
    now: float | None = None,
) -> SummaryComparison:
    """Summarise what a manual compaction of ``messages`` would replace, by rules and by ``llm``.

    The core chooses the messages (active context, tail policy, tool pairs
    kept whole); both summarizers get the same ``SummaryRequest``. Raises
    ``SummaryError`` when there is nothing to summarise, and the provider's
    errors (``ProviderError``, ``PromptTooLongError``) as they come.
    """
    cfg = _manual_config(config)
    outcome = Compactor(cfg, tools=tools).compact(list(messages), now=now)
    event = next((e for e in outcome.events if e.stage == "summary"), None)
    if event is None or not event.success or not event.ids:
        reason = event.detail if event is not None else "the summary stage did not run"
        raise SummaryError(f"nothing to summarise at this request: {reason}")
    ids = set(event.ids)
    removed = tuple(m for m in messages if m.id in ids)
    counter = get_counter(cfg.counter)
    request = SummaryRequest(
        messages=removed,
        counter=counter,
        trigger="manual",
        tools=tuple(tools),
        max_tokens=cfg.summary.summary_max_tokens,
        now=now,
        tokens_before=counter.count_messages(messages),
        messages_before=len(messages),
    )
    rules = RuleSummarizer().summarize(request)
    result = llm.summarize(request) if llm is not None else None
    return SummaryComparison(removed, len(messages) - len(removed), rules, result)
