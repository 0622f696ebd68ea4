"""The judge: a model grades an answer 0-5 against the session's reference on six fixed dimensions.

The dimensions are Factory.ai's: accuracy, context awareness, artifact trail,
completeness, continuity and instruction following. The rubric is fixed text
(the same for every probe, model and config, so grades compare), and the
answer format is strict JSON, one integer 0-5 per dimension and a short
rationale.

``parse_grade`` reads that JSON robustly: it takes the first JSON object in
the text (a code fence or words around it are tolerated), and accepts only
integers 0-5 (or integral floats such as ``4.0``) for all six dimensions.
Anything else is a ``GradeError``; ``grade`` asks again, up to ``attempts``
times in all, and then gives up with the last error. It never raises for a
malformed grade beyond that one error type, so a run can report it and go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from ..core.messages import Usage
from ..core.providers import ProviderSettings
from ..errors import LabError
from .build import Probe
from .call import Completion, complete
from .cost import Meter, request_estimate

__all__ = ["DIMENSIONS", "RUBRIC", "RUBRIC_MARKER", "JUDGE_TOKENS", "GradeError", "Grade", "Judged", "parse_grade", "judge_body", "grade"]

DIMENSIONS: tuple[str, ...] = ("accuracy", "context_awareness", "artifact_trail", "completeness", "continuity", "instruction_following")
RUBRIC_MARKER = "[probe-judge rubric v1]"
JUDGE_TOKENS = 400
_EXAMPLE = json.dumps({**{d: 0 for d in DIMENSIONS}, "rationale": "one or two sentences"})

RUBRIC = f"""{RUBRIC_MARKER}
You grade how well a coding agent, whose history was compacted, answered a question about its own session.
You get the question, the reference answer (taken from the recorded session itself; it is correct) and the agent's answer.
Grade the answer against the reference, not against what you think is true, on six dimensions, each an integer 0-5:
- accuracy: the facts (error messages, file names, commands, values) agree with the reference.
- context_awareness: the answer reflects the state of this session at this point, not a generic one.
- artifact_trail: the files read and changed, and how, are named correctly.
- completeness: every part of the question is answered, with everything the reference holds.
- continuity: the answer would let the work continue without redoing or contradicting what was done.
- instruction_following: the answer does what the question asks (and what the user instructed), in the form asked.
Scale: 5 = matches the reference fully; 4 = minor omissions; 3 = partly right, some facts missing or vague;
2 = mostly missing or partly wrong; 1 = wrong but on topic; 0 = no answer, refuses, or entirely wrong.
A dimension the question does not touch is graded by how well the answer avoids errors in it.
Reply with one JSON object and nothing else, exactly these keys:
{_EXAMPLE}"""


class GradeError(LabError):
    """The judge's reply is not a valid grade."""


@dataclass(frozen=True)
class Grade:
    scores: dict[str, int]
    rationale: str = ""

    @property
    def mean(self) -> float:
        return sum(self.scores.values()) / len(self.scores)


@dataclass(frozen=True)
class Judged:
    """What grading one answer took: the grade (None when every attempt failed), the attempts and their usage."""

    grade: Grade | None
    attempts: int
    usage: list[Usage]
    models: list[str]
    error: str | None = None


def _first_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            value, _ = decoder.raw_decode(text, at)
            return value
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
    raise GradeError("the judge's reply holds no JSON object")


def _score(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise GradeError(f"the judge's {name} is {value!r}, not an integer 0-5")
    if not 0 <= int(value) <= 5:
        raise GradeError(f"the judge's {name} is {int(value)}, outside 0-5")
    return int(value)


def parse_grade(text: str) -> Grade:
    """The grade in a judge's reply (see the module docstring), or a ``GradeError`` saying what is wrong."""
    data = _first_object(text)
    if not isinstance(data, Mapping):
        raise GradeError("the judge's reply is not a JSON object")
    missing = [d for d in DIMENSIONS if d not in data]
    if missing:
        raise GradeError(f"the judge's reply lacks {', '.join(missing)}")
    scores = {d: _score(d, data[d]) for d in DIMENSIONS}
    rationale = data.get("rationale", "")
    return Grade(scores, " ".join(rationale.split())[:1000] if isinstance(rationale, str) else "")


def judge_body(probe: Probe, answer: str, provider: str) -> dict[str, Any]:
    """The judge's request body (without model and output budget): the rubric and the one case to grade."""
    case = (
        f"Probe type: {probe.kind}\n\n<question>\n{probe.question}\n</question>\n\n"
        f"<reference>\n{probe.reference}\n</reference>\n\n<answer>\n{answer}\n</answer>\n\n"
        "Grade the answer. Reply with the JSON object only."
    )
    if provider == "anthropic":
        return {"system": RUBRIC, "messages": [{"role": "user", "content": case}]}
    return {"messages": [{"role": "system", "content": RUBRIC}, {"role": "user", "content": case}]}


def grade(settings: ProviderSettings, probe: Probe, answer: str, *, attempts: int = 3, meter: Meter | None = None) -> Judged:
    """Ask the judge until a reply parses, at most ``attempts`` times.

    A failed call (``ProviderError``) or the meter's limit (``CostLimitReached``) ends it at once: those are the
    run's to report. Only a malformed grade is asked again.
    """
    if attempts < 1:
        raise LabError(f"attempts must be >= 1, got {attempts}")
    usages: list[Usage] = []
    models: list[str] = []
    error: str | None = None
    body = judge_body(probe, answer, settings.provider)
    estimate = request_estimate(settings.resolved_model, "judge", body, JUDGE_TOKENS)
    for n in range(1, attempts + 1):
        if meter is not None:
            meter.before(estimate)
        reply: Completion = complete(settings, body, JUDGE_TOKENS)
        usages.append(reply.usage)
        models.append(reply.model)
        if meter is not None:
            meter.add(settings.resolved_model, reply.usage)
        try:
            return Judged(parse_grade(reply.text), n, usages, models)
        except GradeError as e:
            error = f"malformed grade after {n} attempt(s): {e}"
    return Judged(None, attempts, usages, models, error)
