"""Compaction Lab: a library and visual lab for compacting the context of LLM agents.

Notebook and agent use::

    import lab
    t = lab.load("session.jsonl")                  # any supported format, auto-detected
    lab.sessions("my-project/")                    # a store or folder of several: ids, newest first; lab.load(path, session=ID)
    report = lab.replay(t, "mewcode", window=64_000)
    report.df                                      # one row per model request
    lab.replay(t, "mewcode", settings=lab.ReplaySettings(use_timestamps=False))  # prices, cache, clock: beside the config
    lab.compare(t, ["minicode", "mewcode"])        # one row per config
    lab.sweep("sessions/", "space.toml", trials=30)  # search the config space; .pareto, .export_best(1, "best.toml")
    lab.figures.timeline(report)                   # the app's chart, as a plotly figure
    lab.explore(t, "mewcode")                      # the same lab as notebook widgets

    compactor = lab.Compactor(lab.load_config("compaction.json"))
    outcome = compactor.process_request(messages)

Names load lazily, so ``import lab`` stays cheap and pulls in neither
streamlit, plotly nor ipywidgets.
"""

from __future__ import annotations

from .lazy import Where, lazy_exports

__version__ = "0.1.0"

# public name -> (module, attribute); attribute None means the module itself
_EXPORTS: dict[str, Where] = {
    "load": ("lab.formats", "load"),
    "dump": ("lab.formats", "dump"),
    "detect": ("lab.formats", "detect"),
    "sessions": ("lab.formats", "sessions"),
    "replay": ("lab.replayer", "replay"),
    "compare": ("lab.evaluation", "compare"),
    "compare_folder": ("lab.evaluation", "compare_folder"),
    "sweep": ("lab.tuning", "sweep"),
    "Report": ("lab.replayer", "Report"),
    "ReplaySettings": ("lab.replayer.settings", "ReplaySettings"),
    "presets": ("lab.core.presets", None),
    "preset": ("lab.core.presets", "preset"),
    "Compactor": ("lab.core.compactor", "Compactor"),
    "CompactionConfig": ("lab.core.config", "CompactionConfig"),
    "load_config": ("lab.core.config", "load_config"),
    "dump_config": ("lab.core.config", "dump_config"),
    "Transcript": ("lab.core.messages", "Transcript"),
    "Message": ("lab.core.messages", "Message"),
    "get_counter": ("lab.core.tokens", "get_counter"),
    "generate": ("lab.generator", "generate"),
    "GeneratorConfig": ("lab.generator", "GeneratorConfig"),
    "figures": ("lab.figures", None),
    "explore": ("lab.notebook", "explore"),  # needs the notebook extra (ipywidgets, anywidget)
    "LabError": ("lab.errors", "LabError"),
    "ConfigError": ("lab.errors", "ConfigError"),
    "TranscriptError": ("lab.errors", "TranscriptError"),
    "StageError": ("lab.errors", "StageError"),
    "ProviderError": ("lab.errors", "ProviderError"),
    "PromptTooLongError": ("lab.errors", "PromptTooLongError"),
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
