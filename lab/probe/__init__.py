"""Probe-based quality: questions about the session after compaction, graded by an LLM against the session itself.

    build_probes(raw, future, k)        the four probes at request k, references from rules (build.py)
    run_probes(report, settings)        ask each with the compacted context at k, judge, report (run.py)
    probe_session(path, config, ...)    replay, then run_probes
    probe_score(report, settings)       the overall 0-5 score, for a sweep objective or a compare column

The provider SDKs are imported by ``call.py`` (through ``lab.core.providers``),
so importing ``lab.probe`` loads them: the app imports it only when asked.
"""

from .build import PROBE_KINDS, QUESTIONS, Probe, ProbeKind, build_probes
from .cost import CostLimitReached, Meter, RequestEstimate
from .judge import DIMENSIONS, RUBRIC, Grade, GradeError, parse_grade
from .report import ProbeReport, ProbeResult, TypeScore
from .run import plan, probe_score, probe_session, run_probes

__all__ = [
    "PROBE_KINDS",
    "QUESTIONS",
    "DIMENSIONS",
    "RUBRIC",
    "Probe",
    "ProbeKind",
    "build_probes",
    "plan",
    "run_probes",
    "probe_session",
    "probe_score",
    "ProbeReport",
    "ProbeResult",
    "TypeScore",
    "Grade",
    "GradeError",
    "parse_grade",
    "CostLimitReached",
    "Meter",
    "RequestEstimate",
]
