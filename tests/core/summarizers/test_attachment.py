"""The recovery attachment: recent files without line numbers, limits, tools, the lossy notice."""

from __future__ import annotations

import copy

import pytest

from lab.core.messages import Message, ToolSpec
from lab.core.summarizers.attachment import LOSSY_NOTICE, build_attachment, recent_reads, strip_line_numbers
from lab.core.tokens.base import MiniCodeCounter
from tests.builders import call_and_result, user

COUNTER = MiniCodeCounter()
CODE = ["import os", "", "def main():", "    return os.getcwd()"]


class TestStripLineNumbers:
    @pytest.mark.parametrize(
        "numbered",
        [
            "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(CODE)),
            "\n".join(f"{i + 1:>6}→{line}" for i, line in enumerate(CODE)),
            "\n".join(f"{i + 12:>4}|{line}" for i, line in enumerate(CODE)),
            "Here's the result of running `cat -n` on /repo/x.py:\n" + "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(CODE)),
        ],
        ids=["cat-n-tab", "arrow", "pipe", "editor-header"],
    )
    def test_prefixes_removed(self, numbered: str) -> None:
        assert strip_line_numbers(numbered) == "\n".join(CODE)

    def test_plain_text_untouched(self) -> None:
        text = "1. first item\n2\tsecond\nnot numbered\nalso not"
        assert strip_line_numbers(text) == text

    def test_system_reminder_dropped(self) -> None:
        text = "     1\tx = 1\n\n<system-reminder>\nWhatever the harness adds.\n</system-reminder>\n"
        assert strip_line_numbers(text) == "x = 1"


def reads() -> list[Message]:
    msgs = [user("go")]
    for i in range(7):
        body = "\n".join(f"{n + 1:>6}\tline {n} of file {i}" for n in range(50))
        msgs += call_and_result("Read", body, file_path=f"src/f{i}.py")
    return msgs


class TestRecentReads:
    def test_newest_first_up_to_max(self) -> None:
        assert [f.path for f in recent_reads(reads(), 5)] == [f"src/f{i}.py" for i in (6, 5, 4, 3, 2)]

    def test_latest_successful_uncompacted_read_wins(self) -> None:
        msgs = [user("go")]
        msgs += call_and_result("Read", "     1\told", file_path="a.py")
        msgs += call_and_result("Read", "     1\tnew", file_path="a.py")
        msgs += call_and_result("Read", "permission denied", file_path="a.py", is_error=True)
        spilled = call_and_result("Read", "[content offloaded] ...", file_path="a.py")
        result = spilled[1]
        block = result.content[0].model_copy(update={"compacted": "spill"})
        msgs += [spilled[0], result.model_copy(update={"content": (block,)})]
        (only,) = recent_reads(msgs, 5)
        assert only.content == "new"

    def test_editor_view_and_cat_count_as_reads(self) -> None:
        msgs = [user("go")]
        msgs += call_and_result("str_replace_editor", "     1\tA", command="view", path="/r/a.py")
        msgs += call_and_result("str_replace_editor", "edited", command="str_replace", path="/r/a.py")
        msgs += call_and_result("Bash", "B", command="cat /r/b.txt")
        msgs += call_and_result("Bash", "x", command="ls -la")
        found = recent_reads(msgs, 5)
        assert [(f.path, f.content, f.edited_after) for f in found] == [("/r/b.txt", "B", False), ("/r/a.py", "A", True)]


class TestBuildAttachment:
    def test_limits_and_order(self) -> None:
        text = build_attachment(reads(), [], COUNTER, max_files=3, file_tokens=5000)
        heads = [line for line in text.splitlines() if line.startswith("#### ")]
        assert heads == ["#### src/f6.py", "#### src/f5.py", "#### src/f4.py"]
        assert "line 49 of file 6" in text
        assert "     1\t" not in text

    def test_each_file_cut_to_file_tokens(self) -> None:
        big = "\n".join(f"{n + 1:>6}\t" + "y" * 60 for n in range(2000))
        msgs = [user("go"), *call_and_result("Read", big, file_path="big.py")]
        text = build_attachment(msgs, [], COUNTER, max_files=5, file_tokens=200)
        block = text.split("#### big.py\n", 1)[1].split("### Tools available")[0]
        assert "cut to 200 tokens" in block
        content = block.split("```\n", 1)[1].rsplit("\n```", 1)[0]
        assert COUNTER.count_text(content) <= 200
        assert content.startswith("y" * 60)

    def test_tools_with_descriptions_and_schemas(self) -> None:
        tools = [ToolSpec(name="Read", description="Read a file.", input_schema={"type": "object", "properties": {"file_path": {"type": "string"}}})]
        text = build_attachment(reads(), tools, COUNTER)
        assert "- Read: Read a file." in text
        assert '"file_path": {"type": "string"}' in text

    def test_tools_seen_when_no_specs(self) -> None:
        text = build_attachment(reads(), [], COUNTER)
        assert "tools seen in use" in text and "- Read" in text

    def test_notice_and_empty(self) -> None:
        text = build_attachment([user("hi")], [], COUNTER)
        assert LOSSY_NOTICE in text
        assert "(no file reads to restore)" in text

    def test_zero_files(self) -> None:
        assert "#### " not in build_attachment(reads(), [], COUNTER, max_files=0)

    def test_content_with_fences_stays_fenced(self) -> None:
        msgs = [user("go"), *call_and_result("Read", "```python\nx = 1\n```", file_path="README.md")]
        text = build_attachment(msgs, [], COUNTER)
        assert "````\n```python\nx = 1\n```\n````" in text

    def test_deterministic_and_pure(self) -> None:
        msgs = reads()
        before = copy.deepcopy(msgs)
        assert build_attachment(msgs, [], COUNTER) == build_attachment(msgs, [], COUNTER)
        assert msgs == before
