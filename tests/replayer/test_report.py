"""Report models: JSON round trip, file I/O, the DataFrame view, and the public API of lab.replayer."""

from __future__ import annotations

import json

import pytest

from lab.errors import LabError
from lab.replayer import Report, replay
from tests.builders import session


@pytest.fixture(scope="module")
def report() -> Report:
    from tests.replayer.test_engine import summarising

    return replay(session(20, 2000), summarising(), retention_each=True)


class TestRoundTrip:
    def test_dict_round_trip(self, report: Report) -> None:
        again = Report.from_dict(report.to_dict())
        assert again == report
        assert again.to_dict() == report.to_dict()

    def test_json_text_round_trip(self, report: Report) -> None:
        data = json.loads(report.to_json())
        assert data["lab_replay_report"] == 1
        assert Report.from_dict(data) == report

    def test_file_round_trip(self, report: Report, tmp_path) -> None:
        path = report.write(tmp_path / "out" / "REPORT.json")
        assert Report.read(path) == report
        assert not list(path.parent.glob("*.tmp"))

    def test_report_json_holds_config_rows_and_totals(self, report: Report) -> None:
        data = report.to_dict()
        assert data["config"]["label"] == "minicode" and data["config"]["window"] == 8000
        assert len(data["rows"]) == data["requests"] == 21
        for key in ("peak_sent", "requests_over_watermark", "compactions_by_strategy", "summary_calls", "invalid_requests",
                    "overflows", "failures", "total_cost", "total_cost_uncompacted", "cache_hit_ratio", "cache_hit_ratio_uncompacted",
                    "retention", "retention_score", "meta"):
            assert key in data, key

    def test_a_loaded_report_has_no_contexts(self, report: Report) -> None:
        loaded = Report.from_dict(report.to_dict())
        assert report.has_contexts and not loaded.has_contexts
        with pytest.raises(LabError, match="no contexts"):
            loaded.context_at(0)

    @pytest.mark.parametrize("bad", [[], {"rows": "nope"}, {"requests": "many"}], ids=["not-object", "rows", "requests"])
    def test_bad_input_is_a_lab_error(self, bad: object) -> None:
        with pytest.raises(LabError):
            Report.from_dict(bad)

    def test_unreadable_file(self, tmp_path) -> None:
        (tmp_path / "r.json").write_text("{not json", encoding="utf-8")
        with pytest.raises(LabError, match="cannot read"):
            Report.read(tmp_path / "r.json")


class TestViews:
    def test_dataframe_has_one_line_per_request(self, report: Report) -> None:
        df = report.df
        assert len(df) == report.requests
        for col in ("index", "sent_tokens", "raw_tokens", "cached_tokens", "cost", "cost_uncompacted", "boundary_placed", "tokens_summary", "retention_score"):
            assert col in df.columns, col
        assert df["freed_summary"].sum() == sum(r.freed_by_stage.get("summary", 0) for r in report.rows)
        assert int(df["events"].sum()) == sum(len(r.events) for r in report.rows)

    def test_totals_agree_with_rows(self, report: Report) -> None:
        assert report.peak_sent == max(r.sent_tokens for r in report.rows)
        assert report.total_cost == pytest.approx(sum(r.cost for r in report.rows))
        assert report.total_cost_uncompacted == pytest.approx(sum(r.cost_uncompacted for r in report.rows))
        assert report.requests_over_watermark == sum(r.over_watermark for r in report.rows)
        totals = report.totals()
        assert "rows" not in totals and totals["retention"]["first_request"] == 1.0

    def test_compaction_saves_money_here(self, report: Report) -> None:
        assert report.total_cost < report.total_cost_uncompacted


def test_replay_package_all_is_complete() -> None:
    import lab.replayer as pkg

    assert len(pkg.__all__) == len(set(pkg.__all__))
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    for name in ("replay", "Report", "Row"):  # compare and CompareTable: lab.evaluation
        assert name in pkg.__all__


def test_replay_does_not_import_ui_libraries() -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = "import sys, lab.replayer, lab.cli.replay\nprint(sorted(n for n in sys.modules if n.split('.')[0] in ('streamlit', 'plotly', 'pandas')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class TestRecordedBill:
    """The agent's own recorded cost, set beside the lab's prices (``Report.recorded_*``, ``cost_check``)."""

    @staticmethod
    def _billed(costs: list[float | None]) -> Report:
        from lab.core.messages import Transcript, Usage
        from lab.replayer.report import cost_check

        messages = session(len(costs) - 1, 500)
        replies = [i for i, m in enumerate(messages) if m.role == "assistant"]
        for i, cost in zip(replies, costs, strict=True):
            usage = Usage(input_tokens=1_000_000, output_tokens=0, cost_usd=cost)
            messages[i] = messages[i].model_copy(update={"usage": usage})
        report = replay(Transcript(messages=messages), "minicode", window=200_000)
        assert (cost_check(report) is None) == all(c is None for c in costs)
        return report

    def test_rows_and_totals_carry_the_bill_and_its_price(self) -> None:
        report = self._billed([0.5, None, 1.0])
        assert [r.recorded_cost for r in report.rows] == [0.5, None, 1.0]
        assert report.recorded_cost == 1.5 and report.recorded_cost_requests == 2
        # A million input tokens at the default row's input price, twice.
        per_million = report.settings["pricing"]["input_per_mtok"]
        assert report.recorded_usage_cost == pytest.approx(2 * per_million)
        assert report.recorded_cost_priced == pytest.approx(sum(r.cost_uncompacted for r in report.rows if r.recorded_cost is not None))
        assert any(n.startswith("the agent recorded a bill of $1.5000 for 2 of 3 requests") for n in report.notes)
        assert Report.from_dict(report.to_dict()) == report

    def test_the_line_says_when_the_replay_undid_the_agents_own_compaction(self) -> None:
        from lab.core.messages import Boundary, Message, TextBlock, Transcript, Usage

        marker = Message(role="system", id="m0", tag="boundary", boundary=Boundary(trigger="import", strategy="claude_code_compact"))
        summary = Message(role="user", id="m1", tag="summary", content=(TextBlock(text="Summary of the earlier work."),))
        messages = [marker, summary] + session(2, 500)
        messages = [m.model_copy(update={"usage": Usage(input_tokens=1000, cost_usd=0.01)}) if m.role == "assistant" else m for m in messages]
        report = replay(Transcript(messages=messages), "minicode", window=200_000, recorded_compactions="undo")
        assert report.recorded_compactions == 1
        [line] = [n for n in report.notes if n.startswith("the agent recorded a bill")]
        assert "the agent compacted 1 time(s) and this replay undid it" in line

    def test_no_bill_no_line(self) -> None:
        report = self._billed([None, None])
        assert report.recorded_cost is None and report.recorded_cost_requests == 0
        assert not any("recorded a bill" in n for n in report.notes)


def test_rows_are_packed_and_read_back_as_the_rows_given() -> None:
    """``Report.rows`` keeps each row as its values: every Row read back equals the one stored, and the JSON is a list of rows."""
    from lab.replayer.report import LostMention, Row, Rows

    report = replay(session(8), "lab", window=4_000)
    assert isinstance(report.rows, Rows) and len(report.rows) == report.requests > 0
    given = list(report.rows)
    assert report.rows == given and given == list(Rows(given))
    # Empty containers are made afresh for each row read: changing one changes no other row.
    first = report.rows[0]
    first.problems.append("x")
    assert report.rows[0].problems == given[0].problems
    assert report.rows[1:3] == given[1:3] and report.rows[-1] == given[-1]
    assert report.rows.column("sent_tokens") == [r.sent_tokens for r in given]
    assert report.rows.column("composition") == [r.composition for r in given]
    picked = report.rows.fields("cost", "sent_tokens")
    assert len(picked) == len(given) and [(f.cost, f.sent_tokens) for f in picked] == [(r.cost, r.sent_tokens) for r in given]
    assert list(picked) == list(picked)  # read as often as asked
    with pytest.raises(LabError, match="plain fields"):
        report.rows.fields("events")
    # A row with nested values, and one whose composition is not in the usual order, come back as they went in.
    odd = Row(index=0, message_index=1, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=1, sent_messages=1,
              composition={"user": 2, "system": 1}, lost_mentions=[LostMention(mention="a.py", kind="path", lost_to="this config")])
    assert list(Rows([odd])) == [odd]
    data = report.to_dict()
    assert isinstance(data["rows"], list) and data["rows"][0] == given[0].model_dump(mode="json")
    back = Report.from_dict(json.loads(json.dumps(data)))
    assert back == report and isinstance(back.rows, Rows)
    assert Report(rows=given) == Report(rows=Rows(given))
