"""Regenerate the generated files in ``sample_sessions/`` (the hand-written ones are left alone).

``python -m lab.generator --out sample_sessions`` calls ``write_samples``; the
output is deterministic, so rerunning it leaves git clean.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from ..core.messages import Transcript
from ..errors import LabError
from .bulk import generate_jsonl_bytes
from .config import parse_generator_config
from .session import generate

__all__ = ["SAMPLE_CONFIGS", "BULK_SAMPLE", "write_lab_json", "write_samples", "main"]

# File name -> generator knobs. Each shows one thing the pipeline must handle.
SAMPLE_CONFIGS: dict[str, dict[str, Any]] = {
    "generated-small.lab.json": {"seed": 1, "requests": 40, "typical_output_chars": 1500, "max_output_chars": 20_000, "huge_output_rate": 0.0},
    "generated-cjk.lab.json": {"seed": 2, "requests": 30, "cjk_share": 0.6, "typical_output_chars": 1200, "max_output_chars": 15_000, "huge_output_rate": 0.0},
    "generated-huge-outputs.lab.json": {"seed": 11, "requests": 12, "typical_output_chars": 3000, "max_output_chars": 200_000, "huge_output_rate": 0.3, "planted_facts": 3},
    "generated-repeat-reads.lab.json": {"seed": 4, "requests": 40, "read_weight": 8, "edit_weight": 1.5, "repeat_read_rate": 0.6, "typical_output_chars": 1500, "max_output_chars": 12_000, "huge_output_rate": 0.0},
    "generated-errors.lab.json": {"seed": 5, "requests": 25, "error_rate": 0.35, "typical_output_chars": 1200, "max_output_chars": 10_000, "huge_output_rate": 0.0},
}
# The bulk writer's Claude Code JSONL, small: (file name, bytes, seed).
BULK_SAMPLE = ("generated-claude-code.jsonl", 120_000, 6)


def write_lab_json(transcript: Transcript, path: str | Path) -> Path:
    """Write ``transcript`` in the lab's own JSON envelope (``{"lab_transcript": 1, ...}``)."""
    path = Path(path)
    data = {"lab_transcript": 1, **transcript.model_dump(mode="json")}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def write_samples(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [write_lab_json(generate(parse_generator_config(knobs)), folder / name) for name, knobs in SAMPLE_CONFIGS.items()]
    name, size, seed = BULK_SAMPLE
    generate_jsonl_bytes(folder / name, size, seed)
    return written + [folder / name]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.generator", description="Write synthetic agent sessions.")
    p.add_argument("--out", help="Folder to (re)write the generated sample sessions into.")
    p.add_argument("--jsonl", help="Write one large Claude-Code-shaped JSONL session here (with --bytes).")
    p.add_argument("--bytes", type=int, default=100_000_000, help="Approximate size of --jsonl in bytes.")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not args.out and not args.jsonl:
        p.error("give --out and/or --jsonl")
    try:
        if args.out:
            for path in write_samples(args.out):
                print(f"{path}  {path.stat().st_size:,} bytes")
        if args.jsonl:
            n = generate_jsonl_bytes(args.jsonl, args.bytes, args.seed)
            print(f"{args.jsonl}  {n:,} bytes")
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
