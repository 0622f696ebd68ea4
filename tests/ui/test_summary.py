"""lab.views.summary: the labels and one-line explanations of the retention parts."""

from __future__ import annotations

from lab.views.summary import PART_HELP, PART_LABELS
from lab.replayer.retention import PARTS

def test_every_retention_part_has_a_label_and_the_two_obscure_ones_a_line() -> None:
    assert set(PART_LABELS) == set(PARTS)
    assert set(PART_HELP) == {"planted_facts", "recoverable"}
    assert all(line.count(". ") == 0 and line.endswith(".") for line in PART_HELP.values()), "one sentence each"
