"""lab.ui.session_view's texts and rows, built without drawing: the window line, the usage fit, recorded compactions, import notes."""

from __future__ import annotations

import pytest

from lab.core.messages import ImportNotes
from lab.replayer.overhead import UsageFit
from lab.replayer.recorded import RecordedCompaction
from lab.replayer.window import WindowProposal
from lab.ui.session_view import fit_notice, note_rows, recorded_line, window_line


def _fit(hidden: int) -> UsageFit:
    return UsageFit(requests=12, hidden_tokens=hidden, ratio=1.05, error=0.02, counter="minicode")


def _recorded(index: int, agent: str = "Claude Code") -> RecordedCompaction:
    return RecordedCompaction(index=index, agent=agent, strategy="summary", written=1, raw_before=True, action="undone")


class TestWindowLine:
    def test_an_applied_proposal_is_its_reason(self) -> None:
        assert window_line(WindowProposal(window=32_000, peak=84_000, reason="proposed 32k"), 32_000) == "Window: proposed 32k."

    def test_no_proposal_is_its_reason(self) -> None:
        assert window_line(WindowProposal(window=None, peak=9_000, reason="no window proposed"), 200_000) == "Window: no window proposed."

    def test_a_window_picked_since_is_named(self) -> None:
        line = window_line(WindowProposal(window=32_000, peak=84_000, reason="proposed 32k"), 100_000)
        assert line == "Window: proposed 32k. The window is now 100,000; pick any on the Pipeline page."


class TestFitNotice:
    def test_no_fit_says_nothing(self) -> None:
        assert fit_notice(None, 200_000) is None

    @pytest.mark.parametrize(("hidden", "loud"), [(19_999, False), (20_000, True), (-5, False)], ids=["under-10%", "at-10%", "negative"])
    def test_loud_from_a_tenth_of_the_window(self, hidden: int, loud: bool) -> None:
        notice = fit_notice(_fit(hidden), 200_000)
        assert notice is not None
        text, is_loud = notice
        assert is_loud is loud
        assert text.startswith("The recorded usage of 12 requests says") and text.endswith(".")

    def test_a_report_s_fit_and_counted_hidden_tokens(self) -> None:
        # The Timeline passes the report's dict and the hidden tokens the replay counted: counted, it is quiet.
        as_dict = _fit(50_000).to_dict()
        assert fit_notice(as_dict, 200_000) == fit_notice(_fit(50_000), 200_000)
        said, loud = fit_notice(as_dict, 200_000, applied=50_000) or ("", True)
        assert not loud and "this replay counts 50,000 hidden tokens" in said
        # Hidden tokens given by hand, with no fit, are still said.
        assert fit_notice(None, 200_000, applied=7_000) == ("Every request was taken to carry 7,000 tokens beyond this file (replay settings: hidden_tokens).", False)


class TestRecordedLine:
    def test_undone_names_agents_and_places(self) -> None:
        line = recorded_line([_recorded(4), _recorded(9, "Codex CLI")], undo=True)
        assert line == ("This session contains 2 recorded compaction(s) by Claude Code, Codex CLI (at message 4, message 9); "
                        "replayed from the raw history.")

    def test_kept_and_more_than_eight_are_cut(self) -> None:
        line = recorded_line([_recorded(i) for i in range(10)], undo=False)
        assert "message 7 ..." in line and "message 8" not in line
        assert line.endswith("honoured, as the agent did.")


def test_note_rows_in_order_of_kind() -> None:
    notes = ImportNotes(dropped=["d"], warnings=["w1", "w2"], orphan_tool_results=["o"], unanswered_tool_uses=["u"], skipped={"x": 3})
    assert note_rows(notes) == [("dropped", "d"), ("warning", "w1"), ("warning", "w2"), ("orphan tool result", "o"), ("unanswered tool call", "u")]
    assert note_rows(ImportNotes()) == []
