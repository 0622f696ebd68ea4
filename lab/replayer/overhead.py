"""What the provider counted that the file does not hold: a fit of the recorded usage against the counted context.

An agent sends more than its transcript keeps: Claude Code writes no system
prompt or tool definitions into its JSONL, and MCP servers add thousands of
tokens of tool schemas to every request. A replay counts only what the file
holds, so its token figures (peak sent, watermark crossings, cost) are that
much lower than what the provider saw. Where the transcript records the usage
of its requests, the two can be set side by side.

For every request whose response records usage, ``y`` is what the provider
counted as input (uncached + cache reads + cache writes) and ``x`` is this
counter's count of the context the file holds at that request (the messages
after the newest recorded compaction, as the agent sent them). A least-squares
line ``y = hidden + ratio * x`` then says:

    hidden_tokens  what every request carried beyond the file (system prompt,
                   tool definitions): the intercept
    ratio          how many tokens the provider counted per token this counter
                   counts (its tokenizer against the lab's)
    error          mean |residual| / y: how well one line explains the requests

The fit needs ``MIN_REQUESTS`` requests and a context that grows between them.
It reads the transcript only, never a config, so it is the same for every
replay of one file at one counter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from collections.abc import Sequence

from ..core.messages import Message, is_sent
from ..core.stages.active import is_boundary
from ..core.tokens.base import TokenCounter

__all__ = ["UsageFit", "fit_usage", "MIN_REQUESTS", "describe_fit"]

# Fewer requests than this say too little for a line.
MIN_REQUESTS = 5


@dataclass(frozen=True)
class UsageFit:
    requests: int
    hidden_tokens: int
    ratio: float
    error: float
    counter: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _points(messages: Sequence[Message], counter: TokenCounter) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    context = 0
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.usage is not None and (i == 0 or messages[i - 1].role != "assistant"):
            u = m.usage
            recorded = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
            if recorded > 0:
                xs.append(float(context))
                ys.append(float(recorded))
        if is_boundary(m):
            # The agent compacted here: what it sent next starts after the marker.
            context = 0
        elif is_sent(m):
            context += counter.count_message(m)
    return xs, ys


def fit_usage(messages: Sequence[Message], counter: TokenCounter) -> UsageFit | None:
    """The line through (counted context, recorded input) over the transcript's requests; None without enough of them."""
    xs, ys = _points(messages, counter)
    n = len(xs)
    if n < MIN_REQUESTS:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    if var <= 0:
        return None
    ratio = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    hidden = my - ratio * mx
    error = sum(abs(y - (hidden + ratio * x)) / y for x, y in zip(xs, ys, strict=True)) / n
    return UsageFit(requests=n, hidden_tokens=round(hidden), ratio=round(ratio, 3), error=round(error, 4), counter=counter.name)


def describe_fit(fit: UsageFit | dict[str, Any] | None, window: int | None = None, *, applied: int = 0) -> str | None:
    """One line for people: what the provider counted beyond this file, what that means at ``window``, and
    whether the replay counted it (``applied``: the hidden tokens it added to every request)."""
    if fit is None:
        return f"every request was taken to carry {applied:,} tokens beyond this file (replay settings: hidden_tokens)" if applied else None
    f = fit if isinstance(fit, UsageFit) else UsageFit(**fit)
    hidden = max(0, f.hidden_tokens)
    line = (f"the recorded usage of {f.requests} requests says the provider saw about {hidden:,} tokens per request that this file "
            f"does not hold (system prompt, tool definitions) and counted {f.ratio:.2f}x the {f.counter} counter's tokens for the rest "
            f"(the line misses by {f.error:.1%} on average); ")
    if applied:
        line += f"this replay counts {applied:,} hidden tokens on every request"
    else:
        line += "this replay's token figures leave both out (replay settings: hidden_from_usage counts them)"
    if window and hidden >= 0.1 * window:
        line += f"; at a {window:,}-token window the hidden part alone is {hidden / window:.0%} of it, so a real agent reaches the watermark sooner"
    return line
