"""The format registry: the file head formats sniff, plugins through the `lab.formats` entry points, and the specificity order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import Message, TextBlock, Transcript, TranscriptMeta
from lab.errors import LabWarning, TranscriptError
from lab.formats import FORMATS, detect, load
from lab.formats.detect import candidates
from lab.formats.jsonio import read_file_head
from lab.formats.registry import ENTRY_POINT_GROUP, REQUEST_BODIES, FileHead, Format, SpecificityError, load_plugins, specificity
from tests.conftest import CORPUS, ROOT, SAMPLES


def _probe(records: list[Any] | None, document: Any) -> FileHead:
    return FileHead(path=Path("x.json"), head="", shape="json", records=records, document=document)


@pytest.mark.parametrize(
    ("records", "document", "expected"),
    [
        pytest.param([{"a": 1}, {"b": 2}], None, {"a": 1}, id="first-jsonl-record"),
        pytest.param(None, {"doc": True}, {"doc": True}, id="document"),
        pytest.param([], {"doc": True}, {"doc": True}, id="no-records-falls-to-document"),
        pytest.param(None, None, None, id="head-only"),
    ],
)
def test_first_value(records: list[Any] | None, document: Any, expected: Any) -> None:
    assert _probe(records, document).first_value() == expected


def test_first_value_of_real_probes(tmp_path: Path) -> None:
    lines = tmp_path / "a.jsonl"
    lines.write_text('{"n": 1}\n{"n": 2}\n', encoding="utf-8")
    doc = tmp_path / "b.json"
    doc.write_text('{"messages": []}', encoding="utf-8")
    assert read_file_head(lines).first_value() == {"n": 1}
    assert read_file_head(doc).first_value() == {"messages": []}


# --- plugins: the `lab.formats` entry-point group ------------------------------------------------------------


class _EntryPoint:
    """What ``importlib.metadata.entry_points(group=...)`` yields: a name, its ``module:attr`` and ``load``."""

    def __init__(self, name: str, value: object) -> None:
        self.name = name
        self.value = f"toy_plugin:{name}"
        self._value = value

    def load(self) -> object:
        if isinstance(self._value, Exception):
            raise self._value
        return self._value


def _toy(name: str, *, above: tuple[str, ...]) -> Format:
    """A format that claims any JSON object with a ``toy`` key, as strongly as the request bodies claim theirs."""

    def sniff(head: FileHead) -> int:
        doc = head.first_value()
        return 100 if isinstance(doc, dict) and "toy" in doc else 0

    def read(path: Path) -> Transcript:
        msgs = [Message(role="user", content=(TextBlock(text="hi"),), id="u"), Message(role="assistant", content=(TextBlock(text="ok"),), id="a")]
        return Transcript(meta=TranscriptMeta(source_format=name), messages=msgs)

    return Format(name=name, description="a toy plugin format", sniff=sniff, read=read, more_specific_than=above)


@pytest.fixture
def toy_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[_EntryPoint]], list[str]]]:
    """Loads the given entry points as the installed plugins would be, the registry restored afterwards."""
    saved = dict(FORMATS)

    def load(eps: list[_EntryPoint]) -> list[str]:
        def entry_points(group: str) -> list[_EntryPoint]:
            assert group == ENTRY_POINT_GROUP
            return eps

        monkeypatch.setattr(metadata, "entry_points", entry_points)
        return load_plugins()

    yield load
    FORMATS.clear()
    FORMATS.update(saved)


def test_a_plugin_more_specific_than_anthropic_is_picked_by_detection(tmp_path: Path, toy_plugins: Callable[..., list[str]]) -> None:
    path = tmp_path / "req.json"
    # An Anthropic request body that also carries the toy's key: both claim it.
    path.write_text(json.dumps({"toy": 1, "model": "claude", "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    assert detect(path) == "anthropic"
    assert toy_plugins([_EntryPoint("toy", _toy("toy", above=REQUEST_BODIES))]) == ["toy"]
    assert [n for n, _ in candidates(read_file_head(path))][:2] == ["toy", "anthropic"]
    assert detect(path) == "toy" and load(path).meta.source_format == "toy"


def test_a_plugin_the_builtins_are_more_specific_than_yields_to_them(tmp_path: Path, toy_plugins: Callable[..., list[str]]) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"toy": 1, "model": "claude", "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    toy_plugins([_EntryPoint("toy", _toy("toy", above=()))])
    # Declared nowhere: after every format it is unordered with (registration order), so the request body wins.
    assert detect(path) == "anthropic"


def test_a_broken_plugin_is_a_warning_not_a_crash(toy_plugins: Callable[..., list[str]]) -> None:
    eps = [
        _EntryPoint("crashes", ImportError("no module named toy_dep")),
        _EntryPoint("not_a_format", object()),
        _EntryPoint("lab", _toy("lab", above=())),  # a name the lab has
        _EntryPoint("fine", _toy("fine", above=())),
    ]
    with pytest.warns(LabWarning) as caught:
        added = toy_plugins(eps)
    assert added == ["fine"] and "fine" in FORMATS and FORMATS["lab"].description != "a toy plugin format"
    said = " ".join(str(w.message) for w in caught)
    assert "'crashes'" in said and "ImportError" in said and "'not_a_format'" in said and "reuses the format name 'lab'" in said


def test_the_package_reads_the_entry_point_group() -> None:
    # The installed lab declares no plugin of its own; whatever is installed loads without error.
    assert isinstance(load_plugins(lambda group: []), list)


# --- the specificity order --------------------------------------------------------------------------------------


def test_the_specificity_relation_has_no_circle_and_names_only_known_formats() -> None:
    order_ = specificity()
    assert sorted(order_) == sorted(FORMATS)
    for name, fmt in FORMATS.items():
        for weaker in fmt.more_specific_than:
            assert weaker in FORMATS, f"{name} is declared more specific than an unknown format {weaker!r}"
            if fmt.rivals is None or fmt.rivals != FORMATS[weaker].rivals:
                assert order_.index(name) < order_.index(weaker), (name, weaker)


def test_a_circle_in_the_relation_is_refused() -> None:
    fmts = {n: _toy(n, above=(other,)) for n, other in (("a", "b"), ("b", "c"), ("c", "a"))}
    with pytest.raises(SpecificityError, match="circle"):
        specificity(fmts)


def _precedes(a: str, b: str) -> bool:
    """Whether ``a`` is declared (transitively) more specific than ``b``, or they are rivals."""
    if FORMATS[a].rivals is not None and FORMATS[a].rivals == FORMATS[b].rivals:
        return True
    group = {n for n, f in FORMATS.items() if f.rivals is not None and f.rivals == FORMATS[b].rivals} or {b}
    seen, stack = set(), [a]
    while stack:
        n = stack.pop()
        for weaker in FORMATS[n].more_specific_than:
            if weaker in group:
                return True
            if weaker not in seen:
                seen.add(weaker)
                stack.append(weaker)
    return False


def _lab_files() -> list[Path]:
    roots = [ROOT / "tests" / "formats" / "fixtures", SAMPLES, *([CORPUS] if CORPUS is not None else [])]
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*") if p.is_file())


def test_every_two_formats_that_claim_one_file_have_a_declared_order() -> None:
    # Over every fixture, sample session and corpus file: no pair of claims is left to registration order.
    pairs: set[tuple[str, str]] = set()
    for path in _lab_files():
        try:
            ranked = [n for n, _ in candidates(read_file_head(path))]
        except TranscriptError:
            continue
        pairs |= {(a, b) for i, a in enumerate(ranked) for b in ranked[i + 1 :]}
    assert pairs, "no file is claimed by two formats: the test would prove nothing"
    undeclared = sorted((a, b) for a, b in pairs if not _precedes(a, b))
    assert not undeclared, f"claimed together, ordered only by registration: {undeclared}"
