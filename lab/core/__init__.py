"""The compaction core: the message model, the stages, the ``Compactor`` and its presets.

It never imports streamlit, plotly or anything of ``lab.formats``,
``lab.replayer`` or ``lab.ui``; a test checks that in a fresh interpreter.

    from lab.core import Compactor, preset
    compactor = Compactor(preset("mewcode"))
    outcome = compactor.process_request(messages, usage=last_usage)
    send(outcome.messages)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers; at run time names load lazily
    from ..errors import (
        ConfigError,
        LabError,
        PromptTooLongError,
        ProviderError,
        StageError,
        StoreError,
        SummaryError,
        TranscriptError,
    )
    from .compactor import CompactionOutcome, Compactor
    from .config import STAGE_FIELDS, CompactionConfig, dump_config, load_config, parse_config
    from .diagnostics import config_warnings
    from .events import CompactorState, Event, StageContext, StageResult
    from .stages.contract import Decision, Stage, View
    from .messages import (
        Block,
        Boundary,
        ImageBlock,
        ImportNotes,
        Message,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolSpec,
        ToolUseBlock,
        Transcript,
        TranscriptMeta,
        Usage,
        block_text,
        message_text,
        tool_pairs,
    )
    from .pipeline import STAGES, build_stages, fold
    from .presets import PRESETS, preset, preset_description, preset_names
    from .ptl import is_prompt_too_long
    from .repair import Repaired, repair
    from .stages.watermark import estimate, threshold
    from .store import FolderStore, MemoryStore, SpillStore
    from .summarizers.base import Summarizer, SummaryRequest, SummaryResult
    from .summarizers.rules import RuleSummarizer
    from .summarizers.session_memory import SessionMemorySummarizer
    from .tokens import (
        BaseCounter,
        CharsPerTokenCounter,
        MiniCodeCounter,
        TokenCounter,
        counter_names,
        get_counter,
        register_counter,
    )


__all__ = [
    # the entry point
    "Compactor",
    "CompactionOutcome",
    "is_prompt_too_long",
    # histories the providers accept
    "repair",
    "Repaired",
    # configuration
    "CompactionConfig",
    "STAGE_FIELDS",
    "load_config",
    "dump_config",
    "parse_config",
    "config_warnings",
    "PRESETS",
    "preset",
    "preset_description",
    "preset_names",
    # stages and their reports
    "STAGES",
    "build_stages",
    "fold",
    "threshold",
    "estimate",
    "Event",
    "Stage",
    "Decision",
    "View",
    "StageContext",
    "StageResult",
    "CompactorState",
    # the message model
    "Message",
    "Block",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ImageBlock",
    "Usage",
    "Boundary",
    "ToolSpec",
    "ImportNotes",
    "Transcript",
    "TranscriptMeta",
    "block_text",
    "message_text",
    "tool_pairs",
    # token counters
    "TokenCounter",
    "BaseCounter",
    "MiniCodeCounter",
    "CharsPerTokenCounter",
    "get_counter",
    "counter_names",
    "register_counter",
    # spill stores
    "SpillStore",
    "FolderStore",
    "MemoryStore",
    # summarizers
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "RuleSummarizer",
    "SessionMemorySummarizer",
    # errors
    "LabError",
    "ConfigError",
    "TranscriptError",
    "StageError",
    "SummaryError",
    "StoreError",
    "ProviderError",
    "PromptTooLongError",
]

# name -> module holding it. Loaded on first use (PEP 562), so importing one
# submodule such as ``lab.core.messages`` does not drag in every stage.
_WHERE = {
    **dict.fromkeys(["LabError", "ConfigError", "TranscriptError", "StageError", "SummaryError", "StoreError", "ProviderError", "PromptTooLongError"], "lab.errors"),
    **dict.fromkeys(["Compactor", "CompactionOutcome"], "lab.core.compactor"),
    **dict.fromkeys(["CompactionConfig", "STAGE_FIELDS", "load_config", "dump_config", "parse_config"], "lab.core.config"),
    **dict.fromkeys(["PRESETS", "preset", "preset_description", "preset_names"], "lab.core.presets"),
    **dict.fromkeys(["STAGES", "build_stages", "fold"], "lab.core.pipeline"),
    **dict.fromkeys(["threshold", "estimate"], "lab.core.stages.watermark"),
    "is_prompt_too_long": "lab.core.ptl",
    **dict.fromkeys(["repair", "Repaired"], "lab.core.repair"),
    "config_warnings": "lab.core.diagnostics",
    **dict.fromkeys(["Event", "StageContext", "StageResult", "CompactorState"], "lab.core.events"),
    **dict.fromkeys(["Stage", "Decision", "View"], "lab.core.stages.contract"),
    **dict.fromkeys(
        ["Message", "Block", "TextBlock", "ThinkingBlock", "ToolUseBlock", "ToolResultBlock", "ImageBlock", "Usage", "Boundary",
         "ToolSpec", "ImportNotes", "Transcript", "TranscriptMeta", "block_text", "message_text", "tool_pairs"],
        "lab.core.messages",
    ),
    **dict.fromkeys(["TokenCounter", "BaseCounter", "MiniCodeCounter", "CharsPerTokenCounter", "get_counter", "counter_names", "register_counter"], "lab.core.tokens"),
    **dict.fromkeys(["SpillStore", "FolderStore", "MemoryStore"], "lab.core.store"),
    **dict.fromkeys(["Summarizer", "SummaryRequest", "SummaryResult"], "lab.core.summarizers.base"),
    "RuleSummarizer": "lab.core.summarizers.rules",
    "SessionMemorySummarizer": "lab.core.summarizers.session_memory",
}


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())
