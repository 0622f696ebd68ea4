"""Exact o200k / cl100k counts: offline, verified against an independent tokenizer, cached."""

from __future__ import annotations

import gzip
import socket
from pathlib import Path
from typing import Any

import pytest

from lab.core.tokens import get_counter
from lab.core.tokens import tiktoken_counter as tc
from lab.core.tokens.base import MESSAGE_OVERHEAD
from lab.core.tokens.tiktoken_counter import Cl100kCounter, O200kCounter, TiktokenCounter
from lab.errors import ConfigError
from tests.builders import call_and_result, user
from tests.conftest import CORPUS_FILES

# Counts confirmed two ways: tiktoken over the shipped ranks, and bpe-openai's own Rust tokenizer
# (TestIndependentCheck re-derives them on every run).
KNOWN = [
    ("hello world", 2, 2),
    ("I'm here, aren't you?  \n\n  x", 9, 11),
    ("12345678 ", 4, 4),
    ("你好，世界", 3, 6),
    ("def f(x):\n    return x**2\n", 10, 10),
]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty tiktoken cache and no sockets: any download attempt fails loudly."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture
def fresh_build(monkeypatch: pytest.MonkeyPatch) -> None:
    # Forget encoders built by earlier tests so this one builds from the data files.
    monkeypatch.setattr(tc, "_BUILT", {})


class TestOffline:
    @pytest.mark.parametrize("name", ["o200k", "cl100k"])
    def test_builds_from_the_shipped_files_without_network(self, name: str, offline: None, fresh_build: None, tmp_path: Path) -> None:
        counter = get_counter(name)
        assert counter.count_text("hello world") == 2
        # Nothing was fetched into (or needed from) tiktoken's download cache.
        cache = tmp_path / "tiktoken-cache"
        assert not cache.exists() or not any(cache.iterdir())

    def test_encoder_is_built_once_per_process(self, fresh_build: None) -> None:
        a, b = O200kCounter(), O200kCounter()
        assert a.encoding is b.encoding
        assert tc.load_encoding("o200k_base") is a.encoding


class TestKnownCounts:
    @pytest.mark.parametrize(("text", "o200k", "cl100k"), KNOWN, ids=[repr(k[0])[:20] for k in KNOWN])
    def test_known_strings(self, text: str, o200k: int, cl100k: int) -> None:
        assert O200kCounter().count_text(text) == o200k
        assert Cl100kCounter().count_text(text) == cl100k

    def test_special_tokens_in_text_are_ordinary_text(self) -> None:
        c = O200kCounter()
        assert c.count_text("<|endoftext|>") > 1

    def test_lone_surrogates_do_not_crash(self) -> None:
        assert O200kCounter().count_text("bad \ud800 char") > 0

    def test_empty_text_is_zero(self) -> None:
        assert O200kCounter().count_text("") == 0

    def test_message_adds_overhead_to_block_counts(self) -> None:
        c = O200kCounter()
        assert c.count_message(user("hello world")) == 2 + MESSAGE_OVERHEAD


class TestIndependentCheck:
    """tiktoken over our offline ranks must agree with bpe-openai's separate Rust implementation."""

    @pytest.fixture(scope="class")
    def rust(self) -> Any:
        return pytest.importorskip("bpe_openai._bindings")

    @pytest.mark.parametrize(("name", "encoding"), [("o200k", "o200k_base"), ("cl100k", "cl100k_base")])
    def test_known_strings_agree(self, rust: Any, name: str, encoding: str) -> None:
        ref = rust.tokenizer_for_encoding(encoding)
        c = get_counter(name)
        for text, *_ in KNOWN:
            assert c.count_text(text) == ref.count(text), text

    @pytest.mark.corpus()
    def test_corpus_texts_agree(self, rust: Any) -> None:
        from lab.formats import load
        from lab.bench.tokens import transcript_texts

        ref = rust.tokenizer_for_encoding("o200k_base")
        c = O200kCounter()
        checked = 0
        for path in CORPUS_FILES:
            for text in transcript_texts(load(path))[:40]:
                assert c.count_text(text) == ref.count(text), (path.name, text[:80])
                checked += 1
        assert checked > 100


class TestMissingData:
    def test_package_not_installed(self, monkeypatch: pytest.MonkeyPatch, fresh_build: None) -> None:
        monkeypatch.setattr(tc.importlib.util, "find_spec", lambda name: None)
        with pytest.raises(ConfigError, match="bpe-openai"):
            O200kCounter().count_text("x")

    def test_rank_file_missing(self, monkeypatch: pytest.MonkeyPatch, fresh_build: None, tmp_path: Path) -> None:
        monkeypatch.setattr(tc, "data_dir", lambda: tmp_path)
        with pytest.raises(ConfigError, match="missing"):
            Cl100kCounter().count_text("x")

    def test_rank_file_not_the_official_one(self, monkeypatch: pytest.MonkeyPatch, fresh_build: None, tmp_path: Path) -> None:
        (tmp_path / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"YQ== 0\n"))
        monkeypatch.setattr(tc, "data_dir", lambda: tmp_path)
        with pytest.raises(ConfigError, match="sha256"):
            O200kCounter().count_text("x")

    def test_rank_file_corrupt(self, monkeypatch: pytest.MonkeyPatch, fresh_build: None, tmp_path: Path) -> None:
        (tmp_path / "o200k_base.tiktoken.gz").write_bytes(b"not gzip at all")
        monkeypatch.setattr(tc, "data_dir", lambda: tmp_path)
        with pytest.raises(ConfigError, match="cannot be read"):
            O200kCounter().count_text("x")

    def test_unknown_encoding(self) -> None:
        with pytest.raises(ConfigError, match="unknown encoding"):
            TiktokenCounter("p50k_base")

    def test_constructing_does_not_load_anything(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def boom(name: str) -> None:
            raise AssertionError("encoder loaded eagerly")

        monkeypatch.setattr(tc, "load_encoding", boom)
        O200kCounter()
        Cl100kCounter()


class _CountingEncoder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)


class TestCache:
    def test_recounting_an_unchanged_message_does_not_call_the_encoder(self) -> None:
        c = O200kCounter()
        spy = _CountingEncoder(c.encoding)
        c._encoder = spy
        call, result = call_and_result("Read", "print('hi')\n" * 50, file_path="/a.py")
        first = c.count_messages([call, result])
        calls = spy.calls
        assert calls == 2
        assert c.count_messages([call, result]) == first
        assert c.count_message(result.model_copy(update={"id": "copy"})) == c.count_message(result)
        assert spy.calls == calls

    def test_a_changed_block_is_counted_again(self) -> None:
        c = O200kCounter()
        spy = _CountingEncoder(c.encoding)
        c._encoder = spy
        c.count_text("one")
        c.count_text("two")
        c.count_text("one")
        assert spy.calls == 2
