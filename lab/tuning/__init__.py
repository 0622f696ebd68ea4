"""Search the config space for the settings that do best on your own sessions.

    import lab
    result = lab.sweep("sessions/", "space.toml", trials=30, objectives=["cost", "needed_later_recall"])
    result.pareto                      # the non-dominated configs, best first
    lab.figures.pareto(result.df, "cost", "needed_later_recall")
    result.export_best(1, "best.toml") # a config file the agent loads
    result.recommendation()            # "recommended: trial 7 (...): cost in-sample X, held-out Y; ..."
    result.export_chosen("chosen.toml")  # the best held-out trial (folds: on by default from 2 sessions)

    space        the search space, from a TOML file of config fields and their ranges or choices
    study        the Optuna NSGA-II search, resumable from an sqlite study file
    folds        which sessions each fold's search never sees, to score its front held out
    result       SweepResult: every trial, the Pareto front, export
    progress     SweepProgress and the CLI's one-line progress with an ETA
"""

from __future__ import annotations

from ..lazy import lazy_exports


# public name -> submodule; loaded on first use, so the CLI can read the objectives without the replay engine.
_EXPORTS: dict[str, str] = {
    "sweep": ".study",
    "load_transcripts": ".study",
    "resolve_space": ".study",
    "DEFAULT_POPULATION": ".study",
    "SweepResult": ".result",
    "non_dominated": ".result",
    "SweepProgress": ".progress",
    "ProgressCallback": ".progress",
    "StderrLine": ".progress",
    "format_eta": ".progress",
    "SearchSpace": ".space",
    "Param": ".space",
    "parse_space": ".space",
    "load_space": ".space",
    "EXAMPLE_SPACE": ".space",
    "AUTO": ".space",
    # What a trial is scored on is an evaluation measure: it lives one floor down, re-exported here.
    "Objective": "..evaluation.objectives",
    "OBJECTIVES": "..evaluation.objectives",
    "DEFAULT_OBJECTIVES": "..evaluation.objectives",
    "SCORES": "..evaluation.objectives",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
