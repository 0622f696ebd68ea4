"""Importers and exporters for the transcript formats agent builders have.

``load(path)`` detects the format and imports a file into the canonical
``Transcript``; ``dump(transcript, to=...)`` turns one into the lab's own JSON
or a provider request body. Importing this package registers every format:

    lab              the lab's own JSON (lossless)
    claude_code      Claude Code session JSONL
    anthropic        Anthropic Messages request bodies, request/response logs, message-per-line JSONL
    openai_chat      OpenAI chat completions, trajectories built on them, message-per-line JSONL
    openai_responses OpenAI Responses API and Codex CLI rollouts
    openhands        OpenHands event histories
    openhands_v1     OpenHands V1 conversations (software-agent-sdk events)
    minicode         MiniCode sessions
    gemini           Gemini API contents (REST bodies, google-genai dumps), Gemini CLI chat recordings and saved chats
    langchain        LangChain / LangGraph messages (messages_to_dict, dumpd, LangGraph state, message-per-line JSONL)
    managed_agents   Claude Managed Agents session events (list, JSONL, {data: [...]} page; bare or wrapped)
    claude_agent_sdk Claude Agent SDK sessions (claude -p stream-json, SDK message lists, dataclass dumps)
    http_log         HTTP logs of model requests (claude-trace .claude-trace/log-*.jsonl, proxy dumps; Anthropic, Chat, Responses)
    aider            Aider chat history (.aider.chat.history.md) and LLM log (.aider.llm.history)
    cline            Cline / Roo Code task folders (ui_messages.json, api_conversation_history.json)
    opencode         OpenCode sessions (opencode export, the messages API's {info, parts} list)
    goose            Goose sessions (session JSONL, goose session export JSON)
    goose_db         Goose session database (sessions.db; one session, the newest or by id)
    continue         Continue sessions (~/.continue/sessions/<sessionId>.json, IDE extensions and cn)
    copilot_chat     GitHub Copilot Chat sessions of VS Code (chatSessions/<sessionId>.json, and the .jsonl mutation log of 1.109+)
    cursor           Cursor chat and agent sessions (state.vscdb: composers, workspace chat tabs; one session, the newest or by id)
    zed              Zed agent threads (threads.db: agent-1 and agent2 threads, zstd or JSON rows; one thread, the newest or by id)
    crush            Crush / Go OpenCode session database (.crush/crush.db, .opencode/opencode.db; one session, the newest top-level or by id)
    qwen_code        Qwen Code chat records (~/.qwen/projects/<project>/chats/<sessionId>.jsonl)
    copilot_cli      GitHub Copilot CLI session events (~/.copilot/session-state/<sessionId>/events.jsonl)
    pydantic_ai      Pydantic AI message histories (all_messages_json, ModelMessagesTypeAdapter)
    autogen          AutoGen AgentChat saved state (agent, team) and message lists
    agents_sdk_db    OpenAI Agents SDK SQLiteSession database (one session, the newest or by id)
    block_lines      Flat block-per-line exports ({timestamp, role, content: {type, ...}}), blocks joined into messages

``sessions(path)`` lists the sessions of a file or folder that holds several (Goose's
sessions.db, OpenCode storage, an aider chat history, an OpenHands output.jsonl, the
conversations of an HTTP log, Cursor's state.vscdb, Zed's threads.db, Crush's crush.db);
a file of one session lists as that session, followed by its subagent threads (a Claude
Code file's sidechains). ``load(path, session=ID)`` reads any of them (``session_choice``).

Each format is a ``Format`` value in one registry (``lab.formats.registry``): the lab's
own formats above, then any a plugin package declares in the ``lab.formats`` entry-point
group. Archives, compressed files and folders of sessions are the registry's ``Wrapper``s.
When several formats claim a file, the most specific wins (``Format.more_specific_than``).

Whatever the input, a file that cannot be imported raises ``TranscriptError``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from ..atomic import write_text_atomic
from ..core.messages import Transcript
from ..errors import ConfigError, TranscriptError
from . import labjson, registry
from .detect import detect
from .export import to_anthropic, to_openai, to_responses
from .loading import load, read_session, sessions
from .registry import FORMATS, WRAPPERS, FileHead, Format, SessionInfo, SessionSource, Wrapper

__all__ = [
    "load", "dump", "detect", "sessions", "read_session", "SessionInfo", "SessionSource", "to_anthropic", "to_openai", "to_responses", "FORMATS", "WRAPPERS",
    "Format", "Wrapper", "FileHead", "DumpTarget",
]  # fmt: skip

DumpTarget = Literal["lab", "anthropic", "openai", "responses"]

# The registry is filled once, when the package is first imported: the lab's formats, then the plugins'.
registry.load_builtins()
registry.load_plugins()


def dump(transcript: Transcript, to: DumpTarget = "lab", path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The transcript as lab JSON or a provider request body; also written to ``path`` when given."""
    if to == "lab":
        data = labjson.to_dict(transcript)
    elif to == "anthropic":
        data = to_anthropic(transcript)
    elif to == "openai":
        data = to_openai(transcript)
    elif to == "responses":
        data = to_responses(transcript)
    else:
        raise ConfigError(f"dump target must be 'lab', 'anthropic', 'openai' or 'responses', got {to!r}")
    if path is not None:
        target = Path(path)
        try:
            write_text_atomic(target, json.dumps(data, ensure_ascii=False, indent=1))
        except OSError as exc:
            raise TranscriptError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    return data
