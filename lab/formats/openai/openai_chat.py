"""OpenAI Chat Completions messages, and the agents that record them.

Accepted documents:

* a request body ``{"model": ..., "messages": [...], "tools": [...]}`` or a bare
  list of messages;
* a SWE-agent trajectory (``.traj``): ``{"trajectory": [...], "history":
  [...], "info": ..., "replay_config": ...}``; ``history`` holds the chat
  messages with extra keys (agent, message_type, thought, action, is_demo,
  ``tool_call_ids``), which are ignored; entries flagged ``is_demo`` (or
  ``message_type: demonstration``) are kept as plain text of their role, as
  SWE-agent sends them with every request (a warning says how many); only
  their commands are never modelled as tool calls. Trajectories of
  text-command agents have no ``tool_calls``: their commands (``action``) and
  observations are modelled as tool calls and results (see ``text_commands``);
* a mini-swe-agent trajectory (``.traj.json``): ``{"messages": [...], "info":
  ..., "instance_id": ..., "trajectory_format": "mini-swe-agent-..."}``; its
  final ``role: exit`` entry is skipped and counted. In text mode (one
  ```` ```bash ```` block a reply, answered by ``<returncode>`` messages) the
  commands and outputs are modelled as tool calls and results too. Since 2.0
  its messages may be the provider's Responses objects (``{"object":
  "response", "output": [...]}``, ``function_call_output`` items), read
  as Responses items; ``extra.cost`` is the request's cost and
  ``extra.returncode`` marks a failed command. Its top-level ``compaction``
  records (``compacted_until``, ``summary``) become boundary markers
  (strategy ``mini_swe_agent_compaction``) each followed by the summary
  message the agent sent from then on; SWE-agent's RetryAgent
  ``{"attempts": [...]}`` is read as its chosen (else last) attempt;
* JSONL with one message per line, bare or wrapped one level (see
  ``message_lines``); lines that are not messages are skipped and counted.

Mapping: ``system`` and ``developer`` -> system; ``assistant`` ``tool_calls``
(function name + JSON-string arguments; unparseable arguments are kept as
``{"_raw": text}`` and noted) and legacy ``function_call`` -> tool_use blocks;
``tool`` (``tool_call_id``) and legacy ``function`` messages -> tool_result
blocks, consecutive ones in one user message; ``image_url`` parts -> image
placeholders; ``reasoning_content`` (DeepSeek and others) -> thinking;
smolagents' ``tool-call`` and ``tool-response`` roles -> tool_use and
tool_result blocks (``smolagents``).
A text command becomes the reply's remaining text plus a tool_use
``{"command": ...}`` with id ``call_m<index>``, and the message answering it a
tool_result; a warning in ``ImportNotes`` says the shape was changed.

Detection (``sniff``), highest first; Anthropic Messages bodies also carry
``messages``, so only OpenAI-only traits score high:

* 95: a SWE-agent or mini-swe-agent trajectory;
* 90: messages with role ``tool``/``function``/``developer``, ``tool_calls``,
  ``tool_call_id`` or ``image_url`` parts, and no Anthropic block types
  (``tool_use``, ``tool_result``, ``thinking``) nor MiniCode traits;
* 60: messages with a ``system`` role (Anthropic keeps the system prompt
  outside ``messages``);
* 30: only user/assistant messages (as valid for Anthropic as for OpenAI);
* 0: anything with Anthropic blocks, Responses items or MiniCode
  ``tool_result`` roles, and records with a role but no ``content``,
  ``tool_calls``, ``function_call`` nor ``tool_call_id`` (events wrapped as
  ``{role, kind, time, raw}``).

Read with this format anyway, ``tool_use``/``tool_result`` content parts are a
``TranscriptError`` (skipping them would drop every tool pair unseen), and a
message with no payload is skipped and counted as ``empty_message``.

JSONL (and a one-line file holding one message) is scored by
``message_lines.line_scores``: 90 for Chat-only traits, 55 for plain text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from ..history_builder import opt_str, HistoryBuilder, Loc, image_from_url, need_dict, openai_usage, parse_arguments, parse_timestamp, text_block, tool_specs
from ..shell_agents import smolagents
from ..xml_tool_calls import xml_tool_calls
from ..jsonio import read_json
from ..message_lines import MessageLine, is_message_lines, iter_messages, line_scores, message_of
from ..registry import Format, FileHead
from ..text_commands import TextCommands
from ..text_commands import plan as plan_text_commands
from . import responses_items

__all__ = ["FORMAT", "MINI_COMPACTION", "read", "read_lines", "from_document", "from_messages", "sniff", "content_blocks", "content_text", "add_message", "add_responses_item"]

NAME = "openai_chat"

_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"}
# Content parts only Anthropic writes (Mistral also writes "thinking" parts, so that one is skipped).
_ANTHROPIC_TOOL_PARTS = frozenset({"tool_use", "tool_result", "server_tool_use"})
_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# What a Chat message carries besides its role; one with none of them is not a message.
_PAYLOAD = ("content", "tool_calls", "function_call", "tool_call_id")
_RESPONSES_ITEMS = {"message", "function_call", "function_call_output", "reasoning", "custom_tool_call"}


def content_blocks(content: Any, notes: ImportNotes, loc: Loc) -> list[Block]:
    """Chat ``content``: a string, null, or a list of text / image_url parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return text_block(content)
    if not isinstance(content, list):
        raise loc.error(f"content is a {type(content).__name__}", expected="a string or a list of content parts")
    blocks: list[Block] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            blocks += text_block(part)
            continue
        part = need_dict(part, loc.at(i), "content part")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks += text_block(part.get("text"))
        elif kind == "refusal":
            blocks += text_block(part.get("refusal"))
        elif kind == "image_url":
            ref = part.get("image_url")
            blocks.append(image_from_url(ref.get("url") if isinstance(ref, dict) else ref))
        elif isinstance(kind, str) and kind in _ANTHROPIC_TOOL_PARTS:  # a list as the type would not hash
            # Chat carries tools in tool_calls and tool messages: skipping these would drop every
            # tool pair of an Anthropic-shaped file without a word (a silent misread).
            raise loc.at(i).error(f"a {kind} block is Anthropic Messages content, not Chat", expected="Chat content parts (text, image_url)")
        else:
            notes.skip(f"content part:{kind if isinstance(kind, str) else 'invalid'}")
    return blocks


def content_text(content: Any, notes: ImportNotes, loc: Loc) -> str:
    """Content flattened to text, for tool results (images become a marker)."""
    parts: list[str] = []
    for b in content_blocks(content, notes, loc):
        if isinstance(b, TextBlock):
            parts.append(b.text)
        else:
            parts.append("[image]")
    return "\n".join(parts)


def _tool_call(tc: Any, b: HistoryBuilder, loc: Loc, key: str) -> Block:
    tc = need_dict(tc, loc, "tool call")
    kind = tc.get("type", "function")
    if kind == "custom" and isinstance(tc.get("custom"), dict):
        name, raw_input = tc["custom"].get("name"), tc["custom"].get("input")
        if not isinstance(name, str):
            raise loc.at("custom").error("custom tool call without a name", expected="a string 'name'")
        return b.use(opt_str(tc.get("id")), name, {"input": raw_input if isinstance(raw_input, str) else ""}, key=key)
    fn = tc.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise loc.error("tool call without a function name", expected="'function': {'name': ..., 'arguments': ...}")
    args = parse_arguments(fn.get("arguments"), b.notes, loc.at("function").at("arguments"))
    return b.use(opt_str(tc.get("id")), fn["name"], args, key=key)


def _text_call_id(b: HistoryBuilder, index: int) -> str:
    # The id HistoryBuilder.use derives for a call without one, named here so its answer can point at it.
    return f"call_{b.id_prefix}m{index}"


def add_message(b: HistoryBuilder, m: Any, loc: Loc, key: str, timestamp: datetime | None = None) -> None:
    """Append one Chat Completions message to ``b`` (another importer's builder too), its ids derived from ``key``."""
    _message(b, m, loc, 0, timestamp, key=key)


def add_responses_item(b: HistoryBuilder, item: Any, loc: Loc, key: str, stamp: datetime | None = None) -> None:
    """Append one Responses item to ``b`` (``responses_items.add_item``), a Chat message among them read by ``add_message``."""
    responses_items.add_item(b, item, loc, key, stamp, chat=add_message)


def _message(
    b: HistoryBuilder, m: Any, loc: Loc, index: int, timestamp: datetime | None = None, commands: TextCommands | None = None, key: str | None = None
) -> None:
    m = need_dict(m, loc, "message")
    notes = b.notes
    role = m.get("role")
    if role is None and (m.get("object") == "response" or isinstance(m.get("type"), str)):
        # mini-swe-agent 2 on the Responses API keeps the provider's own objects in its history.
        _responses_entry(b, m, loc, key if key is not None else f"m{index}", timestamp)
        return
    if not isinstance(role, str):
        raise loc.error("message without a role", expected="a string 'role'")
    if role in _CHAT_ROLES and not any(k in m for k in _PAYLOAD) and not m.get("reasoning_content"):
        # A role and nothing else (an event wrapped as {role, kind, time, raw}): counted, not kept.
        notes.skip("empty_message")
        return
    key = key if key is not None else f"m{index}"
    extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
    # "ts": saved histories such as Roo Code's (epoch milliseconds); "created_at": several home-made logs.
    stamp = parse_timestamp(m.get("timestamp") or m.get("ts") or m.get("created_at") or extra.get("timestamp")) or timestamp
    if role in ("system", "developer"):
        b.add("system", content_blocks(m.get("content"), notes, loc.at("content")), key=key, timestamp=stamp)
    elif role == "user":
        answer = commands.answers.get(index) if commands is not None else None
        if answer is not None:
            output = content_text(m.get("content"), notes, loc.at("content"))
            b.result(_text_call_id(b, answer.call), output, key=key, is_error=answer.is_error, timestamp=stamp)
        else:
            b.add("user", content_blocks(m.get("content"), notes, loc.at("content")), key=key, timestamp=stamp)
    elif role == "assistant":
        _assistant(b, m, loc, key, stamp, index, commands)
    elif role == "tool":
        _tool(b, m, loc, key, stamp)
    elif role == "function":
        _function(b, m, loc, key, stamp)
    elif role == smolagents.TOOL_CALL:
        smolagents.add_tool_call(b, content_text(m.get("content"), notes, loc.at("content")), key, stamp)
    elif role == smolagents.TOOL_RESPONSE:
        smolagents.add_tool_response(b, content_text(m.get("content"), notes, loc.at("content")), key, stamp)
    else:
        notes.skip(f"role:{role}")


def _assistant(b: HistoryBuilder, m: dict[str, Any], loc: Loc, key: str, stamp: datetime | None, index: int, commands: TextCommands | None) -> None:
    """An assistant message: reasoning, then its text (or the text command it runs), then its tool calls."""
    notes = b.notes
    thinking = m.get("thinking_blocks")
    if thinking and "message_type" in m and m.get("tool_calls") is None:
        # SWE-agent sends a reply's thinking blocks back only with its tool calls (its text parsers drop them).
        notes.skip("thinking block:not sent", len(thinking) if isinstance(thinking, list) else 1)
        thinking = None
    blocks: list[Block] = _thinking(thinking, notes)
    reasoning = m.get("reasoning_content")
    # LiteLLM writes an Anthropic reply's thinking twice: as text and as signed blocks; the blocks win.
    if isinstance(reasoning, str) and reasoning and not blocks:
        blocks.append(ThinkingBlock(thinking=reasoning))
    call = commands.calls.get(index) if commands is not None else None
    if call is None:
        blocks += content_blocks(m.get("content"), notes, loc.at("content"))
    else:
        blocks += text_block(call.text)
        blocks.append(b.use(_text_call_id(b, index), call.name, {"command": call.command}, key=key))
    calls = m.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise loc.at("tool_calls").error("tool_calls is not a list", expected="a list of tool calls")
    for i, tc in enumerate(calls or []):
        blocks.append(_tool_call(tc, b, loc.at("tool_calls").at(i), f"{key}.{i}"))
    fc = m.get("function_call")
    if isinstance(fc, dict):
        if not isinstance(fc.get("name"), str):
            raise loc.at("function_call").error("function_call without a name", expected="a string 'name'")
        args = parse_arguments(fc.get("arguments"), notes, loc.at("function_call").at("arguments"))
        blocks.append(b.use(None, fc["name"], args, key=f"{key}.fc"))
    extra: dict[str, Any] = m["extra"] if isinstance(m.get("extra"), dict) else {}
    response = extra.get("response")
    if not isinstance(response, dict):
        response = {}
    usage = _with_cost(openai_usage(m.get("usage") or response.get("usage")), extra)
    b.add("assistant", blocks, key=key, timestamp=stamp, usage=usage)


def _thinking(raw: Any, notes: ImportNotes) -> list[Block]:
    """LiteLLM's ``thinking_blocks`` (SWE-agent keeps them in its history and sends them back): signed thinking."""
    blocks: list[Block] = []
    for tb in raw if isinstance(raw, list) else []:
        kind = tb.get("type") if isinstance(tb, dict) else None
        if kind == "thinking" and isinstance(tb.get("thinking"), str) and tb["thinking"]:
            blocks.append(ThinkingBlock(thinking=tb["thinking"], signature=opt_str(tb.get("signature"))))
        else:
            # Redacted thinking carries only ciphertext, which no block of the lab holds.
            notes.skip(f"thinking block:{kind if isinstance(kind, str) else 'invalid'}")
    return blocks


def _with_cost(usage: Usage | None, extra: dict[str, Any]) -> Usage | None:
    """``usage`` with the request's cost as mini-swe-agent 2 recorded it (``extra.cost``, US dollars)."""
    cost = extra.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0:
        return usage
    if usage is None:
        return Usage(cost_usd=float(cost))
    return usage.model_copy(update={"cost_usd": float(cost)})


def _failed(extra: dict[str, Any]) -> bool:
    """Whether mini-swe-agent 2 recorded a non-zero exit code for the command an observation answers."""
    code = extra.get("returncode")
    return code is not None and code not in (0, "0")


def _responses_entry(b: HistoryBuilder, m: dict[str, Any], loc: Loc, key: str, timestamp: datetime | None) -> None:
    """A Responses object (one model reply, its output items) or item (a call's output) in a mini-swe-agent 2 history."""
    extra: dict[str, Any] = m["extra"] if isinstance(m.get("extra"), dict) else {}
    # A response object carries the provider's created_at (epoch seconds); mini-swe-agent adds its own timestamp.
    stamp = parse_timestamp(extra.get("timestamp") or m.get("created_at")) or timestamp
    if m.get("type") == "function_call_output" and isinstance(m.get("call_id"), str):
        # The output is the observation template's text; the exit code sits beside it.
        text = content_text(m.get("output"), b.notes, loc.at("output"))
        b.result(m["call_id"], text, key=key, is_error=_failed(extra), timestamp=stamp)
        return
    if m.get("object") != "response":
        add_responses_item(b, m, loc, key, stamp)
        return
    output = m.get("output")
    if not isinstance(output, list):
        raise loc.at("output").error("response without an output list", expected="a list of Responses output items")
    before = len(b.messages)
    for i, item in enumerate(output):
        add_responses_item(b, item, loc.at("output").at(i), f"{key}.{i}", stamp)
    usage = _with_cost(openai_usage(m.get("usage")), extra)
    last = b.messages[-1] if len(b.messages) > before else None
    if usage is not None and last is not None and last.role == "assistant":
        b.messages[-1] = last.model_copy(update={"usage": usage})


def _tool(b: HistoryBuilder, m: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    """A ``tool`` message: the result of the call it names (or of the only pending one)."""
    notes = b.notes
    call_id = opt_str(m.get("tool_call_id"))
    ids = m.get("tool_call_ids")
    if call_id is None and isinstance(ids, list) and ids:
        call_id = opt_str(ids[0])
        if len(ids) > 1:
            notes.warnings.append(f"{loc.where}: one tool message answers {len(ids)} calls; paired with the first")
    text = content_text(m.get("content"), notes, loc.at("content"))
    failed = _failed(m["extra"]) if isinstance(m.get("extra"), dict) else False
    if call_id is None:
        pending = b.pending()
        if len(pending) != 1:
            raise loc.error("tool message without tool_call_id", expected="a 'tool_call_id' naming an earlier tool call")
        notes.warnings.append(f"{loc.where}: tool message without tool_call_id paired with the only pending call")
        b.result(pending[0][0], text, key=key, is_error=failed, timestamp=stamp, canonical=True)
    else:
        b.result(call_id, text, key=key, is_error=failed, timestamp=stamp)


def _function(b: HistoryBuilder, m: dict[str, Any], loc: Loc, key: str, stamp: datetime | None) -> None:
    """A legacy ``function`` message: it has no ids, so it answers the newest pending call of that name."""
    name = m.get("name")
    text = content_text(m.get("content"), b.notes, loc.at("content"))
    match = [cid for cid, n in b.pending() if n == name] or [cid for cid, _ in b.pending()]
    if match:
        b.result(match[-1], text, key=key, timestamp=stamp, canonical=True)
    else:
        b.result(f"call_{key}", text, key=key, timestamp=stamp, canonical=True)


MINI_COMPACTION = "mini_swe_agent_compaction"
# mini-swe-agent's reasons for a compaction, as the lab's triggers.
_MINI_TRIGGERS = {"auto": "auto", "overflow": "reactive"}


def _compactions(raw: Any, n: int, notes: ImportNotes) -> dict[int, list[dict[str, Any]]]:
    """mini-swe-agent's compaction records by the message index each one's kept history starts at.

    Its history stays whole; once compacted, it sends the system message, a summary user message and
    ``messages[compacted_until:]``. A record that names no index inside the history is counted, not placed.
    """
    records = raw.get("records") if isinstance(raw, dict) else None
    placed: dict[int, list[dict[str, Any]]] = {}
    for r in records if isinstance(records, list) else []:
        at = r.get("compacted_until") if isinstance(r, dict) else None
        if isinstance(at, int) and not isinstance(at, bool) and 1 <= at <= n and isinstance(r.get("summary"), str):
            placed.setdefault(at, []).append(r)
        else:
            notes.skip("compaction record:invalid")
    return placed


def _compaction(b: HistoryBuilder, r: dict[str, Any], key: str, removed: int) -> None:
    """A recorded compaction: its boundary marker, then the summary message the agent sent from then on."""
    stamp = parse_timestamp(r.get("timestamp"))
    reason = r.get("reason")
    trigger: Any = _MINI_TRIGGERS.get(reason, "import") if isinstance(reason, str) else "import"
    tokens = [v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for v in (r.get("estimated_tokens_before"), r.get("estimated_tokens_after"))]
    boundary = Boundary(trigger=trigger, strategy=MINI_COMPACTION, timestamp=stamp, tokens_before=tokens[0], tokens_after=tokens[1], messages_removed=removed)
    # The wording mini-swe-agent wraps its checkpoint in (compaction.summary_message).
    summary = f"<conversation_summary>\n{r['summary']}\n</conversation_summary>\nContinue from this checkpoint."
    b.compaction(boundary, None, summary, key=key, timestamp=stamp)


def from_messages(
    messages: list[Any], *, file: str | None = None, path: str = "$", id_prefix: str = "", compaction: Any = None
) -> Transcript:
    """Convert a list of Chat messages found at JSON ``path`` in ``file``.

    ``compaction``: a mini-swe-agent trajectory's ``compaction`` object; each record becomes a boundary.
    """
    notes = ImportNotes()
    b = HistoryBuilder(notes, id_prefix=id_prefix)
    base = Loc(file, path)
    compactions = _compactions(compaction, len(messages), notes) if compaction is not None else {}
    start = 1
    commands = plan_text_commands(messages)
    if commands is not None:
        notes.warnings.append(commands.warning)
    demos = sum(1 for m in messages if isinstance(m, dict) and (m.get("is_demo") is True or m.get("message_type") == "demonstration"))
    if demos:
        # They are part of every prompt SWE-agent sends: dropping them would understate each request's input.
        notes.warnings.append(f"{demos} demonstration entries kept as plain text (the agent sends them with every request)")
    for i, m in enumerate(messages):
        for k, r in enumerate(compactions.get(i, [])):
            _compaction(b, r, f"m{i}.c{k}", i - start)
            start = i
        _message(b, m, base.at(i), i, commands=commands)
    for k, r in enumerate(compactions.get(len(messages), [])):
        _compaction(b, r, f"end.c{k}", len(messages) - start)
        start = len(messages)
    notes.records_read = len(messages)
    # A text-only list may be Cline's history, its tool calls written as XML (which both APIs' shapes can hold).
    return Transcript(meta=TranscriptMeta(source_format=NAME, source_path=file), messages=xml_tool_calls(b.finish()), notes=notes)


def _from_lines(lines: Iterable[MessageLine], notes: ImportNotes, file: str | None) -> Transcript:
    b = HistoryBuilder(notes)
    model: str | None = None
    for index, line in enumerate(lines):
        _message(b, line.message, Loc(file, line.path, line=line.line), index, line.timestamp)
        if model is None and isinstance(line.message.get("model"), str):
            model = line.message["model"]
    meta = TranscriptMeta(source_format=NAME, source_path=file, model=model)
    return Transcript(meta=meta, messages=b.finish(), notes=notes)


def read_lines(path: Path) -> Transcript:
    """Import a JSONL file of Chat messages, one per line (bare or wrapped one level)."""
    notes = ImportNotes()
    return _from_lines(iter_messages(path, notes), notes, str(path))


def _dig(value: Any, *keys: str) -> Any:
    for k in keys:
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        if not isinstance(value, dict):
            return None
        value = value.get(k)
    return value


def _attempt(doc: Any) -> tuple[int | None, list[Any]]:
    """SWE-agent's RetryAgent writes ``{"attempts": [trajectory, ...]}`` (and, once it has chosen, the best
    attempt's keys beside it): the index of the last attempt holding a history, and the attempts."""
    attempts = doc.get("attempts") if isinstance(doc, dict) else None
    if not isinstance(attempts, list):
        return None, []
    found = [i for i, a in enumerate(attempts) if isinstance(a, dict) and isinstance(a.get("history"), list)]
    return (found[-1] if found else None), attempts


def from_document(doc: Any, *, file: str | None = None) -> Transcript:
    """Import a parsed document of any shape this module accepts."""
    title = None
    attempt, attempts = _attempt(doc)
    if isinstance(doc, list):
        messages, path = doc, "$"
    elif isinstance(doc, dict) and isinstance(doc.get("history"), list):
        messages, path, title = doc["history"], "$.history", "SWE-agent trajectory"
    elif attempt is not None:
        doc, messages, path, title = attempts[attempt], attempts[attempt]["history"], f"$.attempts[{attempt}].history", "SWE-agent trajectory"
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        messages, path = doc["messages"], "$.messages"
        if str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or _dig(doc, "info", "mini_version"):
            title = "mini-swe-agent trajectory"
    elif (hit := message_of(doc)) is not None:
        # A message log that has a single line so far.
        where, message, stamp = hit
        notes = ImportNotes(records_read=1)
        return _from_lines([MessageLine(1, where, message, parse_timestamp(stamp))], notes, file)
    else:
        raise TranscriptError(
            "no chat messages found", file=file, where="$", expected="a list of messages or an object with 'messages' or 'history'"
        )
    t = from_messages(messages, file=file, path=path, compaction=doc.get("compaction") if isinstance(doc, dict) and title else None)
    if len(attempts) > 1:
        # A retry agent's run: each attempt is a whole history of its own; one is read.
        read_one = "the chosen one" if path == "$.history" else f"attempt {attempt}, the last so far"
        t.notes.warnings.append(f"the trajectory holds {len(attempts)} attempts of a retry agent; {read_one} was read")
    if isinstance(doc, dict):
        model = doc.get("model")
        if not isinstance(model, str):
            model = _dig(doc, "info", "config", "model", "model_name") or _dig(doc, "replay_config", "agent", "model", "name")
        instance = doc.get("instance_id") or _dig(doc, "replay_config", "problem_statement", "id")
        t.meta.model = model if isinstance(model, str) else None
        t.meta.session_id = instance if isinstance(instance, str) else None
        t.meta.title = f"{title}: {instance}" if title and isinstance(instance, str) else title
        t.tools = tool_specs(doc.get("tools")) or tool_specs(doc.get("functions"))
    return t


def read(path: Path) -> Transcript:
    if is_message_lines(path):
        return read_lines(path)
    return from_document(read_json(path), file=str(path))


# -- detection -------------------------------------------------------------------

_HEAD_TRAJ = re.compile(r'"trajectory"\s*:\s*\[')
_HEAD_SWE_KEYS = re.compile(r'"(?:thought|action|observation|history)"\s*:')
_HEAD_MINI = re.compile(r'"trajectory_format"\s*:\s*"mini-swe-agent|"mini_version"\s*:')
_HEAD_MESSAGES = re.compile(r'^\s*(?:\[\s*\{\s*"role"|\{)|"messages"\s*:\s*\[')
_HEAD_OPENAI = re.compile(r'"role"\s*:\s*"(?:tool|function|developer)"|"tool_calls"\s*:\s*\[|"tool_call_id"\s*:|"image_url"\s*:')
_HEAD_FOREIGN = re.compile(
    r'"type"\s*:\s*"(?:tool_use|tool_result|thinking|function_call|function_call_output|input_text|output_text)"'
    r'|"role"\s*:\s*"tool_result"|"_compact_boundary"|"payload"\s*:|"observation"\s*:\s*"'
)
_HEAD_SYSTEM = re.compile(r'"role"\s*:\s*"system"')
_HEAD_ROLE = re.compile(r'"role"\s*:\s*"(?:user|assistant)"')


def _score_messages(messages: list[Any]) -> int:
    if not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        return 0
    openai = system = False
    for m in messages:
        role = m["role"]
        if "raw" in m or not any(k in m for k in _PAYLOAD):
            return 0  # wrapped events ({role, kind, time, raw}) have a role but no message payload
        if role == "tool_result" or "_compact_boundary" in m or (isinstance(m.get("type"), str) and m["type"] in _RESPONSES_ITEMS):
            return 0
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], dict) and "function" not in calls[0]:
            return 0  # MiniCode's flat {id, name, input} calls
        content = m.get("content")
        if isinstance(content, list):
            kinds = {p["type"] for p in content if isinstance(p, dict) and isinstance(p.get("type"), str)}
            if kinds & _ANTHROPIC_BLOCKS or kinds & {"input_text", "output_text"}:
                return 0
            openai = openai or "image_url" in kinds
        openai = openai or role in ("tool", "function", "developer") or bool(calls) or "tool_call_id" in m
        openai = openai or isinstance(m.get("function_call"), dict)
        system = system or role == "system"
    return 90 if openai else 60 if system else 30


def sniff(probe: FileHead) -> int:
    if probe.shape == "jsonl":
        return line_scores(probe.records)[NAME]
    doc = probe.document
    if probe.records and message_of(doc) is not None:
        return line_scores(probe.records)[NAME]
    if doc is not None:
        if isinstance(doc, dict):
            if isinstance(doc.get("history"), list) and "trajectory" in doc:
                return 95
            if (found := _attempt(doc)[0]) is not None and "trajectory" in doc["attempts"][found]:
                return 95
            if str(doc.get("trajectory_format", "")).startswith("mini-swe-agent"):
                return 95
            if "input" in doc and "messages" not in doc:
                return 0
            messages = doc.get("messages")
        else:
            messages = doc
        return _score_messages(messages) if isinstance(messages, list) else 0
    head = probe.head
    if _HEAD_TRAJ.search(head[:4000]) and _HEAD_SWE_KEYS.search(head):
        return 95
    if _HEAD_MINI.search(head):
        return 95
    if not _HEAD_MESSAGES.search(head) or _HEAD_FOREIGN.search(head):
        return 0
    if _HEAD_OPENAI.search(head):
        return 90
    if _HEAD_SYSTEM.search(head):
        return 60
    return 30 if _HEAD_ROLE.search(head) else 0


FORMAT = Format(
    name=NAME,
    description="OpenAI Chat Completions messages (also SWE-agent .traj, mini-swe-agent .traj.json, one message per JSONL line)",
    sniff=sniff,
    read=read,
    rivals="request_bodies",
)
