"""Shared fixtures: the real corpus, and user paths pointed at tmp dirs.

The corpus is whatever folder ``LAB_CORPUS`` names (nothing is assumed to sit
beside the checkout). Without one, every test that needs it is skipped with a
reason; with ``LAB_REQUIRE_CORPUS=1`` (set by ``.ci/run``) a missing corpus or
a missing corpus file is a failure instead, as a missing browser is with
``LAB_REQUIRE_BROWSER=1``.

Tests reach it three ways:
  - ``CORPUS_FILES`` to parametrize over every transcript (an empty list still
    gives one visible skip per test, with the reason below);
  - ``corpus_path("claude-code/x.jsonl")`` for a module-level constant, with
    ``@pytest.mark.corpus("claude-code/x.jsonl")`` on the tests that read it;
  - ``corpus_file("claude-code/x.jsonl")`` inside a test body.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lab.corpus import CORPUS_ENV, corpus_dir, corpus_files  # noqa: E402  (after the path fix above)

pytest_plugins = ["tests.fake_provider_fixture"]

REQUIRE_ENV = "LAB_REQUIRE_CORPUS"
CORPUS: Path | None = corpus_dir()
CORPUS_FILES: list[Path] = corpus_files(CORPUS) if CORPUS is not None else []
SAMPLES = ROOT / "sample_sessions"
# Where corpus paths point when there is no corpus: never created, so `.exists()` is False.
_NOWHERE = ROOT / f"{CORPUS_ENV}-is-not-set"
_EMPTY_SET = "got empty parameter set"


def corpus_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def corpus_path(relpath: str) -> Path:
    """Where ``relpath`` is in the corpus (a path that does not exist when there is no corpus)."""
    return (CORPUS or _NOWHERE) / relpath


def corpus_glob(pattern: str) -> list[Path]:
    """Corpus files matching ``pattern`` (e.g. ``"codex/*.jsonl"``), sorted; empty without a corpus."""
    return sorted(p for p in CORPUS.glob(pattern) if p in set(CORPUS_FILES)) if CORPUS is not None else []


def _missing(relpath: str | None = None) -> str | None:
    """Why the corpus (or ``relpath`` in it) cannot be read, or None when it can."""
    if CORPUS is None:
        return f"no corpus: set {CORPUS_ENV} to a folder of transcripts"
    if not CORPUS.is_dir():
        return f"{CORPUS_ENV}={CORPUS} is not a folder"
    if not CORPUS_FILES:
        return f"{CORPUS_ENV}={CORPUS} holds no transcripts"
    if relpath is not None and not (CORPUS / relpath).exists():
        return f"{relpath} is not in the corpus {CORPUS}"
    return None


def corpus_required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def _skip_or_fail(reason: str) -> None:
    if corpus_required():
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
    pytest.skip(reason)


def corpus_file(relpath: str) -> Path:
    """The corpus file ``relpath``; skips the test (fails under LAB_REQUIRE_CORPUS=1) when it is missing."""
    reason = _missing(relpath)
    if reason is not None:
        _skip_or_fail(reason)
    return CORPUS / relpath  # type: ignore[operator]  # _missing() is None only with a corpus


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corpus(*relpaths): needs the LAB_CORPUS folder (and these files in it)")


def _reads_corpus(module: object) -> bool:
    # Only modules that took the corpus from here; an empty parametrization elsewhere keeps pytest's skip.
    return any(getattr(module, name, None) is obj for name, obj in (("CORPUS_FILES", CORPUS_FILES), ("corpus_glob", corpus_glob)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A parametrization over corpus files is empty without a corpus; pytest would skip it as
    # "got empty parameter set". Say why instead, and let LAB_REQUIRE_CORPUS=1 turn it into a failure.
    for item in items:
        own = getattr(item, "own_markers", None)
        if own is None or not _reads_corpus(getattr(item, "module", None)):
            continue
        empty = [m for m in own if m.name == "skip" and str(m.kwargs.get("reason", "")).startswith(_EMPTY_SET)]
        if empty:
            item.own_markers = [m for m in own if not any(m is e for e in empty)]  # type: ignore[attr-defined]
            item.add_marker(pytest.mark.corpus(empty=True))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture: a class fixture reading a missing file would otherwise error first.
    # Under LAB_REQUIRE_CORPUS=1 pytest reports these as errors at setup, which fail the run.
    for mark in item.iter_markers(name="corpus"):
        reason = _missing()
        for relpath in mark.args:
            reason = reason or _missing(relpath)
        if reason is None and mark.kwargs.get("empty"):
            reason = f"none of the corpus files in {CORPUS} is of the kind this test reads"
        if reason is not None:
            _skip_or_fail(reason)


@pytest.fixture(scope="session")
def ray_runtime() -> Iterator[Any]:
    """One local Ray runtime for the whole run (2 CPUs, no dashboard): starting one takes seconds, so it is shared."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may write into the user's home or pick up real API keys.
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _main_module_restored() -> Iterator[None]:
    # AppTest runs a page as the __main__ module and can leave sys.modules["__main__"] pointing at its
    # temporary script; a worker process started later (spawn, Ray) re-imports __main__ and would run it.
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main
