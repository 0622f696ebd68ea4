"""Probes and their reference answers, from sessions whose answers are known."""

from __future__ import annotations

import pytest

from lab.core.messages import Message
from lab.errors import ConfigError
from lab.generator import generate
from lab.probe.build import PROBE_KINDS, QUESTIONS, artifact_probe, build_probes, continuation_probe, decision_probe, recall_probe
from lab.replayer import replay
from lab.probe.run import future_at, plan
from tests.builders import assistant, call_and_result, system, user
from tests.probe.sessions import ERROR_LINE, FIRST_REQUEST, LATEST, NEXT_TEXT, calc_session, calc_transcript

# calc_session's requests: 0-4 the fix of the failing test, 5 the first reply to LATEST, 6 its last.
K_NEXT = 5
K_LAST = 6


def _split(msgs: list[Message], k: int) -> tuple[list[Message], list[Message]]:
    report = replay(msgs, "lab")
    return report.raw_at(k), future_at(report, k)


class TestRecall:
    def test_first_error_its_fix_and_the_rerun_that_passed(self) -> None:
        raw, _ = _split(calc_session(), K_NEXT)
        p = recall_probe(raw, K_NEXT)
        assert p is not None and p.question == QUESTIONS["recall"]
        assert p.reference.splitlines() == [
            f"The first error: `pytest tests/test_calc.py` failed with: {ERROR_LINE}",
            'The fix: app/calc.py: replaced "-" with "+".',
            "Afterwards `pytest tests/test_calc.py` succeeded.",
        ]
        assert p.facts == (ERROR_LINE, "app/calc.py")

    def test_no_error_no_probe(self) -> None:
        msgs = [system(), user("read it")] + call_and_result("Read", "x = 1\n", file_path="a.py") + [assistant("done")]
        assert recall_probe(msgs, 1) is None

    def test_an_error_not_fixed_yet_says_so(self) -> None:
        msgs = [system(), user("run it")] + call_and_result("Bash", "Traceback (most recent call last):\n  File \"m.py\"\nKeyError: 'x'\n", command="python m.py", is_error=True)
        p = recall_probe(msgs, 1)
        assert p is not None
        assert p.reference.splitlines() == ["The first error: `python m.py` failed with: KeyError: 'x'", "No fix was made before this point."]

    def test_only_the_first_error_counts(self) -> None:
        msgs = [system(), user("go")]
        msgs += call_and_result("Bash", "error: first thing broke\n<returncode>2</returncode>", command="make a")
        msgs += call_and_result("Bash", "error: second thing broke\n<returncode>2</returncode>", command="make b")
        p = recall_probe(msgs, 2)
        assert p is not None and "make a" in p.reference and "first thing broke" in p.reference and "second" not in p.reference


class TestArtifact:
    def test_files_changed_with_how(self) -> None:
        raw, _ = _split(calc_session(), K_LAST)
        p = artifact_probe(raw, K_LAST)
        assert p is not None
        assert p.reference.splitlines() == [
            "Files changed so far:",
            '- app/calc.py: replaced "-" with "+"; inserted "def mul(a, b): return a * b" after "return a + b"',
        ]
        assert p.facts == ("app/calc.py",)

    def test_shell_writes_and_creations_count_failed_edits_do_not(self) -> None:
        msgs = [system(), user("go")]
        msgs += call_and_result("Write", "File created", file_path="src/new.py", file_text="a\nb\n")
        msgs += call_and_result("Edit", "old_string not found in src/x.py", file_path="src/x.py", old_string="nope", new_string="yes", is_error=True)
        msgs += call_and_result("Bash", "<returncode>0</returncode>", command="sed -i 's/foo/bar/' src/y.py")
        p = artifact_probe(msgs, 3)
        assert p is not None
        assert [line.split(":")[0] for line in p.reference.splitlines()[1:]] == ["- src/new.py", "- src/y.py"]
        assert "src/x.py" not in p.reference

    def test_nothing_changed_no_probe(self) -> None:
        msgs = [system(), user("look")] + call_and_result("Read", "x\n", file_path="a.py")
        assert artifact_probe(msgs, 1) is None


class TestContinuation:
    def test_the_recorded_response_is_the_reference(self) -> None:
        _, future = _split(calc_session(), K_NEXT)
        p = continuation_probe(future, K_NEXT)
        assert p is not None
        assert p.reference.splitlines() == [
            "What the agent actually did next:",
            f"- it said: {NEXT_TEXT}",
            '- Edit app/calc.py (inserted "def mul(a, b): return a * b" after "return a + b")',
        ]
        assert p.facts == ("Edit app/calc.py",)

    def test_last_request_reads_to_the_end_of_the_session(self) -> None:
        _, future = _split(calc_session(), K_LAST)
        p = continuation_probe(future, K_LAST)
        assert p is not None and p.reference.splitlines()[1:] == ["- it said: Added mul."]


class TestDecision:
    def test_latest_instruction_and_the_agents_decision(self) -> None:
        raw, _ = _split(calc_session(), K_LAST)
        p = decision_probe(raw, K_LAST)
        assert p is not None
        assert p.reference.splitlines() == [f"The user's latest instruction: {LATEST}", f"What the agent decided: {NEXT_TEXT}"]

    def test_not_answered_yet(self) -> None:
        raw, _ = _split(calc_session(), K_NEXT)
        p = decision_probe(raw, K_NEXT)
        assert p is not None and p.reference.endswith("The agent had not answered it yet.")

    def test_the_first_request_when_it_is_the_only_one(self) -> None:
        raw, _ = _split(calc_session(), 2)
        p = decision_probe(raw, 2)
        assert p is not None and p.reference.startswith(f"The user's latest instruction: {FIRST_REQUEST}")
        assert "first action was `pytest tests/test_calc.py`" in p.reference


class TestBuild:
    def test_all_four_in_a_fixed_order_with_fixed_questions(self) -> None:
        report = replay(calc_transcript(), "lab")
        probes = plan(report, [K_LAST])
        assert [p.kind for p in probes] == list(PROBE_KINDS)
        assert [p.question for p in probes] == [QUESTIONS[k] for k in PROBE_KINDS]
        assert [p.id for p in probes] == [f"{k}@{K_LAST}" for k in PROBE_KINDS]

    def test_kinds_filter_and_unknown_kind(self) -> None:
        raw, future = _split(calc_session(), K_LAST)
        assert [p.kind for p in build_probes(raw, future, K_LAST, ("artifact",))] == ["artifact"]
        with pytest.raises(ConfigError, match="unknown probe kind 'vibes'"):
            build_probes(raw, future, K_LAST, ("vibes",))  # type: ignore[arg-type]

    @pytest.mark.parametrize("seed", [1, 2], ids=lambda s: f"seed{s}")
    def test_generated_sessions_deterministic_and_never_raising(self, seed: int) -> None:
        t = generate(seed=seed, requests=30, typical_output_chars=300, error_rate=0.3)
        report = replay(t, "lab")
        points = list(range(len(report.rows)))
        first = plan(report, points)
        assert first == plan(replay(t, "lab"), points), "the same session gives the same probes"
        assert all(p.reference.strip() for p in first)
        assert {p.kind for p in first} == set(PROBE_KINDS), "a 30-request session with errors and edits has every kind"
