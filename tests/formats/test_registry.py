"""The format registry's probe: what a format's ``sniff`` scores when the head was parsed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.formats.jsonio import make_probe
from lab.formats.registry import Probe


def _probe(records: list[Any] | None, document: Any) -> Probe:
    return Probe(path=Path("x.json"), head="", shape="json", records=records, document=document)


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
    assert make_probe(lines).first_value() == {"n": 1}
    assert make_probe(doc).first_value() == {"messages": []}
