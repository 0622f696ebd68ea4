"""Synthetic agent sessions: seeded, valid, realistic, with planted facts.

``generate(GeneratorConfig(...))`` returns a ``Transcript``;
``generate_planted(...)`` the same with its planted content dependencies;
``generate_jsonl_bytes(path, n)`` streams a large Claude-Code-shaped JSONL;
``generate_tiny_jsonl(path, n)`` one of ``n`` tiny messages (the scale bench);
``write_samples(folder)`` rewrites the generated files of ``sample_sessions/``.
"""

from .bulk import claude_code_entries, generate_jsonl_bytes
from .config import GeneratorConfig, parse_generator_config
from .samples import SAMPLE_CONFIGS, write_lab_json, write_samples
from .edits import Planted
from .session import TOOL_SPECS, SessionBuilder, estimate_tokens, generate, generate_planted, iter_session
from .tiny import generate_tiny_jsonl

__all__ = [
    "GeneratorConfig",
    "parse_generator_config",
    "generate",
    "generate_planted",
    "Planted",
    "iter_session",
    "SessionBuilder",
    "TOOL_SPECS",
    "estimate_tokens",
    "generate_jsonl_bytes",
    "claude_code_entries",
    "generate_tiny_jsonl",
    "write_lab_json",
    "write_samples",
    "SAMPLE_CONFIGS",
]
