"""The lab's one error hierarchy.

    LabError
     ├── ConfigError        a config file or value is wrong (names the field)
     ├── TranscriptError    an input transcript cannot be read (file, line/path, expectation)
     ├── StageError         a compaction stage could not do its work
     │    └── SummaryError  a summarizer failed (rule-based, session-memory or LLM)
     ├── StoreError         the spill store could not read or write
     └── ProviderError      an LLM provider call failed
          └── PromptTooLongError   the provider said the prompt does not fit

    LabWarning (UserWarning)
     └── MovedSettingsWarning   a config file still holds settings that moved out of it

Front ends catch ``LabError``: the CLI prints ``error: <message>`` and exits 2,
the app shows ``st.error`` and keeps running.
"""

from __future__ import annotations

__all__ = [
    "LabError",
    "ConfigError",
    "TranscriptError",
    "StageError",
    "SummaryError",
    "StoreError",
    "ProviderError",
    "PromptTooLongError",
    "LabWarning",
    "MovedSettingsWarning",
]


class LabError(Exception):
    """Base of every error the lab raises on purpose."""


class ConfigError(LabError):
    """A config is malformed: unknown key, wrong type or out-of-range value."""


class TranscriptError(LabError):
    """A transcript cannot be imported.

    ``file`` and ``where`` (``line 12`` or a JSON path such as ``$.messages[3]``)
    point at the problem; ``expected`` says what the importer wanted there.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        where: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.where = where
        self.expected = expected
        self.reason = message
        parts = [p for p in (file, where) if p]
        text = f"{': '.join(parts)}: {message}" if parts else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


class StageError(LabError):
    """A stage failed in a way the pipeline cannot absorb."""


class SummaryError(StageError):
    """A summarizer produced no usable summary."""


class StoreError(LabError):
    """The spill store failed to write or read a spilled result."""


class ProviderError(LabError):
    """An LLM provider call failed (auth, network, rate limit, server)."""


class PromptTooLongError(ProviderError):
    """The provider rejected the request because the prompt exceeds its window.

    ``body`` keeps the provider's error body in the exact shape it was sent
    (Anthropic ``{type: error, error: {...}}`` or OpenAI ``{message, type,
    param, code}``) so recovery code and reports can show it.
    """

    def __init__(self, message: str, *, body: dict | None = None, provider: str | None = None) -> None:
        self.body = body or {}
        self.provider = provider
        super().__init__(message)


class LabWarning(UserWarning):
    """Base of the warnings the lab gives on purpose: something ran, but not quite as asked."""


class MovedSettingsWarning(LabWarning):
    """A config file held settings that are no longer part of the agent config; they were ignored."""
