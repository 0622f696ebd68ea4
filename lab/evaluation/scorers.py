"""Scorers: what a grid adds to each replay's row beyond the replay's own measures.

A scorer is a callable ``scorer(report, transcript) -> value`` that names the row column it fills
(``column``). ``run_grid`` calls every scorer it is given after each replay, in whatever process or Ray
task ran the replay, so a scorer must pickle; ``without_keys()`` is the copy a Ray task gets, with no
secret in it (Ray may store or spill task arguments). A scorer that raises a ``LabError`` makes its
cell an error, as a failed replay does.

    ProbeSpec   LLM probes answered and graded by a judge (``lab.probe.probe_score``): ``probe_score``, 0-5 or NaN
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..core.messages import Transcript
    from ..core.providers import ProviderSettings
    from ..replayer.report import Report

__all__ = ["Scorer", "ProbeSpec"]


class Scorer(Protocol):
    """One more column per replay: ``scorer(report, transcript)`` is the value of ``scorer.column``."""

    @property
    def column(self) -> str: ...

    def __call__(self, report: Report, transcript: Transcript) -> Any: ...

    def without_keys(self) -> Scorer:
        """This scorer with no secret in it: what a Ray task is given."""
        ...


@dataclass(frozen=True)
class ProbeSpec:
    """Score each replay with LLM probes too (``lab.probe.probe_score``): the row gains ``probe_score``, 0-5 or NaN.

    Keys: ``settings``/``judge`` may carry one in memory for this process and local workers; Ray tasks get
    the settings without it (``without_keys``) and read ANTHROPIC_API_KEY / OPENAI_API_KEY on their node.
    """

    settings: ProviderSettings
    judge: ProviderSettings | None = None
    # Dollars at most per replay's probes (None: no limit).
    max_cost: float | None = None
    column: str = field(default="probe_score", init=False)

    def __call__(self, report: Report, transcript: Transcript) -> float:
        # Imported on the first call, not with this module: lab.probe loads both provider SDKs (seconds of
        # import), which a grid without probes, and the CLI's other verbs, never need.
        from ..probe import probe_score

        return probe_score(report, self.settings, judge=self.judge, tools=transcript.tools, max_cost=self.max_cost)

    def without_keys(self) -> ProbeSpec:
        judge = None if self.judge is None else self.judge.model_copy(update={"api_key": None})
        return ProbeSpec(self.settings.model_copy(update={"api_key": None}), judge, self.max_cost)
