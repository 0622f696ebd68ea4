"""What a probe run costs: an estimate before it starts, and a meter that stops it at a limit.

The estimate counts the input tokens of every request the run will send
(each question's exact body; each judge request with an answer as long as the
answer budget) with the lab's ``calibrated`` counter, offline, and bills the
full output budget of each: an upper bound on output, an estimate on input.
Prices are the price table's row for the model's name
(``lab.replayer.prices.match_model``); a model with no row (a local server) has
token counts but no dollar figure, and a cost limit cannot be enforced for it.

The meter bills each call from the usage the provider reported, and before a
call refuses it (``CostLimitReached``) when what was spent plus that call's
estimate would pass the limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Usage
from ..core.tokens import get_counter
from ..errors import LabError
from ..replayer.prices import PriceRow, match_model

__all__ = ["COUNTER", "CostLimitReached", "RequestEstimate", "price_of", "body_tokens", "request_estimate", "usage_cost", "Meter", "describe_estimate"]

COUNTER = "calibrated"


class CostLimitReached(LabError):
    """The next call would take the run past its cost limit."""


def price_of(model: str) -> PriceRow | None:
    return match_model(model)


def body_tokens(body: dict[str, Any]) -> int:
    """Input tokens of a request body: its text, tool calls and tool specs as sent (JSON syntax left out)."""
    counter = get_counter(COUNTER)
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                if k == "input" and isinstance(v, dict):
                    parts.append(json.dumps(v, ensure_ascii=False))
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk({k: v for k, v in body.items() if k != "tool_choice"})
    return sum(counter.count_text(p) for p in parts)


@dataclass(frozen=True)
class RequestEstimate:
    model: str
    role: str  # "ask" or "judge"
    input_tokens: int
    output_tokens: int

    @property
    def cost(self) -> float | None:
        row = price_of(self.model)
        if row is None:
            return None
        return (self.input_tokens * row.input + self.output_tokens * row.output) / 1e6


def request_estimate(model: str, role: str, body: dict[str, Any], max_output: int, extra_input: int = 0) -> RequestEstimate:
    return RequestEstimate(model, role, body_tokens(body) + extra_input, max_output)


def usage_cost(model: str, usage: Usage) -> float | None:
    """What one call cost by the provider's own usage, or None when the model has no price row."""
    row = price_of(model)
    if row is None:
        return None
    return (usage.input_tokens * row.input + usage.output_tokens * row.output
            + usage.cache_read_tokens * row.cache_read + usage.cache_write_tokens * row.cache_write_5m) / 1e6


@dataclass
class Meter:
    """Money spent so far, by reported usage, against an optional limit in dollars."""

    limit: float | None = None
    spent: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    stopped: str | None = field(default=None)

    def before(self, estimate: RequestEstimate) -> None:
        """Refuse the call when it could take the run past the limit."""
        if self.limit is None:
            return
        next_cost = estimate.cost or 0.0
        if self.spent + next_cost > self.limit:
            self.stopped = (f"stopped at the cost limit of ${self.limit:g}: ${self.spent:.4f} spent, "
                            f"the next {estimate.role} call could cost ${next_cost:.4f}")
            raise CostLimitReached(self.stopped)

    def add(self, model: str, usage: Usage) -> None:
        self.calls += 1
        self.input_tokens += usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self.output_tokens += usage.output_tokens
        cost = usage_cost(model, usage)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.spent += cost


def describe_estimate(estimates: list[RequestEstimate]) -> list[str]:
    """The lines a run prints before it starts: requests, tokens and dollars, per model."""
    lines: list[str] = []
    models = list(dict.fromkeys(e.model for e in estimates))
    total: float | None = 0.0
    for model in models:
        mine = [e for e in estimates if e.model == model]
        roles = ", ".join(f"{sum(1 for e in mine if e.role == r)} {r}" for r in ("ask", "judge") if any(e.role == r for e in mine))
        tin, tout = sum(e.input_tokens for e in mine), sum(e.output_tokens for e in mine)
        row = price_of(model)
        if row is None:
            price = f"no price known for {model!r}"
            total = None
        else:
            cost = sum(e.cost or 0.0 for e in mine)
            price = f"<= ${cost:.4f} at {row.name} prices (taken {row.taken})"
            total = None if total is None else total + cost
        lines.append(f"estimate: {model}: {len(mine)} requests ({roles}), ~{tin:,} input tokens, <= {tout:,} output tokens, {price}")
    if total is not None:
        lines.append(f"estimate: total <= ${total:.4f} for {len(estimates)} requests (judge retries not counted)")
    else:
        lines.append(f"estimate: total unknown for {len(estimates)} requests: a model has no row in the price table")
    return lines
