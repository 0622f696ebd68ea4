"""Token counters behind one interface; ``get_counter(name)`` builds one by name."""

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
