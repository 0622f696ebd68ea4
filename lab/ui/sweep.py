"""The Sweep page's state: which sessions to sweep over, the last result, loading a trial as the current config.

    sweep_sources()              the loaded session (when there is one) and every sample / corpus file
    run_sweep(...)               lab.sweep() over the picked sessions, from the current config; kept for the session
    sweep_result()               the last result, or None
    trial_from_selection(event)  the trial a click on the Pareto chart picked (plotly's customdata)
    load_sweep_trial(n)          make trial n's config the current config
    load_selection(event)        the same for a chart click, once per new click

The sweep runs in this process: the app serves many browser sessions from
threads, and a sweep there is meant to be a small one; big ones belong to the
CLI (processes, Ray).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

import streamlit as st

from ..core.messages import Transcript
from ..errors import ConfigError, TranscriptError
from . import keys
from .settings import get_config, get_settings, set_config
from .transcript import _load_sample_cached, _sample_paths, get_transcript, transcript_label
from ..tuning.space import EXAMPLE_SPACE

if TYPE_CHECKING:  # pragma: no cover
    from ..tuning import ProgressCallback, SweepResult

__all__ = ["SWEEP_LOADED", "sweep_sources", "run_sweep", "sweep_result", "trial_from_selection", "load_sweep_trial", "load_selection", "example_space"]

SWEEP_LOADED = "loaded session"
_RESULT, _PICKED = keys.SWEEP_RESULT, keys.SWEEP_PICKED


def example_space() -> str:
    return EXAMPLE_SPACE


def sweep_sources() -> list[str]:
    """What the page offers to sweep over: the loaded session first (when one is loaded), then the samples."""
    return ([SWEEP_LOADED] if get_transcript() is not None else []) + list(_sample_paths())


def _transcripts(sources: Sequence[str]) -> tuple[list[Transcript], list[str]]:
    paths = _sample_paths()
    out: list[Transcript] = []
    names: list[str] = []
    for name in sources:
        if name == SWEEP_LOADED:
            loaded = get_transcript()
            if loaded is None:
                raise TranscriptError("no session is loaded")
            out.append(loaded)
            names.append(transcript_label() or SWEEP_LOADED)
            continue
        # Names map to listed paths only: a name from the browser is never joined to a folder.
        if name not in paths:
            raise TranscriptError("not a sample session", file=name)
        out.append(_load_sample_cached(str(paths[name]), keys.digest(paths[name].read_bytes()))[0])
        names.append(name)
    if not out:
        raise ConfigError("pick at least one session to sweep over")
    return out, names


def run_sweep(sources: Sequence[str], space: str, objectives: Sequence[str], trials: int, *,
              population: int = 10, seed: int = 0, allow_failures: bool = False,
              progress: ProgressCallback | None = None, folds: int | None = None) -> SweepResult:
    """Sweep the picked sessions from the current config (its window included) and keep the result.

    ``folds``: as ``lab.sweep``'s (None: held out by default, 5 folds from 10 sessions, one per session below; 0: off).
    """
    # Lazy: the tuner brings optuna and numpy, which only a sweep that runs needs.
    from ..tuning import sweep

    transcripts, names = _transcripts(sources)
    named = [t.model_copy(update={"meta": t.meta.model_copy(update={"source_path": n})}) for t, n in zip(transcripts, names, strict=True)]
    result = sweep(named, space, trials=trials, objectives=list(objectives), base=get_config(), settings=get_settings(), seed=seed,
                   population=population, allow_failures=allow_failures, progress=progress, folds=folds)
    st.session_state[_RESULT] = result
    st.session_state.pop(_PICKED, None)
    return result


def sweep_result() -> SweepResult | None:
    return st.session_state.get(_RESULT)


def trial_from_selection(event: Any) -> int | None:
    """The trial number of the first selected point of the Pareto chart (its customdata), or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or ():
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, (list, tuple)) and data:
            data = data[0]
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return int(data)
    return None


def load_sweep_trial(trial: int) -> None:
    """Make the config of ``trial`` the current one (the Pipeline widgets follow)."""
    result = sweep_result()
    if result is None:
        raise ConfigError("no sweep has run in this session")
    set_config(result.config(trial))


def load_selection(event: Any) -> int | None:
    """Load the trial a click on the chart picked; None when nothing new was picked.

    A selection stays in the chart's state across reruns, so it loads once: a config
    changed afterwards on the Pipeline page is not overwritten on the next visit.
    """
    trial = trial_from_selection(event)
    if trial is None or st.session_state.get(_PICKED) == trial:
        return None
    load_sweep_trial(trial)
    st.session_state[_PICKED] = trial
    return trial
