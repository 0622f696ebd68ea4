"""Counter registry, the two heuristics of the reference designs, and the shared cache."""

from __future__ import annotations

import importlib
import math
import subprocess
import sys

import pytest

from lab.core.messages import ImageBlock, Message, TextBlock
from lab.core.tokens import BaseCounter, TokenCounter, counter_names, get_counter
from lab.core.tokens.base import IMAGE_TOKENS, MESSAGE_OVERHEAD, CharsPerTokenCounter, MiniCodeCounter
from lab.errors import ConfigError
from tests.builders import call_and_result, user
from tests.conftest import ROOT

LOCAL = ["minicode", "chars/3.5", "o200k", "cl100k", "calibrated"]


class TestRegistry:
    def test_all_counters_are_registered(self) -> None:
        assert set(LOCAL + ["anthropic"]) <= set(counter_names())

    @pytest.mark.parametrize("name", LOCAL)
    def test_each_local_counter_builds_and_counts(self, name: str) -> None:
        c = get_counter(name)
        assert isinstance(c, TokenCounter)
        assert c.name == name
        assert 0 < c.count_text("hello world, counting tokens") < 30

    def test_unknown_name_is_a_config_error_listing_the_choices(self) -> None:
        with pytest.raises(ConfigError, match="unknown token counter 'gpt2'.*o200k"):
            get_counter("gpt2")

    def test_unknown_keyword_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="minicode"):
            get_counter("minicode", window=3)

    def test_importing_the_package_loads_no_tokenizer_and_no_sdk(self) -> None:
        code = (
            "import sys, lab.core.tokens as t; t.get_counter('minicode');"
            "heavy = [m for m in ('tiktoken', 'anthropic', 'numpy', 'bpe_openai', 'lab.core.tokens.tiktoken_counter',"
            " 'lab.core.tokens.anthropic_counter') if m in sys.modules]; print(heavy)"
        )
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "[]"

    @pytest.mark.parametrize(
        "module",
        ["lab.core.tokens", "lab.core.tokens.tiktoken_counter", "lab.core.tokens.calibrated", "lab.core.tokens.anthropic_counter", "lab.bench.tokens"],
    )
    def test_dunder_all_is_complete_and_resolvable(self, module: str) -> None:
        mod = importlib.import_module(module)
        assert all(hasattr(mod, name) for name in mod.__all__)
        public = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == module}
        assert public <= set(mod.__all__)


class TestMiniCode:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("abcdefgh", 2),
            ("x" * 9, 3),  # ceil(9 / 4)
            ("你好世界", 3),  # ceil(4 / 1.5)
            ("abcd你好", 3),  # ceil(2 / 1.5 + 4 / 4)
            ("한국어", 1),  # hangul is outside U+4E00..U+9FFF: counted as other characters
            ("", 0),
        ],
        ids=["ascii", "ceil", "cjk", "mixed", "hangul", "empty"],
    )
    def test_cjk_over_1_5_plus_other_over_4(self, text: str, expected: int) -> None:
        assert MiniCodeCounter().count_text(text) == expected


class TestCharsPerToken:
    @pytest.mark.parametrize(("n", "expected"), [(7, 2), (8, 3), (1, 1)])
    def test_ceil_of_chars_over_3_5(self, n: int, expected: int) -> None:
        assert CharsPerTokenCounter().count_text("x" * n) == expected == math.ceil(n / 3.5)

    def test_custom_ratio(self) -> None:
        assert CharsPerTokenCounter(chars_per_token=2).count_text("x" * 10) == 5


class _Spy(BaseCounter):
    name = "spy"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _count(self, text: str) -> int:
        self.calls += 1
        return len(text)


class TestBaseCounter:
    def test_message_is_overhead_plus_blocks_plus_images(self) -> None:
        m = Message(role="user", id="m", content=(TextBlock(text="abc"), ImageBlock(), TextBlock(text="de")))
        assert _Spy().count_message(m) == MESSAGE_OVERHEAD + 3 + IMAGE_TOKENS + 2

    def test_recount_of_unchanged_messages_costs_nothing(self) -> None:
        spy = _Spy()
        msgs = [user("question"), *call_and_result("Read", "content " * 100, file_path="/x")]
        first = spy.count_messages(msgs)
        calls = spy.calls
        assert spy.count_messages(msgs) == first
        assert spy.calls == calls

    def test_cache_is_bounded(self) -> None:
        spy = _Spy()
        spy.max_cache = 3
        for i in range(10):
            spy.count_text(f"text {i}")
        assert len(spy._cache) <= 3
        assert spy.count_text("text 9") == 6
