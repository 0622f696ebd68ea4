"""lab.formats.detect.path_format: the folders and stores found by their path, in the order load and sessions try them."""

from __future__ import annotations

from pathlib import Path

from lab.formats.editors import cline
from lab.formats import load
from lab.formats.databases import opencode
from lab.formats.openhands import openhands_v1
from lab.formats.detect import path_format, read_by_path
from tests.formats import test_openhands_v1
from tests.formats.test_opencode_storage import SID, _storage

CLINE_TASK = Path(__file__).parent / "fixtures" / "cline" / "task"


def test_each_kind_is_found_and_read_as_load_reads_it(tmp_path: Path) -> None:
    conversation = test_openhands_v1.TestConversationFolder()._folder(tmp_path / "oh")
    storage = _storage(tmp_path / "data")
    for path, name in ((conversation, openhands_v1.NAME), (CLINE_TASK, cline.NAME), (storage / "message" / SID, opencode.NAME)):
        assert path_format(path) == name
        assert read_by_path(name, path).messages == load(path).messages


def test_a_forced_format_is_the_only_one_tried(tmp_path: Path) -> None:
    assert path_format(CLINE_TASK, cline.NAME) == cline.NAME
    assert path_format(CLINE_TASK, openhands_v1.NAME) is None
    assert path_format(CLINE_TASK, "claude_code") is None


def test_files_and_other_folders_are_not_found(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text("{}\n", encoding="utf-8")
    assert path_format(tmp_path / "x.jsonl") is None
    assert path_format(tmp_path) is None
