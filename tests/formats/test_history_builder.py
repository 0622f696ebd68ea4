"""The value helpers every reader shares (lab.formats.history_builder)."""

from __future__ import annotations

import pytest

from lab.core.messages import Boundary, ImportNotes, TextBlock, ToolResultBlock, Transcript
from lab.formats.history_builder import HistoryBuilder, path_from_uri, positive_int, token_count
from lab.replayer.recorded import apply_recorded


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("file:///home/dev/calc", "/home/dev/calc"),
        ("file:///c%3A/Users/dev/app", "c:/Users/dev/app"),
        ("file:///srv/my%20app", "/srv/my app"),
        ("/plain/path", "/plain/path"),
        ("vscode-remote://ssh-remote+box/home/dev", None),
        ("", None),
        (None, None),
        (7, None),
    ],
)
def test_path_from_uri(value: object, path: str | None) -> None:
    assert path_from_uri(value) == path


def test_counts_take_only_positive_numbers() -> None:
    assert [positive_int(v) for v in (3, 0, -2, True, 2.0, "3", None)] == [3, 0, 0, 0, 0, 0, 0]
    # JavaScript writes every number as a float: whole ones below 2**53 count, the rest do not.
    assert [token_count(v) for v in (3, 3.0, 0, -1.0, False, 2**53, float("nan"), "3")] == [3, 3, 0, 0, 0, 0, 0, 0]


def test_a_recorded_compaction_is_a_marker_then_a_tagged_summary_that_undo_drops() -> None:
    b = HistoryBuilder(ImportNotes())
    b.add("user", [TextBlock(text="fix the bug")], key="u0")
    use = b.use("c1", "bash", {"command": "ls"}, key="a0")
    b.add("assistant", [use], key="a0")
    b.result("c1", "a.py", key="r0")
    removed = b.unmarked()
    marker = b.compaction(Boundary(trigger="import", strategy="test", messages_removed=removed), "[compacted]", "summary text", key="c")
    b.add("user", [TextBlock(text="go on")], key="u1")
    messages = b.finish()
    assert removed == 3
    assert [m.tag for m in messages[3:]] == ["boundary", "summary", None]
    assert marker is messages[3] and marker.id == "c.boundary" and marker.boundary is not None
    assert messages[3].content == (TextBlock(text="[compacted]"),)
    assert messages[4].id == "c.summary" and messages[4].role == "user"
    # Undone, the replay plays the raw history: marker and summary gone, everything else kept.
    undone, found, _ = apply_recorded(Transcript(messages=messages), "undo")
    assert [c.action for c in found] == ["undone"]
    assert [m.id for m in undone.messages] == [messages[i].id for i in (0, 1, 2, 5)]


def test_a_marker_without_text_holds_no_block_and_a_later_result_opens_a_new_turn() -> None:
    b = HistoryBuilder(ImportNotes())
    b.add("user", [TextBlock(text="task")], key="u0")
    use = b.use("c1", "bash", {"command": "ls"}, key="a0")
    b.add("assistant", [use], key="a0")
    b.boundary(Boundary(trigger="import", strategy="test"), None, key="k")
    b.result("c1", "late", key="r0")
    messages = b.finish()
    assert messages[2].content == () and messages[2].tag == "boundary" and messages[2].id == "k.boundary"
    assert messages[3].role == "user" and isinstance(messages[3].content[0], ToolResultBlock)
