"""The replay engine: play a transcript again under a config and measure what compaction did.

    replay(transcript, config, settings=...)   one Report: a Row per request, totals, retention
    ReplaySettings                    prices, prompt cache, retention weights, clock (beside the config)
    propose_window(transcript)        the window at which a config summarizes this session, hidden part counted

Comparing configs (``compare``, ``compare_folder``, ``run_grid``) sits one floor up, in ``lab.evaluation``.

Reports are data: ``Report.to_dict()`` / ``Report.df`` / ``Report.write(path)``. Replays of one
transcript share what is pure per message (counts, cache keys, recall's index); ``clear_caches()``
forgets it all, for a cold measurement.
"""

from .cache import CacheStep, PromptCache, request_cost
from .engine import EPOCH, clear_caches, prompt_too_long_error, replay, request_points, resolve_config
from .recall import Recall
from .report import LostMention, Report, Retention, RetentionItem, RetentionPart, Row
from .retention import PARTS as RETENTION_PARTS
from .retention import retention, targets
from .settings import ReplaySettings, load_settings, split_config
from .window import WindowProposal, propose_window, raw_peak

__all__ = [
    "replay",
    "clear_caches",
    "ReplaySettings",
    "load_settings",
    "split_config",
    "Report",
    "Row",
    "Retention",
    "RetentionPart",
    "RetentionItem",
    "LostMention",
    "Recall",
    "RETENTION_PARTS",
    "retention",
    "targets",
    "PromptCache",
    "CacheStep",
    "request_cost",
    "request_points",
    "resolve_config",
    "prompt_too_long_error",
    "EPOCH",
    "propose_window",
    "raw_peak",
    "WindowProposal",
]
