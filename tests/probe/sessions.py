"""A handcrafted session whose probe answers are known (one failing test, its fix, a file changed, a new instruction),
and the fake provider's script of answers and grades for it."""

from __future__ import annotations

from typing import Any

from lab.core.messages import Message, TextBlock, ToolUseBlock, Transcript
from lab.probe import DIMENSIONS, PROBE_KINDS, QUESTIONS
from lab.probe.ask import PREAMBLE
from lab.probe.judge import RUBRIC_MARKER
from lab.testing.fake_provider import FakeProvider
from lab.testing.replies import Reply, grade_text
from tests.builders import assistant, call_and_result, system, tool_result, user

FIRST_REQUEST = "Fix the failing test in tests/test_calc.py"
LATEST = "Now add a multiply function to app/calc.py, with a test"
ERROR_LINE = "FAILED tests/test_calc.py::test_add - assert -1 == 3"
NEXT_TEXT = "I'll add multiply to app/calc.py first, then its test."


def calc_session() -> list[Message]:
    msgs = [system(), user(FIRST_REQUEST)]
    msgs += call_and_result("Bash", f"collected 1 item\n\nE   assert -1 == 3\n{ERROR_LINE}\n<returncode>1</returncode>", command="pytest tests/test_calc.py")
    msgs += call_and_result("Read", "def add(a, b):\n    return a - b\n", file_path="app/calc.py")
    msgs += call_and_result("Edit", "The file app/calc.py has been updated.", file_path="app/calc.py", old_string="return a - b", new_string="return a + b")
    msgs += call_and_result("Bash", "1 passed in 0.01s\n<returncode>0</returncode>", command="pytest tests/test_calc.py")
    msgs.append(assistant("The test passes now: add subtracted instead of adding, because of a typo."))
    msgs.append(user(LATEST))
    call = Message(role="assistant", id="a-next", content=(
        TextBlock(text=NEXT_TEXT),
        ToolUseBlock(id="toolu_next", name="Edit", input={"file_path": "app/calc.py", "old_string": "return a + b\n", "new_string": "return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}),
    ))
    msgs += [call, tool_result("toolu_next", "The file app/calc.py has been updated.")]
    msgs.append(assistant("Added mul."))
    return msgs


def calc_transcript() -> Transcript:
    return Transcript(messages=calc_session())


MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1-mini"}
# A different grade per kind and per dimension, so a mix-up of either shows.
GRADES: dict[str, dict[str, int]] = {
    kind: {d: (i + j) % 6 for j, d in enumerate(DIMENSIONS)} for i, kind in enumerate(PROBE_KINDS)
}


def answer(kind: str) -> str:
    return f"scripted answer to the {kind} probe"


def script(fake: FakeProvider, grades: dict[str, dict[str, int]] = GRADES) -> None:
    """Answers and grades by question: judge routes first (the judge's prompt holds the question too)."""
    routes: list[tuple[Any, str]] = [((RUBRIC_MARKER, QUESTIONS[k]), grade_text(g, f"graded {k}")) for k, g in grades.items()]
    routes += [((PREAMBLE, QUESTIONS[k]), answer(k)) for k in PROBE_KINDS]
    fake.default = Reply.routed(routes, text="unscripted")


__all__ = ["FIRST_REQUEST", "LATEST", "ERROR_LINE", "NEXT_TEXT", "MODELS", "GRADES", "calc_session", "calc_transcript", "answer", "script"]
