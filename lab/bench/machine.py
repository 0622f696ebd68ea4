"""Bench section "machine": a fixed reference workload, so a reader can tell a slow machine from a slow change.

Every other section's ratios are taken within one run and need no help across
machines, but some targets are stated in seconds (the app's slider move), and
the same code has run 2-3x slower on one day than on another. This section
times a workload that never changes with the lab's code: the interpreter and
standard library doing what the lab does most (parsing JSON lines, regex and
``str.translate`` passes over text, sorting, dict and set building) over about
4 MB of text generated from a fixed seed. Its CPU seconds, set beside the
README's run, say how much faster or slower this machine is; the checksum says
the workload was the same.
"""

from __future__ import annotations

import json
import random
import re
import string
import time
import zlib

from . import register_section

__all__ = ["REFERENCE_REPEAT", "reference_workload", "bench_machine"]

# Runs of the workload; the fastest counts, as elsewhere in the bench.
REFERENCE_REPEAT = 5
_LINES = 12_000
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEPARATE = str.maketrans({c: " " for c in string.punctuation})


def _payload(seed: int = 7) -> list[str]:
    """About 4 MB of JSON lines, the same for every run: messages with text and a tool call each."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10))) for _ in range(2_000)]
    lines = []
    for n in range(_LINES):
        text = " ".join(rng.choices(vocab, k=30))
        path = "/".join(rng.choices(vocab, k=3)) + ".py"
        lines.append(json.dumps({"id": n, "role": "assistant" if n % 2 else "user", "content": text,
                                 "tool": {"name": "Read", "input": {"file_path": path}}}))
    return lines


def reference_workload(lines: list[str]) -> int:
    """The workload itself; returns a checksum of what it computed, the same on every machine."""
    counts: dict[str, int] = {}
    paths: set[str] = set()
    lengths: list[int] = []
    for line in lines:
        record = json.loads(line)
        text = record["content"]
        for word in _WORDS.findall(text):
            counts[word] = counts.get(word, 0) + 1
        paths.add(record["tool"]["input"]["file_path"])
        lengths.append(len(text.translate(_SEPARATE).split()))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    digest = zlib.crc32("\n".join(f"{w}:{c}" for w, c in ranked[:500]).encode())
    return (digest + len(paths) + sum(lengths)) & 0xFFFFFFFF


def bench_machine(repeat: int = REFERENCE_REPEAT) -> tuple[list[str], dict]:
    lines = _payload()
    size = sum(map(len, lines))
    best = float("inf")
    checksum = 0
    for _ in range(repeat):
        start = time.process_time()
        checksum = reference_workload(lines)
        best = min(best, time.process_time() - start)
    text = (f"reference workload (fixed: JSON lines, regex, translate, sort over {size / 1e6:.1f} MB generated from one seed; "
            f"checksum {checksum:08x}): {best:.3f} s CPU, best of {repeat}; set beside the README's run, it scales the seconds "
            f"below (the ratios need no scaling)")
    return [text], {"reference_seconds": best, "checksum": f"{checksum:08x}", "bytes": size, "repeat": repeat}


register_section("machine", lambda quick: bench_machine(3 if quick else REFERENCE_REPEAT))
