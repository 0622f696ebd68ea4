"""The probe report: every probe with its answer and grade, and the scores per probe type and per dimension.

Scores are on the judge's scale, 0-5. A probe type's score and a dimension's
score are means over the probes that were graded; ``score`` is the mean of
every grade given (each graded probe's six dimensions). Probes that failed
(the call failed, or every grade was malformed) or were skipped (the cost
limit) are listed with why, and counted, never scored as 0: a failure says
nothing about the context.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import LabError
from .build import PROBE_KINDS
from .judge import DIMENSIONS
from ..atomic import write_text_atomic

__all__ = ["REPORT_VERSION", "ProbeResult", "TypeScore", "ProbeReport", "aggregate"]

REPORT_VERSION = 1
Status = Literal["graded", "failed", "skipped"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeResult(_Data):
    id: str
    kind: str
    at: int
    question: str
    reference: str
    facts: list[str] = Field(default_factory=list)
    status: Status = "failed"
    answer: str | None = None
    scores: dict[str, int] | None = None
    mean: float | None = None
    rationale: str = ""
    judge_attempts: int = 0
    error: str | None = None


class TypeScore(_Data):
    probes: int = 0
    graded: int = 0
    failed: int = 0
    skipped: int = 0
    score: float | None = None
    dimensions: dict[str, float | None] = Field(default_factory=dict)


class ProbeReport(_Data):
    version: int = REPORT_VERSION
    session: str = ""
    config: str = ""
    window: int = 0
    provider: str = ""
    model: str = ""
    judge_model: str = ""
    points: list[int] = Field(default_factory=list)
    estimate: list[str] = Field(default_factory=list)
    estimated_cost: float | None = None
    spent: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    stopped: str | None = None
    probes: list[ProbeResult] = Field(default_factory=list)
    by_type: dict[str, TypeScore] = Field(default_factory=dict)
    by_dimension: dict[str, float | None] = Field(default_factory=dict)
    score: float | None = None
    graded: int = 0
    failed: int = 0
    skipped: int = 0
    notes: list[str] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lab_probe_report": self.version, **self.model_dump(mode="json")}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as JSON; the file appears complete or not at all."""
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n")
        except OSError as e:
            raise LabError(f"cannot write {target}: {e.strerror or e}") from None
        return target

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ProbeReport:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise LabError(f"cannot read probe report {path}: {e}") from None
        if not isinstance(data, dict):
            raise LabError(f"{path}: a probe report must be a JSON object")
        return cls.model_validate({k: v for k, v in data.items() if k != "lab_probe_report"})


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(report: ProbeReport) -> ProbeReport:
    """``report`` with its counts and scores (per type, per dimension, overall) computed from its probes."""
    graded = [p for p in report.probes if p.status == "graded" and p.scores is not None]
    by_type: dict[str, TypeScore] = {}
    for kind in PROBE_KINDS:
        mine = [p for p in report.probes if p.kind == kind]
        if not mine:
            continue
        ok = [p for p in mine if p in graded]
        by_type[kind] = TypeScore(
            probes=len(mine),
            graded=len(ok),
            failed=sum(1 for p in mine if p.status == "failed"),
            skipped=sum(1 for p in mine if p.status == "skipped"),
            score=_mean([float(v) for p in ok for v in (p.scores or {}).values()]),
            dimensions={d: _mean([float((p.scores or {})[d]) for p in ok]) for d in DIMENSIONS},
        )
    return report.model_copy(update={
        "by_type": by_type,
        "by_dimension": {d: _mean([float((p.scores or {})[d]) for p in graded]) for d in DIMENSIONS},
        "score": _mean([float(v) for p in graded for v in (p.scores or {}).values()]),
        "graded": len(graded),
        "failed": sum(1 for p in report.probes if p.status == "failed"),
        "skipped": sum(1 for p in report.probes if p.status == "skipped"),
    })
