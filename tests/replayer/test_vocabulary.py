"""One vocabulary for compactions and invalid requests (issue 31 §4, §6): the CLI, the charts and the pages say the same words."""

from __future__ import annotations

from lab.core.messages import TextBlock
from lab.core.presets import preset
from lab.replayer import replay
from lab.replayer.report import COMPACTION_KINDS, STAGE_LABELS, compaction_kind, describe_compactions, describe_invalid, invalid_reasons
from lab.ui.explain import compactions_help, invalid_help
from lab.core.config import with_value
from tests.builders import assistant, system, user
from tests.conftest import SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"


def _event(stage: str, strategy: str | None, freed: int = 100, success: bool = True) -> dict:
    return {"stage": stage, "strategy": strategy, "tokens_before": 1000, "tokens_after": 1000 - freed, "tokens_freed": freed, "success": success}


class TestCompactionKinds:
    def test_each_stage_is_its_kind_and_decisions_are_not_compactions(self) -> None:
        assert compaction_kind(_event("spill", "tool_budget")) == "spill"
        assert compaction_kind(_event("microcompact", "clear_tool_uses")) == "clearing"
        assert compaction_kind(_event("summary", "session_memory")) == "summary"
        assert compaction_kind(_event("recovery", "full")) == "summary"
        assert compaction_kind(_event("recovery", "reactive")) == "truncation"
        assert compaction_kind(_event("dedup", "read_dedup")) == "dedup"
        # Not counted, as the replay does not count them: decisions, re-applied stubs, failures, nothing freed.
        for ev in (_event("watermark", "auto"), _event("spill", "reapply"), _event("summary", "full", success=False),
                   _event("spill", "tool_budget", freed=0), _event("active", None)):
            assert compaction_kind(ev) is None

    def test_by_kind_counts_what_by_strategy_counts_and_summaries_apart(self) -> None:
        spills_only = replay(SMALL, "minicode")
        cfg = with_value(preset("minicode"), "window", 8000)
        summarised = replay(SMALL, cfg)
        for report in (spills_only, summarised):
            kinds = report.compactions_by_kind
            assert list(kinds) == list(COMPACTION_KINDS)
            assert sum(kinds.values()) == sum(report.compactions_by_strategy.values())
        assert spills_only.compactions_by_kind["summary"] == 0 < spills_only.compactions_by_kind["spill"]
        assert summarised.compactions_by_kind["summary"] > 0

    def test_words_never_a_dict(self) -> None:
        assert describe_compactions({"summary": 0, "spill": 4, "clearing": 1, "dedup": 0}) == "0 summaries, 4 spills, 1 clearing"
        assert describe_compactions({"summary": 1, "spill": 0}) == "1 summary"
        report = replay(SMALL, "minicode")
        said = compactions_help(report)
        assert "{" not in said and "tool_budget" not in said
        assert said.startswith("0 summaries: older messages replaced by a summary.")
        assert f"{report.compactions_by_kind['spill']} spills: large tool results moved to files" in said

    def test_the_legend_labels_are_the_kinds_words(self) -> None:
        for stage, kind in (("spill", "spill"), ("microcompact", "clearing"), ("summary", "summary"), ("dedup", "dedup")):
            assert STAGE_LABELS[stage] == COMPACTION_KINDS[kind][0]


class TestInvalidReasons:
    def test_one_reason_over_many_requests_is_said_once_with_where(self) -> None:
        blank = assistant("x").model_copy(update={"content": (TextBlock(text="   "),)})
        # repair=False: the history as the source wrote it, which the provider refuses.
        report = replay([system(), user("fix"), blank, user("more"), assistant("ok"), user("again"), assistant("end")],
                        "minicode", repair=False)
        assert report.invalid_requests >= 2
        reasons = invalid_reasons(report)
        assert "empty text block (Anthropic refuses it)" in reasons
        hits = reasons["empty text block (Anthropic refuses it)"]
        assert [i for i, _ in hits] == [r.index for r in report.rows if not r.valid]
        assert hits[0][1].startswith("message 2 (assistant")
        lines = describe_invalid(report)
        assert lines[0].startswith("empty text block (Anthropic refuses it): requests ")
        # Escaped for the tooltip's markdown: the ids come from the transcript.
        said = invalid_help(report)
        assert f"invalid requests\\: {report.invalid_requests}," in said and "empty text block" in said

    def test_a_valid_replay_says_nothing_to_explain(self) -> None:
        report = replay(SMALL, "minicode")
        assert report.invalid_requests == 0 and describe_invalid(report) == [] and invalid_reasons(report) == {}
        assert invalid_help(report).startswith("invalid requests: 0")
