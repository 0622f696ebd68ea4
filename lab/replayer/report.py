"""What a replay produces: one ``Row`` per request and a ``Report`` with the totals.

Rows and totals are plain data (pydantic models), so a report round-trips
through JSON: ``Report.from_dict(report.to_dict()) == report``. The contexts
themselves are not part of the JSON: a report made by ``replay`` keeps them in
memory (``context_at`` / ``raw_at``) as references to the immutable messages,
shared between requests, never as copies; a report read back from JSON has
rows and totals only.

``Report.df`` is a pandas view of the rows; pandas is imported only when it
is asked for, so the core of a replay never pays for it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..core.messages import Message, is_sent
from ..atomic import write_text_atomic
from ..errors import LabError
from .recorded import RecordedCompaction

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Row", "RetentionItem", "RetentionPart", "Retention", "Report", "REPORT_VERSION", "LostMention", "LOST_TO", "recorded_totals", "cost_check"]

REPORT_VERSION = 1


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetentionItem(_Data):
    """One thing that should survive compaction, and where it was found."""

    item: str
    # "tail" (verbatim in a kept message), "summary" (inside a pipeline-written message),
    # "spill" (recoverable from the spill store through a path the context names), or "nowhere".
    where: str
    # For an item that is nowhere: one of LOST_TO, what removed it (None in reports made before it existed).
    lost_to: str | None = None


# What removed a lost item: the original agent's own compaction recorded in the transcript, or the replayed config.
LOST_TO = ("recorded compaction", "this config")


class LostMention(_Data):
    """A mention the response at a request used that its context no longer holds (see ``recall.py``)."""

    mention: str
    kind: str
    lost_to: str


class RetentionPart(_Data):
    kept: int = 0
    total: int = 0
    items: list[RetentionItem] = Field(default_factory=list)
    # Sizes, for parts where an item's size matters (removed tool output).
    kept_chars: int | None = None
    total_chars: int | None = None

    @property
    def share(self) -> float | None:
        return self.kept / self.total if self.total else None


class Retention(_Data):
    """How much of what matters is still in a context; ``score`` is the weighted mean of the part shares."""

    parts: dict[str, RetentionPart] = Field(default_factory=dict)
    weights: dict[str, float] = Field(default_factory=dict)
    # None when no part had anything to keep.
    score: float | None = None

    def shares(self) -> dict[str, float | None]:
        return {name: part.share for name, part in self.parts.items()}


class Row(_Data):
    """One request of the replay: what was sent, what compaction did, what it cost."""

    index: int
    # Index in the transcript of the assistant message this request produced.
    message_index: int
    # Seconds since the epoch: a message timestamp or the simulated clock.
    time: float
    raw_tokens: int
    # Tokens of the raw history before this request's compaction ran (context so far + new messages).
    tokens_before: int
    sent_tokens: int
    sent_messages: int
    freed_by_stage: dict[str, int] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)
    boundary_placed: bool = False
    valid_anthropic: bool = True
    valid_openai: bool = True
    problems: list[str] = Field(default_factory=list)
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_tokens: int = 0
    cache_expired: bool = False
    output_tokens: int = 0
    cost: float = 0.0
    raw_cached_tokens: int = 0
    cost_uncompacted: float = 0.0
    # What the agent itself recorded this request cost (its response's ``Usage.cost_usd``); None when it recorded none.
    recorded_cost: float | None = None
    # These prices applied to the usage the agent recorded beside that cost: the price table's own check.
    recorded_usage_cost: float | None = None
    cache_hit_ratio: float = 0.0
    over_watermark: bool = False
    # The watermark wanted a summary but the circuit breaker was open (after repeated auto failures).
    breaker_open: bool = False
    overflowed: bool = False
    recovered: bool = False
    failed: bool = False
    recover_calls: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    summary_cost: float = 0.0
    composition: dict[str, int] = Field(default_factory=dict)
    # The user's first request is verbatim in the context (None before the user has spoken).
    first_request_kept: bool | None = None
    # Only when the replay ran with retention_each=True.
    retention: Retention | None = None
    # Needed-later recall (recall.py): mentions of this request's recorded response seen earlier in the raw history.
    needed_mentions: int = 0
    kept_mentions: int = 0
    recoverable_mentions: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    # kept / needed, and recoverable / needed; None when nothing was needed (or the replay ran with recall=False).
    needed_later_recall: float | None = None
    recoverable_share: float | None = None
    # The lost mentions themselves, at most recall.MAX_LOST of them.
    lost_mentions: list[LostMention] = Field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.valid_anthropic and self.valid_openai


# Row fields that are nested and stay out of the flat DataFrame view (their own columns are derived).
_NESTED = ("events", "freed_by_stage", "composition", "problems", "retention", "lost_mentions")


class Report(_Data):
    """Rows plus totals of one replay of one transcript under one config."""

    version: int = REPORT_VERSION
    label: str = "custom"
    window: int = 0
    counter: str = ""
    # "timestamps" or "simulated"
    clock: str = "simulated"
    rows: list[Row] = Field(default_factory=list)
    peak_sent: int = 0
    peak_raw: int = 0
    requests: int = 0
    requests_over_watermark: int = 0
    # Requests sent over the watermark because the breaker was open: failures, though nothing overflowed.
    breaker_open_over_watermark: int = 0
    watermark_tokens: int | None = None
    compactions_by_strategy: dict[str, int] = Field(default_factory=dict)
    summary_calls: int = 0
    summary_cost: float = 0.0
    invalid_requests: int = 0
    overflows: int = 0
    recoveries: int = 0
    failures: int = 0
    total_cost: float = 0.0
    total_cost_uncompacted: float = 0.0
    # The agent's own bill, where it records one, beside the lab's price for the same requests uncompacted:
    # how far the price table and cache model are from what the provider charged (``cost_check``).
    recorded_cost: float | None = None
    recorded_cost_requests: int = 0
    recorded_usage_cost: float | None = None
    recorded_cost_priced: float | None = None
    # The recorded usage against the counted context (``overhead.UsageFit``): what every request carried
    # beyond the file (system prompt, tool definitions) and the provider's tokens per counted token.
    usage_fit: dict[str, Any] | None = None
    # Tokens every request was taken to carry beyond the file (ReplaySettings.hidden_tokens or the fit).
    hidden_tokens: int = 0
    cache_hit_ratio: float = 0.0
    cache_hit_ratio_uncompacted: float = 0.0
    first_request_kept: bool | None = None
    retention: Retention = Field(default_factory=Retention)
    retention_score: float | None = None
    # Needed-later recall over every request: sums of the row counts, and sum kept / sum needed.
    needed_mentions: int = 0
    kept_mentions: int = 0
    recoverable_mentions: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    needed_later_recall: float | None = None
    recoverable_share: float | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    # The replay settings it was billed and timed with (ReplaySettings' dump); beside the agent config, not in it.
    settings: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # What the replay did with the compactions the original agent recorded ("undo" or "keep"), and each one found.
    recorded_compactions_mode: str = "undo"
    recorded_compactions: int = 0
    recorded: list[RecordedCompaction] = Field(default_factory=list)

    # Shared, immutable message objects: one tuple of references per request, never copies.
    _contexts: list[tuple[Message, ...]] | None = PrivateAttr(default=None)
    _raw: Sequence[Message] | None = PrivateAttr(default=None)
    _final: tuple[Message, ...] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # The in-memory contexts are a cache of the replay, not part of the report's value.
        return isinstance(other, Report) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    # -- contexts -------------------------------------------------------------

    def _attach(self, contexts: list[tuple[Message, ...]], raw: Sequence[Message], final: tuple[Message, ...]) -> None:
        self._contexts, self._raw, self._final = contexts, raw, final

    @property
    def has_contexts(self) -> bool:
        return self._contexts is not None

    def _row(self, k: int) -> int:
        if self._contexts is None:
            raise LabError("this report has no contexts (it was read from JSON); replay the transcript to get them")
        if not isinstance(k, int) or not -len(self.rows) <= k < len(self.rows):
            raise LabError(f"request {k!r} out of range: the replay has {len(self.rows)} request(s)")
        return k % len(self.rows)

    def context_at(self, k: int, *, include_boundaries: bool = False) -> list[Message]:
        """The context sent at request ``k`` (boundary markers, never sent, only on request)."""
        msgs = self._contexts[self._row(k)]  # type: ignore[index]
        if include_boundaries:
            return list(msgs)
        return [m for m in msgs if is_sent(m)]

    def input_at(self, k: int) -> list[Message]:
        """The context request ``k``'s pipeline started from (boundary markers included).

        The replay builds it this way: what was sent at ``k - 1``, then every raw
        message from ``k - 1``'s response up to request ``k``.
        """
        n = len(self.rows)
        if not isinstance(k, int) or not 0 <= k < n:
            raise LabError(f"request {k!r} out of range: the replay has {n} request(s)")
        raw = self.raw_at(k)
        if k == 0:
            return raw
        return self.context_at(k - 1, include_boundaries=True) + raw[self.rows[k - 1].message_index :]

    def raw_at(self, k: int) -> list[Message]:
        """The raw, uncompacted history at request ``k``: every transcript message before it."""
        row = self.rows[self._row(k)]
        return list(self._raw[: row.message_index])  # type: ignore[index]

    def final_context(self) -> list[Message]:
        """The context after the whole session: the last request's context plus everything after it."""
        if self._final is None:
            raise LabError("this report has no contexts (it was read from JSON); replay the transcript to get them")
        return [m for m in self._final if is_sent(m)]

    # -- views and I/O ---------------------------------------------------------

    def totals(self) -> dict[str, Any]:
        """Everything but the rows, config, settings and meta: the numbers a comparison table shows."""
        data = self.model_dump(mode="json", exclude={"rows", "config", "settings", "meta", "retention", "recorded"})
        data["retention"] = {name: part.share for name, part in self.retention.parts.items()}
        return data

    @property
    def df(self) -> pd.DataFrame:
        """The rows as a DataFrame: one line per request, nested fields flattened to columns."""
        import pandas as pd

        records = []
        for row in self.rows:
            rec = row.model_dump(exclude=set(_NESTED))
            rec["events"] = len(row.events)
            rec["problems"] = len(row.problems)
            for stage, n in row.freed_by_stage.items():
                rec[f"freed_{stage}"] = n
            for part, n in row.composition.items():
                rec[f"tokens_{part}"] = n
            if row.retention is not None:
                rec["retention_score"] = row.retention.score
            records.append(rec)
        frame = pd.DataFrame.from_records(records)
        freed = [c for c in frame.columns if str(c).startswith("freed_")]
        if freed:
            frame[freed] = frame[freed].fillna(0).astype("int64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        return {"lab_replay_report": self.version, **self.model_dump(mode="json")}

    def to_json(self, *, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Report:
        if not isinstance(data, dict):
            raise LabError(f"a replay report must be a JSON object, got {type(data).__name__}")
        body = {k: v for k, v in data.items() if k != "lab_replay_report"}
        config = body.get("config")
        if "settings" not in body and isinstance(config, dict) and isinstance(config.get("replay"), dict):
            # Reports written before the split kept the replay settings inside the config, as "replay".
            body["config"] = {k: v for k, v in config.items() if k != "replay"}
            body["settings"] = config["replay"]
        try:
            return cls.model_validate(body)
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise LabError(f"not a replay report: {loc}: {first['msg']}") from None

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Report:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise LabError(f"cannot read replay report {path}: {e}") from None
        return cls.from_dict(data)

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as JSON; the file appears complete or not at all."""
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            return write_text_atomic(target, self.to_json() + "\n")
        except OSError as e:
            raise LabError(f"cannot write {target}: {e.strerror or e}") from None


def recorded_totals(rows: Sequence[Row]) -> dict[str, Any]:
    """The report's recorded-bill fields over the requests whose response carries the agent's own cost: that
    cost summed, how many requests, these prices applied to the agent's recorded usage, and the lab's price
    for the same requests replayed uncompacted (what ``cost_check`` sets side by side)."""
    billed = [r for r in rows if r.recorded_cost is not None]
    if not billed:
        return {"recorded_cost": None, "recorded_cost_requests": 0, "recorded_usage_cost": None, "recorded_cost_priced": None}
    return {
        "recorded_cost": sum(r.recorded_cost or 0.0 for r in billed),
        "recorded_cost_requests": len(billed),
        "recorded_usage_cost": sum(r.recorded_usage_cost or 0.0 for r in billed),
        "recorded_cost_priced": sum(r.cost_uncompacted for r in billed),
    }


def _times(x: float, of: float) -> str:
    return f"x{x / of:.2f}" if of > 0 else "n/a"


def cost_check(report: Report) -> str | None:
    """One line setting the agent's recorded bill beside the lab's prices; None when the agent recorded no cost.

    Two comparisons: these prices applied to the tokens the agent recorded (does the price table match the
    provider's?), and the lab's own replay of the file uncompacted (does the file hold what the agent sent?
    a transcript without the system prompt or tool definitions prices far lower).
    """
    recorded, usage, priced = report.recorded_cost, report.recorded_usage_cost, report.recorded_cost_priced
    if recorded is None or priced is None:
        return None
    line = (f"the agent recorded a bill of ${recorded:.4f} for {report.recorded_cost_requests} of {report.requests} requests; "
            f"these prices give ${usage or 0.0:.4f} for the tokens it recorded ({_times(usage or 0.0, recorded)}) and "
            f"${priced:.4f} for this file's requests replayed uncompacted ({_times(priced, recorded)})")
    if report.recorded_compactions and report.recorded_compactions_mode == "undo":
        # Undone, the raw history is longer than what the agent sent after its own compactions.
        line += f"; the agent compacted {report.recorded_compactions} time(s) and this replay undid it, so the replay prices more than it sent"
    return line
