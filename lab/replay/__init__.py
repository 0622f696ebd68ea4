"""The replay engine: play a transcript again under a config and measure what compaction did.

    replay(transcript, config)        one Report: a Row per request, totals, retention
    compare(transcript, configs)      one CompareTable row per config
    compare_folder(folder, configs)   one row per transcript x config, across processes

Reports are data: ``Report.to_dict()`` / ``Report.df`` / ``Report.write(path)``.
"""

import sys
import types
from typing import Any

from .cache import CacheStep, PromptCache, request_cost
from .compare import CompareTable, compare, compare_folder
from .engine import EPOCH, prompt_too_long_error, replay, request_points, resolve_config
from .report import Report, Retention, RetentionItem, RetentionPart, Row
from .retention import PARTS as RETENTION_PARTS
from .retention import retention, targets

__all__ = [
    "replay",
    "compare",
    "compare_folder",
    "CompareTable",
    "Report",
    "Row",
    "Retention",
    "RetentionPart",
    "RetentionItem",
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
]


class _CallableModule(types.ModuleType):
    """``lab.replay`` is both this package and the ``replay`` function.

    Importing the subpackage rebinds ``lab.replay`` to the module object, which
    would shadow the function that ``lab.replay(transcript, config)`` promises;
    making the module callable keeps both spellings working.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
