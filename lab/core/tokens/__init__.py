"""Token counters behind one interface; ``get_counter(name)`` builds one by name.

    minicode     MiniCode's estimate: CJK / 1.5 + other characters / 4
    chars/3.5    MewCode's estimate: ceil(characters / 3.5)
    o200k        exact, tiktoken o200k_base (GPT-4o family), offline
    cl100k       exact, tiktoken cl100k_base (GPT-4 family), offline
    calibrated   the lab's fast estimate, fitted against o200k
    anthropic    Anthropic's count_tokens endpoint (needs a key or base_url)

Importing this package loads no BPE data and touches no network: the factories
below import their modules on first use and the exact counters build their
encoder on their first count.
"""

from __future__ import annotations

from typing import Any

from .base import (
    BaseCounter,
    CharsPerTokenCounter,
    MiniCodeCounter,
    TokenCounter,
    counter_names,
    get_counter,
    register_counter,
)

__all__ = [
    "BaseCounter",
    "CharsPerTokenCounter",
    "MiniCodeCounter",
    "TokenCounter",
    "counter_names",
    "get_counter",
    "register_counter",
]


def _o200k(**kwargs: Any) -> TokenCounter:
    # Lazy: a counter's module (and its tokenizer) loads on first use of that counter.
    from .tiktoken_counter import O200kCounter

    return O200kCounter(**kwargs)


def _cl100k(**kwargs: Any) -> TokenCounter:
    # Lazy: a counter's module (and its tokenizer) loads on first use of that counter.
    from .tiktoken_counter import Cl100kCounter

    return Cl100kCounter(**kwargs)


def _calibrated(**kwargs: Any) -> TokenCounter:
    # Lazy: a counter's module (and its tokenizer) loads on first use of that counter.
    from .calibrated import CalibratedCounter

    return CalibratedCounter(**kwargs)


def _anthropic(**kwargs: Any) -> TokenCounter:
    # Lazy: a counter's module (and its tokenizer) loads on first use of that counter.
    from .anthropic_counter import AnthropicCounter

    return AnthropicCounter(**kwargs)


register_counter("o200k", _o200k)
register_counter("cl100k", _cl100k)
register_counter("calibrated", _calibrated)
register_counter("anthropic", _anthropic)
