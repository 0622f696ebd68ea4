"""Synthetic agent conversations: a task, then tool calls whose outputs are long enough to spill."""

from __future__ import annotations

from typing import Any

__all__ = ["anthropic_history", "openai_history", "BIG"]


def BIG(i: int) -> str:
    return "\n".join(f"line {n} of file {i}: value = {n * i}" for n in range(60))


def anthropic_history(k: int, task: str = "Fix the failing test in the parser.") -> list[dict[str, Any]]:
    """The messages of request ``k`` (0-based): the task and ``k`` tool rounds."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for i in range(k):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Reading file {i}."},
                                                          {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Read", "input": {"path": f"src/f{i}.py"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": BIG(i)}]})
    return messages


def openai_history(k: int, task: str = "Fix the failing test in the parser.") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": task}]
    for i in range(k):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i:04d}", "type": "function", "function": {"name": "read", "arguments": f'{{"path": "src/f{i}.py"}}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i:04d}", "content": BIG(i)})
    return messages


def responses_items(k: int, task: str = "Fix the failing test in the parser.") -> list[dict[str, Any]]:
    """A Codex-style Responses input: the task, then per round an encrypted reasoning item, a call and its output."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]}]
    for i in range(k):
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": f"gAAAA-opaque-{i}"})
        items.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i:04d}", "name": "shell", "arguments": f'{{"cmd": "cat src/f{i}.py"}}'})
        items.append({"type": "function_call_output", "call_id": f"call_{i:04d}", "output": BIG(i)})
    return items
