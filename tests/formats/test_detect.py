"""Format detection, ``load`` at the package edge, and the package's public API."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import json
import re
from pathlib import Path

import pytest

import lab.formats as formats
from lab.core.messages import Transcript
from lab.errors import ConfigError, TranscriptError
from lab.formats import FORMATS, detect, dump, load
from lab.formats.detect import scores
from lab.formats.registry import Format
from tests.conftest import CORPUS_FILES, corpus_id

# Which module owns the files of each corpus folder; names are read from the modules.
_OWNER = {
    "claude-code": "claude.claude_code",
    "openai-chat": "openai.openai_chat",
    "openhands": "openhands.openhands",
    "codex": "openai.openai_responses",
}


def _expected(path: Path) -> str:
    module = importlib.import_module(f"lab.formats.{_OWNER[path.parent.name]}")
    return module.FORMAT.name


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_detected(path: Path) -> None:
    assert detect(path) == _expected(path)


def _write(tmp_path: Path, name: str, data: object) -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def test_detects_the_lab_claude_code_and_anthropic_shapes(tmp_path: Path) -> None:
    entry = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    assert detect(_write(tmp_path, "one.jsonl", json.dumps(entry) + "\n")) == "claude_code"
    assert detect(_write(tmp_path, "arr.json", [entry, entry])) == "claude_code"
    request = {"model": "claude", "system": "s", "messages": [{"role": "user", "content": "hi"}]}
    assert detect(_write(tmp_path, "req.json", request)) == "anthropic"
    assert detect(_write(tmp_path, "log.jsonl", json.dumps(request) + "\n" + json.dumps(request) + "\n")) == "anthropic"
    assert detect(_write(tmp_path, "t.json", dump(Transcript()))) == "lab"


@pytest.mark.parametrize(
    "content",
    ['{"hello": "world"}', "just some text\n", "[1, 2, 3]", '{"a": 1}\n{"b": 2}\n'],
    ids=["object", "text", "array", "jsonl"],
)
def test_unknown_format_names_the_nearest_few(tmp_path: Path, content: str) -> None:
    # One short line: two or three formats near what the file looks like, and where the rest are.
    p = _write(tmp_path, "x.json", content)
    with pytest.raises(TranscriptError, match="unknown transcript format") as err:
        detect(p)
    expected = err.value.expected or ""
    named = [name for name in FORMATS if re.search(rf"\b{name}\b", expected.split(";")[0])]
    assert 2 <= len(named) <= 3
    assert "python -m lab import --help" in expected
    assert "\n" not in str(err.value)
    assert len(str(err.value)) - len(str(p)) < 200


def test_unknown_format_leans_on_the_keys_it_sees(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.jsonl", '{"parentUuid": 1, "x": 2}\n{"parentUuid": 3}\n')
    with pytest.raises(TranscriptError) as err:
        detect(p)
    assert (err.value.expected or "").startswith("a known format such as claude_code")


def test_an_unknown_format_name_gets_the_closest_names(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.json", dump(Transcript()))
    with pytest.raises(TranscriptError, match="unknown format 'claude_cod'") as err:
        load(p, format="claude_cod")
    expected = err.value.expected or ""
    assert expected.startswith("a format such as claude_code")
    assert "python -m lab import --help" in expected
    assert "agents_sdk_db" not in expected


def test_a_failing_sniffer_counts_as_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(probe: object) -> int:
        raise KeyError("bug")

    monkeypatch.setitem(FORMATS, "broken", Format(name="broken", description="", sniff=broken, read=lambda p: Transcript()))
    p = _write(tmp_path, "t.json", dump(Transcript()))
    from lab.formats.jsonio import read_file_head

    assert scores(read_file_head(p))["broken"] == 0
    assert detect(p) == "lab"


# --- load at the edge --------------------------------------------------------------------------


def test_load_missing_path_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="no such file"):
        load(tmp_path / "missing.jsonl")
    with pytest.raises(TranscriptError, match="directory"):
        load(tmp_path)


def test_load_with_an_unknown_format_name(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.json", dump(Transcript()))
    with pytest.raises(TranscriptError, match="unknown format 'nope'") as err:
        load(p, format="nope")
    assert "python -m lab import --help" in (err.value.expected or "")


def test_load_turns_an_importer_crash_into_a_transcript_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(path: Path) -> Transcript:
        raise ValueError("importer bug")

    monkeypatch.setitem(FORMATS, "crashy", Format(name="crashy", description="", sniff=lambda p: 0, read=crash))
    with pytest.raises(TranscriptError, match="could not import as crashy") as err:
        load(_write(tmp_path, "t.json", "{}"), format="crashy")
    assert isinstance(err.value.__cause__, ValueError)


def test_dump_to_an_unknown_target() -> None:
    with pytest.raises(ConfigError):
        dump(Transcript(), to="yaml")  # type: ignore[arg-type]


# --- public API -------------------------------------------------------------------------------------

# Every module of the formats package (new importers included), and the validator they feed.
_MODULES = ["lab.formats", "lab.core.validate"] + sorted(
    f"lab.formats.{m.name}" for m in pkgutil.iter_modules(importlib.import_module("lab.formats").__path__)
)


@pytest.mark.parametrize("name", _MODULES)
def test_all_lists_every_public_definition(name: str) -> None:
    module = importlib.import_module(name)
    public = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) == name
    }
    assert public <= set(module.__all__)
    assert all(hasattr(module, n) for n in module.__all__)


def test_package_registers_every_builtin_format_in_its_declared_order() -> None:
    from lab.formats.registry import BUILTIN

    declared = [importlib.import_module(spec.split(":")[0]).FORMAT.name for spec in BUILTIN]
    assert [n for n in FORMATS if n in declared] == declared
    assert {"lab", "claude_code", "anthropic"} <= set(formats.FORMATS)


def test_formats_the_order_leaves_unordered_keep_registration_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.formats.detect import candidates
    from lab.formats.jsonio import read_file_head

    for name in ("tie_b", "tie_a"):
        monkeypatch.setitem(FORMATS, name, Format(name=name, description="", sniff=lambda p: 100, read=lambda p: Transcript()))
    ranked = candidates(read_file_head(_write(tmp_path, "x.json", '{"x": 1}')))
    assert [n for n, _ in ranked] == ["tie_b", "tie_a"]
