"""The MewCode summary request: render history as a transcript, ask for analysis then a 9-section summary.

The model first thinks in an ``<analysis>`` block, which is thrown away, and
then writes the ``<summary>``; asking for the analysis first makes the
summary more complete, and only the summary goes back into history.

The history travels as plain text inside one user message, never as real
tool calls: the request passes no tools, so the model cannot answer with a
tool call instead of a summary, and tool pairs in the old history cannot make
the provider reject the request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from ...errors import SummaryError
from ..messages import ImageBlock, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "SECTION_TITLES",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_INSTRUCTIONS",
    "SummaryPrompt",
    "render_transcript",
    "build_summary_prompt",
    "extract_summary",
]

SECTION_TITLES: tuple[str, ...] = (
    "Primary request and intent",
    "Key technical concepts",
    "Files and code sections",
    "Errors and fixes",
    "Problem solving",
    "All user messages",
    "Pending tasks",
    "Current work",
    "Possible next step",
)

SUMMARY_SYSTEM_PROMPT = (
    "You write the working memory of a coding agent. The conversation below is about to be removed from "
    "the agent's context; your summary is all the agent will have left of it, so it must let the agent "
    "continue the work without asking the user to repeat anything. Reply with text only; you have no tools."
)

SUMMARY_INSTRUCTIONS = """\
Summarise the conversation in the transcript above. Work in two phases.

Phase 1. Inside <analysis> and </analysis>, go through the conversation in order. For each part note what \
the user asked for, what the agent did, which files it read or changed, which commands it ran, what failed \
and how it was fixed, and every decision that was made. This analysis is for your own thinking; it will be \
discarded.

Phase 2. Inside <summary> and </summary>, write the summary with exactly these nine numbered sections:

1. Primary request and intent: everything the user asked for, in detail, including constraints and preferences.
2. Key technical concepts: the languages, frameworks, libraries, tools and ideas that matter for the work.
3. Files and code sections: every file read, created or changed, why it matters, and the important code \
(function signatures, short snippets) with exact paths.
4. Errors and fixes: each error met, how it was fixed, and any feedback the user gave about it.
5. Problem solving: problems solved and investigations still open.
6. All user messages: every message the user wrote (not tool results), quoted verbatim and in order. Do not \
paraphrase, shorten or skip any of them.
7. Pending tasks: work the user asked for that is not done yet.
8. Current work: what was being done right before this summary, in the most detail of all sections: the \
file names, the code, and the state it was left in.
9. Possible next step: the next step that follows directly from the most recent request and current work, \
quoting the latest messages where that makes the intent clear. If the last task was finished, say so and \
do not invent new work.

Keep exact names, paths, numbers, identifiers and error texts. Write nothing outside the two blocks.\
"""

_CUSTOM_HEADER = "Additional instructions from the user for this summary (follow them, within the structure above):"


@dataclass(frozen=True)
class SummaryPrompt:
    """The two texts of a summary request, and their shapes for each API."""

    system: str
    user: str

    def anthropic_kwargs(self, model: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": self.system,
            "messages": [{"role": "user", "content": [{"type": "text", "text": self.user}]}],
        }

    def openai_kwargs(self, model: str, max_tokens: int, max_tokens_param: str = "max_completion_tokens") -> dict[str, Any]:
        return {
            "model": model,
            max_tokens_param: max_tokens,
            "messages": [
                {"role": "system", "content": self.system},
                {"role": "user", "content": self.user},
            ],
        }

    @property
    def chars(self) -> int:
        return len(self.system) + len(self.user)


def _header(message: Message) -> str:
    if message.tag == "summary":
        return "[previous summary]"
    if message.content and all(isinstance(b, ToolResultBlock) for b in message.content):
        # Carried in a user message by the API, but not written by the user.
        return "[tool output]"
    return f"[{message.role}]"


def render_transcript(messages: Sequence[Message]) -> str:
    """History as readable text: user text verbatim, tool calls and results labelled by id."""
    names: dict[str, str] = {}
    chunks: list[str] = []
    for m in messages:
        # A boundary marks where an earlier compaction happened; it holds no conversation.
        if m.boundary is not None:
            continue
        lines: list[str] = []
        for b in m.content:
            if isinstance(b, TextBlock):
                lines.append(b.text)
            elif isinstance(b, ToolUseBlock):
                names[b.id] = b.name
                args = json.dumps(b.input, ensure_ascii=False, sort_keys=True)
                lines.append(f"[tool call {b.name} id={b.id}] {args}")
            elif isinstance(b, ToolResultBlock):
                name = names.get(b.tool_use_id, "unknown tool")
                status = " error" if b.is_error else ""
                lines.append(f"[tool result{status} for {name} id={b.tool_use_id}]\n{b.content}")
            elif isinstance(b, ImageBlock):
                lines.append(f"[image {b.media_type}, {b.size_bytes} bytes, not shown]")
            elif isinstance(b, ThinkingBlock):
                # Private reasoning; the visible text and actions carry what matters.
                continue
        if lines:
            chunks.append(_header(m) + "\n" + "\n".join(lines))
    return "\n\n".join(chunks)


def build_summary_prompt(messages: Sequence[Message], instructions: str | None = None) -> SummaryPrompt:
    """The request text: the transcript first, then what to do with it, then the user's own wishes."""
    parts = ["<transcript>", render_transcript(messages), "</transcript>", "", SUMMARY_INSTRUCTIONS]
    if instructions and instructions.strip():
        parts += ["", _CUSTOM_HEADER, instructions.strip()]
    return SummaryPrompt(system=SUMMARY_SYSTEM_PROMPT, user="\n".join(parts))


_ANALYSIS = re.compile(r"<analysis>.*?(?:</analysis>|\Z)", re.DOTALL | re.IGNORECASE)
_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL | re.IGNORECASE)


def extract_summary(text: str) -> str:
    """The content of ``<summary>``; without the tags, the text minus any ``<analysis>``.

    An unclosed ``<summary>`` (the output budget ran out) still yields what was
    written; an unclosed ``<analysis>`` swallows the rest, because what follows
    it was never meant as summary.
    """
    without_analysis = _ANALYSIS.sub("", text or "")
    found = _SUMMARY.search(without_analysis)
    summary = found.group(1) if found else without_analysis
    summary = summary.strip()
    if not summary:
        raise SummaryError("the model returned no summary text (empty answer or only an <analysis> block)")
    return summary
