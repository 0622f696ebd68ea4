"""LangChain message content to canonical blocks: text, images, reasoning, and the tool calls found inline.

``langchain`` reads the messages; this module reads what a message's
``content`` holds, string or list of content blocks in any of the shapes
LangChain writes (its own standard blocks, and the providers' blocks it
passes through).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.messages import Block, ImportNotes, TextBlock, ThinkingBlock
from ._build import Loc, image_from_url, need_dict, text_block

__all__ = ["image", "reasoning", "content_blocks", "result_text"]


def image(part: dict[str, Any]) -> Block:
    ref = part.get("image_url")
    if ref is not None:
        return image_from_url(ref.get("url") if isinstance(ref, dict) else ref)
    source = part.get("source")
    if isinstance(source, dict):  # Anthropic-shaped image block passed through
        if isinstance(source.get("data"), str):
            return image_from_url(f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}")
        return image_from_url(source.get("url"))
    if isinstance(part.get("base64"), str):  # LangChain's standard image block
        return image_from_url(f"data:{part.get('mime_type') or 'image/png'};base64,{part['base64']}")
    return image_from_url(part.get("url"))


def reasoning(part: dict[str, Any]) -> str:
    text = part.get("reasoning")
    if isinstance(text, str):
        return text
    # OpenAI Responses reasoning as LangChain keeps it: a list of summary parts.
    summary = part.get("summary")
    if isinstance(summary, list):
        return "\n".join(s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str))
    return ""


def content_blocks(content: Any, notes: ImportNotes, loc: Loc, calls: list[tuple[dict[str, Any], Loc]]) -> list[Block]:
    """Blocks of a ``content`` string or list; tool-call parts are collected into ``calls``."""
    if content is None:
        return []
    if isinstance(content, str):
        return text_block(content)
    if not isinstance(content, list):
        raise loc.error(f"content is a {type(content).__name__}", expected="a string or a list of content blocks")
    blocks: list[Block] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            blocks += text_block(part)
            continue
        part = need_dict(part, loc.at(i), "content block")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks += text_block(part.get("text"))
        elif kind in ("image_url", "image"):
            blocks.append(image(part))
        elif kind == "thinking" and isinstance(part.get("thinking"), str) and part["thinking"]:
            sig = part.get("signature")
            blocks.append(ThinkingBlock(thinking=part["thinking"], signature=sig if isinstance(sig, str) else None))
        elif kind == "reasoning" and (text := reasoning(part)):
            blocks.append(ThinkingBlock(thinking=text))
        elif kind in ("tool_use", "tool_call"):
            calls.append((part, loc.at(i)))
        else:
            notes.skip(f"content block:{kind}")
    return blocks


def result_text(content: Any, notes: ImportNotes, loc: Loc) -> str:
    if content is not None and not isinstance(content, (str, list)):
        return json.dumps(content, ensure_ascii=False)
    parts = [b.text if isinstance(b, TextBlock) else "[image]" for b in content_blocks(content, notes, loc, [])]
    return "\n".join(parts)
