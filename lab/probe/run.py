"""A probe run: build the probes at each request k, estimate the cost, ask, judge, report.

    run_probes(report, settings)      probes over a replay (its contexts in memory)
    probe_session(session, config, settings)   replay first, then ``run_probes``
    probe_score(report, settings)     the overall score alone: a sweep objective or compare column

The run is sequential and in a fixed order (request by request, probe kind by
kind, each answer judged right after it is given), so the same scripted
provider always sees the same requests. Before the first call it prints the
estimate (``cost.py``); with ``max_cost`` a call that could pass the limit is
not made, and it and every probe after it are reported as skipped. A failed
call or a grade that stays malformed fails that probe only: the run goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..core.messages import Message, ToolSpec
from ..core.providers import ProviderSettings
from ..errors import ConfigError, LabError
from ..replayer.report import Report
from .ask import ANSWER_TOKENS, ask_body
from .build import PROBE_KINDS, Probe, ProbeKind, build_probes
from .call import complete
from .cost import CostLimitReached, Meter, RequestEstimate, describe_estimate, request_estimate
from .judge import JUDGE_TOKENS, grade, judge_body
from .report import ProbeReport, ProbeResult, aggregate
from ..replayer import replay
from ..replayer.engine import as_transcript

__all__ = ["run_probes", "probe_session", "probe_score", "estimate", "resolve_points", "future_at", "plan"]

Echo = Callable[[str], None]
Progress = Callable[[int, int], object]


def resolve_points(report: Report, at: Sequence[int] | None) -> list[int]:
    """The requests to probe: ``at`` (negative counts from the end), else the last request."""
    n = len(report.rows)
    if n == 0:
        raise LabError("the session has no requests to probe")
    points = list(at) if at else [n - 1]
    out: list[int] = []
    for k in points:
        if not isinstance(k, int) or isinstance(k, bool) or not -n <= k < n:
            raise ConfigError(f"--at {k!r} is out of range: the replay has {n} request(s), 0 to {n - 1}")
        if k % n not in out:
            out.append(k % n)
    return out


def future_at(report: Report, k: int) -> list[Message]:
    """The recorded response at request ``k``: the raw messages from it up to the next request."""
    raw = report._raw  # the replayed history (recorded compactions undone) the rows index into
    if raw is None:
        raise LabError("this report has no contexts (it was read from JSON); replay the transcript to get them")
    start = report.rows[k].message_index
    end = report.rows[k + 1].message_index if k + 1 < len(report.rows) else len(raw)
    return list(raw[start:end])


def plan(report: Report, points: Sequence[int], kinds: Sequence[ProbeKind] = PROBE_KINDS) -> list[Probe]:
    """Every probe of the run, in the order it is asked."""
    return [p for k in points for p in build_probes(report.raw_at(k), future_at(report, k), k, kinds)]


def _estimates(report: Report, probes: Sequence[Probe], settings: ProviderSettings, judge: ProviderSettings,
               tools: Sequence[ToolSpec]) -> list[tuple[RequestEstimate, RequestEstimate]]:
    out = []
    for p in probes:
        body = ask_body(report.context_at(p.at), p, settings.provider, tools)
        asked = request_estimate(settings.resolved_model, "ask", body, ANSWER_TOKENS)
        # The answer is not known yet: counted as long as its whole budget.
        judged = request_estimate(judge.resolved_model, "judge", judge_body(p, "", judge.provider), JUDGE_TOKENS, extra_input=ANSWER_TOKENS)
        out.append((asked, judged))
    return out


def estimate(report: Report, settings: ProviderSettings, *, judge: ProviderSettings | None = None, at: Sequence[int] | None = None,
             tools: Sequence[ToolSpec] = (), kinds: Sequence[ProbeKind] = PROBE_KINDS) -> list[str]:
    """The estimate lines ``run_probes`` prints, without sending anything."""
    judge = judge or settings
    probes = plan(report, resolve_points(report, at), kinds)
    return describe_estimate([e for pair in _estimates(report, probes, settings, judge, tools) for e in pair])


def _result(p: Probe, **fields: object) -> ProbeResult:
    return ProbeResult(id=p.id, kind=p.kind, at=p.at, question=p.question, reference=p.reference, facts=list(p.facts), **fields)  # type: ignore[arg-type]


def _probe(report: Report, p: Probe, asked: RequestEstimate, settings: ProviderSettings, judge: ProviderSettings,
           tools: Sequence[ToolSpec], meter: Meter, attempts: int) -> ProbeResult:
    """Ask one probe and judge the answer; every failure becomes the result's status, never an exception."""
    if meter.stopped is not None:
        return _result(p, status="skipped", error=meter.stopped)
    answer: str | None = None
    try:
        meter.before(asked)
        reply = complete(settings, ask_body(report.context_at(p.at), p, settings.provider, tools), ANSWER_TOKENS)
        meter.add(settings.resolved_model, reply.usage)
        answer = reply.text
        judged = grade(judge, p, answer, attempts=attempts, meter=meter)
    except CostLimitReached as e:
        return _result(p, status="skipped", answer=answer, error=str(e))
    except LabError as e:
        return _result(p, status="failed", answer=answer, error=str(e).splitlines()[0] if str(e) else type(e).__name__)
    except Exception as e:  # noqa: BLE001 - one probe's surprise must not end the run
        return _result(p, status="failed", answer=answer, error=f"internal error: {type(e).__name__}: {e}")
    if judged.grade is None:
        return _result(p, status="failed", answer=answer, judge_attempts=judged.attempts, error=judged.error)
    return _result(p, status="graded", answer=answer, scores=judged.grade.scores, mean=judged.grade.mean,
                   rationale=judged.grade.rationale, judge_attempts=judged.attempts)


def run_probes(
    report: Report,
    settings: ProviderSettings,
    *,
    judge: ProviderSettings | None = None,
    at: Sequence[int] | None = None,
    tools: Sequence[ToolSpec] = (),
    kinds: Sequence[ProbeKind] = PROBE_KINDS,
    max_cost: float | None = None,
    attempts: int = 3,
    echo: Echo | None = None,
    progress: Progress | None = None,
    session: str = "",
) -> ProbeReport:
    """Probe ``report`` (a replay with its contexts) with ``settings``' model, graded by ``judge`` (default: the same).

    ``tools``: the session's tool specs (sent with every question, ``tool_choice`` none). ``echo`` gets the
    estimate lines before the first call. ``progress(done, total)`` is called after each probe.
    """
    if max_cost is not None and not (max_cost >= 0 and math.isfinite(max_cost)):
        raise ConfigError(f"max_cost must be a finite number >= 0, got {max_cost!r}")
    judge = judge or settings
    points = resolve_points(report, at)
    probes = plan(report, points, kinds)
    estimates = _estimates(report, probes, settings, judge, tools)
    flat = [e for pair in estimates for e in pair]
    lines = describe_estimate(flat)
    for line in lines:
        if echo is not None:
            echo(line)
    costs = [e.cost for e in flat]
    if max_cost is not None and any(c is None for c in costs):
        unpriced = next(e.model for e in flat if e.cost is None)
        raise ConfigError(f"no price known for model {unpriced!r}, so --max-cost cannot be enforced; drop it or use a model from the price table")
    meter = Meter(limit=max_cost)
    results: list[ProbeResult] = []
    for n, (p, (asked, _)) in enumerate(zip(probes, estimates, strict=True), start=1):
        results.append(_probe(report, p, asked, settings, judge, tools, meter, attempts))
        if progress is not None:
            progress(n, len(probes))
    notes = []
    if not probes:
        notes.append("no probe had a reference at these requests (no error, no file change, no response): nothing was asked")
    out = ProbeReport(
        session=session, config=report.label, window=report.window, provider=settings.provider,
        model=settings.resolved_model, judge_model=judge.resolved_model, points=points, estimate=lines,
        estimated_cost=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        spent=meter.spent, calls=meter.calls, unpriced_calls=meter.unpriced_calls,
        input_tokens=meter.input_tokens, output_tokens=meter.output_tokens, stopped=meter.stopped,
        probes=results, notes=notes,
    )
    return aggregate(out)


def probe_session(session: object, config: object, settings: ProviderSettings, *, window: int | None = None, **kwargs: object) -> ProbeReport:
    """Replay ``session`` (a path, a Transcript or messages) under ``config``, then ``run_probes`` on it."""
    t = as_transcript(session)  # type: ignore[arg-type]
    report = replay(t, config, window=window)  # type: ignore[arg-type]
    name = str(t.meta.source_path or t.meta.title or t.meta.session_id or "session")
    kwargs.setdefault("tools", list(t.tools))
    kwargs.setdefault("session", name)
    return run_probes(report, settings, **kwargs)  # type: ignore[arg-type]


def probe_score(report: Report, settings: ProviderSettings, *, judge: ProviderSettings | None = None,
                at: Sequence[int] | None = None, tools: Sequence[ToolSpec] = (), max_cost: float | None = None) -> float:
    """The mean grade (0-5) of the probes at ``at`` (default: the last request); NaN when nothing was graded.

    NaN, not 0, so that a sweep counts a trial whose probes all failed as failed (Optuna does), not as bad.
    """
    result = run_probes(report, settings, judge=judge, at=at, tools=tools, max_cost=max_cost)
    return math.nan if result.score is None else result.score
