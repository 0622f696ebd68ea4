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

Whatever the input, a file that cannot be imported raises ``TranscriptError``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..atomic import write_text_atomic
from ..core.messages import Transcript
from ..errors import ConfigError, TranscriptError
from . import anthropic, claude_code, labjson, minicode, openai_chat, openai_responses, openhands, openhands_v1  # noqa: F401  (they register)
from . import gemini  # noqa: F401  (registers; after the others, so ties keep their order)
from . import langchain  # noqa: F401  (registers)
from . import managed_agents  # noqa: F401  (registers)
from . import agent_sdk  # noqa: F401  (registers)
from . import http_log  # noqa: F401  (registers)
from . import aider, cline  # noqa: F401  (register)
from . import opencode, goose  # noqa: F401  (register)
from . import opencode_storage  # noqa: F401  (registers its session reader; read by path, lab.formats.by_path)
from . import goose_db  # noqa: F401  (registers; after goose, whose mapping it reuses)
from . import continue_dev  # noqa: F401  (registers)
from . import copilot_chat  # noqa: F401  (registers)
from . import cursor  # noqa: F401  (registers; its 100 outscores goose_db's 40 for any SQLite file)
from . import zed  # noqa: F401  (registers; its 100 outscores goose_db's 40 for any SQLite file)
from . import crush  # noqa: F401  (registers; Crush's sessions/messages tables outscore goose_db, which gives them 40)
from . import qwen_code  # noqa: F401  (registers)
from . import copilot_cli  # noqa: F401  (registers; its 98 outscores managed_agents' 97 for dotted event types)
from . import pydantic_ai  # noqa: F401  (registers; its 97 outscores gemini's 95 for lists of objects with parts)
from . import autogen  # noqa: F401  (registers)
from . import agents_sdk_db  # noqa: F401  (registers its session reader)
from . import block_lines  # noqa: F401  (registers; its 96 outscores the message-line formats for one block object per record)
from . import archive  # a .zip / tar of a session folder, unpacked and read as the folder
from . import session_folder  # a folder of one-session files: listed, the newest read by default
from .by_path import path_format, read_by_path
from .detect import accept, detect, read_detected, read_forced
from .export import to_anthropic, to_openai
from .jsonio import check_file, repair_note, repairs, transcode_utf16, utf16_file
from .registry import FORMATS, Format, Probe
from .session_choice import SessionInfo, read_session, sessions

__all__ = ["load", "dump", "detect", "sessions", "SessionInfo", "to_anthropic", "to_openai", "FORMATS", "Format", "Probe", "DumpTarget"]

DumpTarget = Literal["lab", "anthropic", "openai"]


def load(path: str | os.PathLike[str], format: str | None = None, *, session: str | None = None) -> Transcript:
    """Import a transcript file, detecting its format unless ``format`` names one.

    ``session`` picks one session of a file or folder that holds several, by the id
    ``sessions(path)`` lists (``lab.formats.session_choice``: Goose and OpenCode session
    ids, an index "0", "1", ... in file order where sessions have none). Without it such
    a reader reads its default (the newest) and names the others in a warning; with it,
    a format that holds one session per file, or an id the file does not hold, is a
    ``TranscriptError``.

    A folder is accepted when it is an OpenHands V1 conversation (one JSON file per event),
    a Cline / Roo Code task folder, or OpenCode storage (a session's ``storage/message/<id>``
    folder, the storage root or its data dir; also a session info file or ``opencode.db``).
    A ``.zip`` or tar of such a folder (or of one transcript file) is unpacked into a temporary
    folder and read as what it holds (``lab.formats.archive``: the checks and the size limit).
    A compressed file of one transcript (zstd, as Codex's ``rollout-*.jsonl.zst``, gzip, bzip2
    or xz; known by its magic bytes) is decompressed there under the same limit and read as the
    file it holds, detected by its inner name (``lab.formats.compressed``); errors name the
    compressed file. A compressed tar stays a folder archive. A UTF-16 file (with a BOM, or
    ASCII with a zero byte beside each character) is read as its UTF-8 copy, with a note.

    Any other folder is a folder of sessions (``~/.claude/projects/<project>``, Codex's
    ``sessions/``, Cline's ``tasks/``): ``session`` is a path inside it as ``sessions(folder)``
    lists, and without one the most recently modified session is read, with a warning naming
    the others (``lab.formats.session_folder``).
    """
    folder = Path(path)
    if session is not None and not archive.is_archive(folder):
        return _with_repairs(lambda: read_session(folder, format, session))
    # Folders and stores first (lab.formats.by_path), then files by detection; every result is checked.
    found = path_format(folder, format)
    if found is not None:
        return accept(_with_repairs(lambda: read_by_path(found, folder)), found, file=str(folder))
    if archive.is_archive(folder):
        return archive.load_archive(folder, lambda entry: load(entry, format, session=session))
    if session_folder.holds_sessions(folder):
        return session_folder.read_newest(folder, format)
    p = check_file(path)
    encoding = utf16_file(p)
    if encoding is not None:
        return _with_repairs(lambda: _read_utf16(p, format, encoding))
    return read_detected(p) if format is None else read_forced(format, p)


def _read_utf16(path: Path, format: str | None, encoding: str) -> Transcript:
    """A UTF-16 file (Windows tools write them), read as the UTF-8 copy of it made in a temporary folder.

    Every reader takes UTF-8 only; errors, warnings and ``source_path`` name the user's file.
    """
    with tempfile.TemporaryDirectory(prefix="lab-utf16-") as tmp:
        copy = Path(tmp) / path.name
        transcode_utf16(path, copy, encoding)

        def said(text: str) -> str:
            return text.replace(str(copy), str(path))

        try:
            t = read_detected(copy) if format is None else read_forced(format, copy)
        except TranscriptError as e:
            raise TranscriptError(said(e.reason), file=said(e.file or str(path)), where=e.where, expected=e.expected) from None
    t.notes.warnings[:] = [said(w) for w in t.notes.warnings]
    t.notes.warnings.append(f"converted from {encoding} to UTF-8 before reading")
    t.meta.source_path = str(path)
    return t


def _with_repairs(read: Callable[[], Transcript]) -> Transcript:
    """``read()``, with a warning when its JSON held strings the readers replaced (``jsonio.repairs``).

    Detected and forced reads count their own (``detect.read_as``); this covers the readers
    chosen by path or by session, which do not go through it.
    """
    with repairs() as tally:
        transcript = read()
    note = repair_note(tally)
    if note is not None and note not in transcript.notes.warnings:
        transcript.notes.warnings.append(note)
    return transcript


def dump(transcript: Transcript, to: DumpTarget = "lab", path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The transcript as lab JSON or a provider request body; also written to ``path`` when given."""
    if to == "lab":
        data = labjson.to_dict(transcript)
    elif to == "anthropic":
        data = to_anthropic(transcript)
    elif to == "openai":
        data = to_openai(transcript)
    else:
        raise ConfigError(f"dump target must be 'lab', 'anthropic' or 'openai', got {to!r}")
    if path is not None:
        target = Path(path)
        try:
            write_text_atomic(target, json.dumps(data, ensure_ascii=False, indent=1))
        except OSError as exc:
            raise TranscriptError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    return data
