"""``generate``: a seeded, valid, realistic agent session as a ``Transcript``.

Shape: system prompt, the user's task request, then ``requests`` assistant
messages. A tool turn is an assistant message with 1-3 tool_use blocks and
the user message right after it holding every result; a user turn is a
text-only assistant report followed by a user message; the last assistant
message is a text answer.

Usage numbers are simulated (documented, not measured): the prompt of each
request is the estimated size of everything before it (UTF-8 bytes / 4 + 4
per message); when the previous request was under 5 minutes earlier its
prompt is read from cache and only the new tail is written, otherwise the
whole prompt is written. ``input + cache_read + cache_write`` always equals
that prompt size, so it grows with the context.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import timedelta
from typing import Any
from collections.abc import Iterator, Mapping

from ..core.messages import (
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
)
from .config import GeneratorConfig, parse_generator_config
from .edits import ContentPlanter, Planted, planted_turns
from .prose import Prose
from .tools import ToolCall, Workspace
from .vocab import TextKit

__all__ = ["generate", "generate_planted", "iter_session", "SessionBuilder", "TOOL_SPECS", "SYSTEM_PROMPT", "estimate_tokens"]

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Anthropic's prompt cache lives five minutes; a slower next request misses it.
CACHE_TTL = 300.0


def _schema(**props: str) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": [next(iter(props))]}


TOOL_SPECS = [
    ToolSpec(name="Read", description="Read a file; the output has line numbers.", input_schema=_schema(file_path="string", offset="integer", limit="integer")),
    ToolSpec(name="Grep", description="Search file contents with a regular expression.", input_schema=_schema(pattern="string", path="string", output_mode="string")),
    ToolSpec(name="Glob", description="List files matching a glob pattern.", input_schema=_schema(pattern="string", path="string")),
    ToolSpec(name="LS", description="List a directory as a tree.", input_schema=_schema(path="string")),
    ToolSpec(name="Bash", description="Run a shell command and return its output.", input_schema=_schema(command="string", description="string")),
    ToolSpec(name="Edit", description="Replace an exact string in a file.", input_schema=_schema(file_path="string", old_string="string", new_string="string")),
    ToolSpec(name="Write", description="Create or overwrite a file.", input_schema=_schema(file_path="string", content="string")),
]

SYSTEM_PROMPT = (
    "You are a coding agent working in a terminal on the user's repository. Use the tools to read, search, run and edit; "
    "prefer small, reviewable changes and run the tests before you say you are done. Never invent file contents: read them.\n\n"
    "Environment:\n- Working directory: {root}\n- Platform: linux\n- Model: {model}\n"
)


def estimate_tokens(message: Message) -> int:
    # Cheap and monotone: CJK is 3 UTF-8 bytes, so it counts ~3x an ASCII char, as tokenizers do.
    return 4 + sum(len(block_text(b).encode("utf-8")) for b in message.content) // 4


class SessionBuilder:
    """Builds a session turn by turn; ``generate`` and the bulk writer drive it."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.cfg = config
        self.rng = random.Random(config.seed)
        self.kit = TextKit(self.rng, config.cjk_share)
        self.ws = Workspace(self.kit, typical=config.typical_output_chars, maximum=config.max_output_chars, huge_rate=config.huge_output_rate)
        self.prose = Prose(self.kit, self.ws.project)
        self.clock = config.start
        self.count = 0
        self.context_tokens = 0
        self.last_request: tuple[float, int] | None = None  # (seconds since start, prompt tokens)
        self.touched: list[str] = []
        self._weights = [config.read_weight, config.grep_weight, config.bash_weight, config.edit_weight, config.list_weight]
        # Draws from the session's generator only when a planted turn is asked for: without them a seed gives the same session.
        self.planter = ContentPlanter(self.ws, self.kit, self.rng)

    # -- ids and time --------------------------------------------------------------
    def _digest(self, kind: str) -> bytes:
        return hashlib.sha1(f"{self.cfg.seed}:{kind}:{self.count}".encode(), usedforsecurity=False).digest()

    def _message_id(self) -> str:
        return str(uuid.UUID(bytes=self._digest("m")[:16], version=4))

    def _tool_id(self, j: int) -> str:
        return "toolu_01" + "".join(_B62[b % 62] for b in self._digest(f"t{j}")[:22])

    def _advance(self, seconds: float) -> None:
        self.clock += timedelta(milliseconds=round(seconds * 1000))

    def _gap(self) -> None:
        r, cfg = self.rng, self.cfg
        self._advance(cfg.seconds_between_requests * (0.5 + r.expovariate(2.0)))
        if cfg.long_pause_rate and r.random() < cfg.long_pause_rate:
            self._advance(r.uniform(3600, 3 * 3600))

    def _message(self, role: str, blocks: list[Any], usage: Usage | None = None) -> Message:
        msg = Message(role=role, content=tuple(blocks), id=self._message_id(), timestamp=self.clock, usage=usage)  # type: ignore[arg-type]
        self.count += 1
        self.context_tokens += estimate_tokens(msg)
        return msg

    def _assistant(self, blocks: list[Any]) -> Message:
        self._gap()
        now = (self.clock - self.cfg.start).total_seconds()
        prompt = self.context_tokens
        fresh = min(prompt, 1 + self.rng.randrange(8))
        if self.last_request and now - self.last_request[0] < CACHE_TTL:  # noqa: SIM108 - as one line the cache-warm test is lost in a 120-column expression
            read = min(self.last_request[1], prompt - fresh)
        else:
            read = 0
        self.last_request = (now, prompt)
        output = sum(len(block_text(b).encode("utf-8")) for b in blocks) // 4 + 1
        usage = Usage(input_tokens=fresh, output_tokens=output, cache_read_tokens=read, cache_write_tokens=prompt - fresh - read)
        return self._message("assistant", blocks, usage)

    def _maybe_thinking(self, path: str) -> list[Any]:
        return [ThinkingBlock(thinking=self.prose.thinking(path))] if self.rng.random() < self.cfg.thinking_rate else []

    # -- turns ---------------------------------------------------------------------
    def opening(self, facts: list[str]) -> list[Message]:
        system = self._message("system", [TextBlock(text=SYSTEM_PROMPT.format(root=self.ws.root, model=self.cfg.model))])
        self.context_tokens += sum(len(t.model_dump_json()) for t in TOOL_SPECS) // 4
        target = self.ws.new_path(".py")
        task = self._message("user", [TextBlock(text=self.prose.with_facts(self.prose.task(target), facts))])
        return [system, task]

    def _call(self) -> ToolCall:
        r, ws = self.rng, self.ws
        kind = r.choices(("read", "grep", "bash", "edit", "list"), self._weights)[0]
        known = ws.known()
        if r.random() < self.cfg.error_rate:
            return self._failed(kind, known)
        if kind == "read":
            again = known and r.random() < self.cfg.repeat_read_rate
            return ws.read(r.choice(known) if again else None)
        if kind == "grep":
            return ws.grep()
        if kind == "bash":
            return ws.bash()
        if kind == "edit":
            call = ws.edit(r.choice(known[-20:])) if known and r.random() < 0.85 else ws.write()
            self.touched.append(call[1]["file_path"])
            return call
        return ws.listing()

    def _failed(self, kind: str, known: list[str]) -> ToolCall:
        r, ws, kit = self.rng, self.ws, self.kit
        if kind == "read":
            return ws.error("Read", {"file_path": ws.new_path()})
        if kind == "edit":
            path = r.choice(known) if known else ws.new_path()
            line = kit.code_lines(".py", 60)[-2] or kit.comment()
            return ws.error("Edit", {"file_path": path, "old_string": line.strip(), "new_string": kit.comment()})
        if kind == "grep":
            return ws.error("Grep", {"pattern": kit.ident() + "(", "path": ws.root})
        if kind == "list":
            return ws.error("Glob", {"pattern": "**/*.py", "path": f"{ws.root}/{r.choice(('build', 'dist', '.cache'))}"})
        return ws.error("Bash", {"command": r.choice(("python -m pytest tests/ -x -q", "make build", f"python -m {self.ws.project.replace('-', '_')}.cli"))})

    def tool_turn(self, facts: list[str] | None = None) -> list[Message]:
        facts = facts or []
        r = self.rng
        n = r.randrange(2, 4) if r.random() < self.cfg.parallel_rate else 1
        calls = [self.ws.read(None, fact) for fact in facts]
        calls += [self._call() for _ in range(max(0, n - len(calls)))]
        name, first = calls[0][0], calls[0][1]
        target = first.get("file_path") or first.get("command") or first.get("pattern") or self.ws.root
        blocks: list[Any] = self._maybe_thinking(first.get("file_path") or self._some_path())
        if r.random() < 0.5:
            blocks.append(TextBlock(text=self.prose.before_tool(name, target)))
        ids = [self._tool_id(j) for j in range(len(calls))]
        blocks += [ToolUseBlock(id=i, name=c[0], input=c[1]) for i, c in zip(ids, calls, strict=True)]
        call_msg = self._assistant(blocks)
        # Tool run time: a fraction of a second for reads, longer for shell commands.
        self._advance(sum(r.uniform(0.05, 12.0 if c[0] == "Bash" else 1.5) for c in calls))
        results = [ToolResultBlock(tool_use_id=i, content=c[2], is_error=c[3]) for i, c in zip(ids, calls, strict=True)]
        return [call_msg, self._message("user", results)]

    def planted_turn(self) -> list[Message]:
        """A turn that needs the exact text of earlier output (``edits.py``): the call, then its result."""
        plan = self.planter.plan()
        index = self.count
        tool_id = self._tool_id(0)
        call_msg = self._assistant([TextBlock(text=t) for t in plan.text] + [ToolUseBlock(id=tool_id, name=plan.call[0], input=plan.call[1])])
        self.planter.record(index, plan)
        self._advance(self.rng.uniform(0.05, 1.5))
        return [call_msg, self._message("user", [ToolResultBlock(tool_use_id=tool_id, content=plan.call[2], is_error=plan.call[3])])]

    def _some_path(self) -> str:
        return self.rng.choice(self.ws.known()[-30:] or [self.ws.root + "/README.md"])

    def report_turn(self) -> Message:
        path = self._some_path()
        return self._assistant(self._maybe_thinking(path) + [TextBlock(text=self.prose.report(path))])

    def user_turn(self, facts: list[str] | None = None) -> Message:
        self._advance(self.rng.uniform(15, 600))
        path = self._some_path()
        return self._message("user", [TextBlock(text=self.prose.with_facts(self.prose.follow_up(path), facts or []))])

    def final_turn(self) -> Message:
        paths = sorted(set(self.touched))[:6] or (self.ws.known()[-2:] or [self.ws.root + "/README.md"])
        return self._assistant([TextBlock(text=self.prose.final(paths))])


def _schedule(cfg: GeneratorConfig, rng: random.Random) -> tuple[list[int], dict[int, list[int]], dict[int, list[int]], list[int]]:
    """Which turns are user turns, and where each fact goes: (user turns, tool facts, user facts, task facts)."""
    n = cfg.requests
    user_turns = sorted(rng.sample(range(n - 1), min(cfg.user_turns, n - 1)))
    user_set = set(user_turns)
    tool_turns = [k for k in range(n - 1) if k not in user_set]
    in_tool: dict[int, list[int]] = {}
    in_user: dict[int, list[int]] = {}
    in_task: list[int] = []
    for i in range(cfg.planted_facts):
        pos = int((i + rng.random()) * (n - 1) / max(1, cfg.planted_facts))
        if tool_turns and (rng.random() < 0.5 or not user_turns):
            turn = min(tool_turns, key=lambda k: (abs(k - pos), k))
            in_tool.setdefault(turn, []).append(i)
        else:
            later = [k for k in user_turns if k >= pos]
            if later:
                in_user.setdefault(later[0], []).append(i)
            else:
                in_task.append(i)
    return user_turns, in_tool, in_user, in_task


def iter_session(config: GeneratorConfig) -> tuple[list[str], Iterator[Message]]:
    """The planted facts and a lazy stream of the session's messages."""
    _, facts, stream = _session(config)
    return facts, stream


def _session(config: GeneratorConfig) -> tuple[SessionBuilder, list[str], Iterator[Message]]:
    b = SessionBuilder(config)
    user_turns, in_tool, in_user, in_task = _schedule(config, b.rng)
    facts = [b.prose.fact() for _ in range(config.planted_facts)]
    user_set = set(user_turns)
    # Content dependencies take tool turns that carry no fact; none asked for, no draw (the same session as before).
    planted = set(planted_turns(config.requests, config.content_dependencies, b.rng, user_set | set(in_tool))) if config.content_dependencies else set()

    def stream() -> Iterator[Message]:
        yield from b.opening([facts[i] for i in in_task])
        for k in range(config.requests - 1):
            if k in user_set:
                yield b.report_turn()
                yield b.user_turn([facts[i] for i in in_user.get(k, [])])
            elif k in planted:
                yield from b.planted_turn()
            else:
                turn = b.tool_turn([facts[i] for i in in_tool.get(k, [])])
                if planted:
                    # What a later quote can copy: the outputs the session has shown.
                    for m in turn:
                        b.planter.observe(m)
                yield from turn
        yield b.final_turn()

    return b, facts, stream()


def generate(config: GeneratorConfig | Mapping[str, Any] | None = None, **overrides: Any) -> Transcript:
    """A deterministic synthetic session: the same config gives a byte-identical dump."""
    return generate_planted(config, **overrides)[0]


def generate_planted(config: GeneratorConfig | Mapping[str, Any] | None = None, **overrides: Any) -> tuple[Transcript, list[Planted]]:
    """``generate``, and the content dependencies planted in the session (``config.content_dependencies``; see ``edits.py``)."""
    cfg = config if isinstance(config, GeneratorConfig) and not overrides else parse_generator_config(config, **overrides)
    builder, facts, stream = _session(cfg)
    messages = list(stream)
    meta = TranscriptMeta(
        source_format="generated",
        session_id=f"generated-{cfg.seed}",
        model=cfg.model,
        title=f"Generated session: seed {cfg.seed}, {cfg.requests} requests",
        planted_facts=facts,
    )
    return Transcript(meta=meta, messages=messages, tools=list(TOOL_SPECS)), list(builder.planter.planted)
