"""Agents that run commands through text: their observations are tool output.

SWE-agent with its text parsers and mini-swe-agent in its default text mode
never use function calling. The assistant writes a command in its reply and
the agent answers with the command's output in the next ``user`` message.
Imported as plain text, such a history has no tool results, and no
compaction stage has anything to act on. ``plan`` finds these histories and
says which messages are commands and which answer them. ``openai_chat`` then
builds tool_use and tool_result blocks from that plan.

The two shapes recognised:

* **SWE-agent**: assistant entries with a non-empty string ``action`` (the
  command its parser took from the reply) and its ``thought`` (the rest of
  the reply). The user entry right after it (``message_type`` absent or
  ``observation``) is the observation. SWE-agent's own function-calling mode
  names each tool after the special command it runs (``open``, ``edit``,
  ``submit``) and calls every plain shell command ``bash``. Its system prompt
  documents the special commands (``name:`` then an indented ``docstring:``
  or ``signature:``), so a command is named after its first word when that
  word is documented there and ``bash`` otherwise. When no documentation is
  found, the first word itself is the name.
* **mini-swe-agent**: assistant messages with exactly one ```` ```bash ````
  block (```` ```mswea_bash_command ```` since 2.0, or a
  ``<mswea_bash_command>`` tag in its XML configs; with any other action
  regex, the one command 2.0 records in ``extra.actions``), answered by a user
  message holding ``<returncode>N</returncode>``. A non-zero or missing code
  marks an error. Once a history has such a pair, its timeout notices ("The
  last command <command>...</command> timed out") answer commands too, as
  errors. The tool is ``bash``.

Detection is conservative. A history with any native tool call (``tool_calls``,
``function_call``, ``tool`` or ``function`` roles, Responses objects or
``function_call_output`` items) is left alone. A command is
modelled only when the next kept entry answers it, or when nothing follows it
(the final ``submit``, whose output trajectories keep elsewhere). So no
unanswered call is created in mid-history. Demonstrations (``is_demo``) stay
plain text: their commands were never run in this session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .history_builder import parts_text

__all__ = ["SWE_AGENT", "MINI_SWE_AGENT", "TextCall", "TextAnswer", "TextCommands", "plan"]

SWE_AGENT = "SWE-agent"
MINI_SWE_AGENT = "mini-swe-agent"

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# What a provider accepts as a tool name; anything else falls back to "bash".
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_DOCUMENTED = re.compile(r"^([A-Za-z_][\w-]*):[ \t]*\n[ \t]+(?:docstring|signature):", re.M)
# SWE-agent's thought-action parser takes the last fenced block of the reply.
_FENCE = re.compile(r"^```\S*[ \t]*\n(.*?)\n?^```[ \t]*$", re.M | re.S)
_RETURNCODE = re.compile(r"<returncode>\s*([^<]*?)\s*</returncode>")
# mini-swe-agent 2's XML configs (swebench_xml.yaml) tag the command instead of fencing it.
_XML_ACTION = re.compile(r"<mswea_bash_command>(.*?)</mswea_bash_command>", re.S)
_TIMEOUT = re.compile(r"^\s*The last command <command>.*?</command> timed out", re.S)


@dataclass(frozen=True)
class TextCall:
    """An assistant message that ran a command: its remaining text, the tool name and the command."""

    name: str
    command: str
    text: str


@dataclass(frozen=True)
class TextAnswer:
    """A user message answering the command at raw index ``call``."""

    call: int
    is_error: bool


@dataclass(frozen=True)
class TextCommands:
    """Which raw messages (by index in the source list) are commands and which answer them."""

    agent: str
    calls: dict[int, TextCall]
    answers: dict[int, TextAnswer]

    @property
    def warning(self) -> str:
        names: dict[str, int] = {}
        for c in self.calls.values():
            names[c.name] = names.get(c.name, 0) + 1
        listed = ", ".join(f"{n} {k}" for k, n in sorted(names.items(), key=lambda kv: (-kv[1], kv[0])))
        return (
            f"{self.agent} ran its commands as text, not as function calls: {len(self.calls)} commands ({listed}) "
            f"were modelled as tool calls and the {len(self.answers)} messages answering them as tool results, "
            "so requests built from this transcript differ in shape from what the agent sent"
        )


def _kept(m: Any) -> bool:
    """Whether this entry can run or answer a command (demonstrations stay text; foreign roles are skipped)."""
    return (
        isinstance(m, dict)
        and isinstance(m.get("role"), str)
        and m["role"] in _CHAT_ROLES
        and m.get("is_demo") is not True
        and m.get("message_type") != "demonstration"
    )


def _native(messages: Sequence[Any]) -> bool:
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("tool_calls") or isinstance(m.get("function_call"), dict) or m.get("role") in ("tool", "function"):
            return True
        if m.get("object") == "response" or m.get("type") == "function_call_output":
            return True  # mini-swe-agent 2 on the Responses API: its calls are function_call items
    return False


def plan(messages: Sequence[Any]) -> TextCommands | None:
    """The text commands of a raw Chat message list, or None when it is not a text-command history."""
    if _native(messages):
        return None
    kept = [i for i, m in enumerate(messages) if _kept(m)]
    following = {i: (kept[k + 1] if k + 1 < len(kept) else None) for k, i in enumerate(kept)}
    actions = {i: a for i in kept if messages[i]["role"] == "assistant" and (a := _action(messages[i])) is not None}
    if actions:
        return _swe_agent(messages, kept, actions, following)
    return _mini_swe_agent(messages, kept, following)


# -- SWE-agent ---------------------------------------------------------------------


def _action(m: dict[str, Any]) -> str | None:
    action = m.get("action")
    return action.strip() if isinstance(action, str) and action.strip() else None


def _documented_commands(messages: Sequence[Any], kept: list[int]) -> frozenset[str]:
    names: set[str] = set()
    for i in kept:
        if messages[i]["role"] in ("system", "developer"):
            names.update(_DOCUMENTED.findall(parts_text(messages[i].get("content"))))
    return frozenset(names)


def _swe_name(command: str, documented: frozenset[str]) -> str:
    first = command.split(None, 1)[0]
    if documented:
        return first if first in documented else "bash"
    return first if _TOOL_NAME.fullmatch(first) else "bash"


def _swe_text(m: dict[str, Any], command: str) -> str:
    thought = m.get("thought")
    if isinstance(thought, str):
        text = thought.strip()
    else:
        content = parts_text(m.get("content"))
        blocks = [b for b in _FENCE.finditer(content) if b.group(1).strip() == command]
        text = (content[: blocks[-1].start()] + content[blocks[-1].end() :]).strip() if blocks else content.strip()
    # Parsers that take the whole reply as the command (SWE-agent's identity parser) leave no thought of their own.
    return "" if text == command else text


def _swe_agent(messages: Sequence[Any], kept: list[int], actions: dict[int, str], following: dict[int, int | None]) -> TextCommands | None:
    documented = _documented_commands(messages, kept)
    calls: dict[int, TextCall] = {}
    answers: dict[int, TextAnswer] = {}
    for i, command in actions.items():
        m = messages[i]
        nxt = following[i]
        if nxt is not None:
            answer = messages[nxt]
            if answer["role"] != "user" or answer.get("message_type") not in (None, "observation"):
                continue
            answers[nxt] = TextAnswer(call=i, is_error=False)
        calls[i] = TextCall(name=_swe_name(command, documented), command=command, text=_swe_text(m, command))
    return TextCommands(SWE_AGENT, calls, answers) if calls else None


# -- mini-swe-agent ----------------------------------------------------------------


def _mini_answer(m: dict[str, Any]) -> tuple[bool, bool] | None:
    """(is_error, has a return code) for a user message answering a command, None if it does not look like one."""
    if m["role"] != "user":
        return None
    text = parts_text(m.get("content"))
    code = _RETURNCODE.search(text)
    if code is not None:
        return code.group(1) != "0", True
    extra = m.get("extra")
    # mini-swe-agent 2 also records the code beside the rendered text.
    if isinstance(extra, dict) and "returncode" in extra:
        return extra["returncode"] not in (0, "0"), True
    if _TIMEOUT.match(text):
        return True, False
    return None


def _parsed_action(m: dict[str, Any]) -> str | None:
    """The one command mini-swe-agent 2 parsed from a reply (``extra.actions``), whatever its action regex."""
    extra = m.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], dict):
        return None
    command = actions[0].get("command")
    return command.strip() if isinstance(command, str) and command.strip() and "tool_call_id" not in actions[0] else None


def _mini_command(content: str, block: re.Pattern[str], parsed: str | None) -> tuple[str, str] | None:
    """(command, remaining text) of a reply: its one fenced or tagged block, else the command the agent parsed."""
    for pattern in (block, _XML_ACTION):
        found = list(pattern.finditer(content))
        if len(found) == 1 and found[0].group(1).strip():
            return found[0].group(1).strip(), (content[: found[0].start()] + content[found[0].end() :]).strip()
        if found:
            return None  # several blocks: a format error, whatever the agent parsed
    if parsed is None:
        return None
    # An action regex of the run's own config: the command is known, the markup around it is not.
    at = content.find(parsed)
    rest = (content[:at] + content[at + len(parsed) :]) if at >= 0 else content
    return parsed, rest.strip()


def _reply_text(content: Any) -> str | None:
    # A reply saved as text parts reads like one saved as a string.
    return content if isinstance(content, str) else parts_text(content) if isinstance(content, list) else None


def _mini_swe_agent(messages: Sequence[Any], kept: list[int], following: dict[int, int | None]) -> TextCommands | None:
    texts = {i: _reply_text(messages[i].get("content")) for i in kept if messages[i]["role"] == "assistant"}
    fence = "mswea_bash_command" if any(isinstance(t, str) and "```mswea_bash_command" in t for t in texts.values()) else "bash"
    block = re.compile(rf"```{fence}\s*\n(.*?)\n```", re.S)
    calls: dict[int, TextCall] = {}
    answers: dict[int, TextAnswer] = {}
    confirmed = False
    for i, content in texts.items():
        if content is None:
            continue
        found = _mini_command(content, block, _parsed_action(messages[i]))
        if found is None:
            continue
        nxt = following[i]
        if nxt is not None:
            answer = _mini_answer(messages[nxt])
            if answer is None:
                continue
            is_error, has_code = answer
            confirmed = confirmed or has_code
            answers[nxt] = TextAnswer(call=i, is_error=is_error)
        command, text = found
        calls[i] = TextCall(name="bash", command=command, text=text)
    # Bash blocks alone are common in chat; only a <returncode> answer shows an agent ran them.
    return TextCommands(MINI_SWE_AGENT, calls, answers) if confirmed else None
