"""Token counter benchmark: speed and error against o200k, per transcript.

For every transcript and every local counter (all but ``anthropic``, which
needs the network) this measures:

- throughput: UTF-8 bytes of the transcript's block texts / seconds spent in
  ``count_text``, with a fresh counter per measurement so no earlier run's
  cache helps (texts repeated inside one transcript do hit the cache, as they
  would in a replay). Exact counters build their encoder before the clock
  starts: that is a once-per-process cost, not a per-text one.
- total error: (sum of estimates - sum of o200k counts) / o200k, over all
  block texts; this is what a watermark decision depends on.
- per-message error: mean |estimate - o200k| / o200k over messages with text.

The calibrated counter was fitted on this same corpus, so its numbers here are
in-sample; ``leave_one_out`` refits it without each transcript in turn and
reports that transcript's error, the honest figure for unseen sessions, and
``kind_errors`` shows it on generated kinds of text, its known weak spots too.
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import random
import sysconfig
import time
import uuid
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from ..core.messages import ImageBlock, Message, Transcript, block_text
from ..core.tokens import get_counter
from ..core.tokens.calibrated import CalibratedCounter, chunk_rows, solve
from ..errors import LabError

__all__ = [
    "BENCH_COUNTERS",
    "bench_counters",
    "bench_counters_paths",
    "leave_one_out",
    "kind_errors",
    "calibration_texts",
    "generated_texts",
    "transcript_texts",
    "format_table",
    "WEAK_SPOTS",
]

BENCH_COUNTERS = ("minicode", "chars/3.5", "calibrated", "cl100k", "o200k")
REFERENCE = "o200k"


def _messages(transcript: Transcript) -> list[Message]:
    out = list(transcript.messages)
    for thread in transcript.sidechains.values():
        out.extend(thread)
    return out


def _message_texts(message: Message) -> list[str]:
    return [t for b in message.content if not isinstance(b, ImageBlock) and (t := block_text(b))]


def transcript_texts(transcript: Transcript) -> list[str]:
    """Every non-empty block text of a transcript, sidechains included."""
    return [t for m in _messages(transcript) for t in _message_texts(m)]


def _label(item: Transcript, index: int) -> str:
    meta = item.meta
    if meta.source_path:
        return Path(meta.source_path).name
    return meta.title or meta.session_id or f"transcript {index + 1}"


def _measure(name: str, texts: Sequence[str], repeats: int = 3) -> tuple[Any, float]:
    """The fastest of ``repeats`` passes, each with a fresh counter; CPU time of this thread.

    CPU time, not wall time: benchmarks share machines, and a descheduled
    process would otherwise be charged for other people's work.
    """
    best = float("inf")
    counter: Any = None
    for _ in range(repeats):
        counter = get_counter(name)
        # Builds a lazy encoder now; the warm-up text is not one of the measured texts.
        counter.count_text("\x00warm-up\x00")
        t0 = time.thread_time()
        for t in texts:
            counter.count_text(t)
        best = min(best, time.thread_time() - t0)
    return counter, best


def _bench_one(label: str, transcript: Transcript, counters: Sequence[str]) -> list[dict[str, Any]]:
    messages = [texts for m in _messages(transcript) if (texts := _message_texts(m))]
    texts = [t for group in messages for t in group]
    nbytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    for t in texts:
        hash(t)  # str caches its hash: the first counter timed must not pay it for the others
    names = list(dict.fromkeys([REFERENCE, *counters]))
    measured = {name: _measure(name, texts) for name in names}
    ref = measured[REFERENCE][0]
    ref_msgs = [sum(ref.count_text(t) for t in group) for group in messages]
    ref_total = sum(ref_msgs)
    ref_seconds = measured[REFERENCE][1]
    rows = []
    for name in counters:
        counter, seconds = measured[name]
        # All texts are cached in this instance now, so these sums cost no counting.
        msgs = [sum(counter.count_text(t) for t in group) for group in messages]
        total = sum(msgs)
        per_msg = [abs(e - r) / r for e, r in zip(msgs, ref_msgs, strict=True) if r > 0]
        rows.append(
            {
                "transcript": label,
                "counter": name,
                "messages": len(messages),
                "blocks": len(texts),
                "bytes": nbytes,
                "seconds": seconds,
                "mb_per_s": nbytes / seconds / 1e6 if seconds > 0 else None,
                "speed_vs_o200k": ref_seconds / seconds if seconds > 0 else None,
                "tokens": total,
                "o200k_tokens": ref_total,
                "total_error": (total - ref_total) / ref_total if ref_total else 0.0,
                "message_mean_abs_error": sum(per_msg) / len(per_msg) if per_msg else 0.0,
            }
        )
    return rows


def _check_offline(counters: Sequence[str]) -> None:
    if "anthropic" in counters:
        raise LabError("the counter benchmark runs offline; leave 'anthropic' out")


def _load(item: Transcript | str | os.PathLike[str]) -> Transcript:
    if isinstance(item, Transcript):
        return item
    from ..formats import load  # lazy: lab.bench is a front end, the core never imports formats

    return load(item)


def bench_counters(
    items: Iterable[Transcript | str | os.PathLike[str]], counters: Sequence[str] = BENCH_COUNTERS
) -> list[dict[str, Any]]:
    """One row per (transcript, counter); items are loaded Transcripts or paths to import."""
    _check_offline(counters)
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        transcript = _load(item)
        label = Path(item).name if not isinstance(item, Transcript) else _label(transcript, i)
        rows.extend(_bench_one(label, transcript, counters))
    return rows


def bench_counters_paths(paths: Iterable[str | os.PathLike[str]], counters: Sequence[str] = BENCH_COUNTERS) -> list[dict[str, Any]]:
    """``bench_counters`` over transcript files, plus the calibrated counter's leave-one-out and kind rows."""
    _check_offline(counters)
    transcripts = [(Path(p).name, _load(p)) for p in paths]
    rows: list[dict[str, Any]] = []
    for label, transcript in transcripts:
        rows.extend(_bench_one(label, transcript, counters))
    if "calibrated" in counters:
        if len(transcripts) > 1:
            rows.extend(leave_one_out(transcripts))
        rows.extend(kind_errors())
    return rows


def kind_errors() -> list[dict[str, Any]]:
    """The calibrated counter's total error on each generated kind of text, weak spots included."""
    exact, est = get_counter(REFERENCE), get_counter("calibrated")
    rows = []
    for kind, text in generated_texts().items():
        ref, got = exact.count_text(text), est.count_text(text)
        counter = "calibrated (weak spots)" if kind in WEAK_SPOTS else "calibrated (other kinds)"
        rows.append({"transcript": f"[{kind}]", "counter": counter, "blocks": 1, "tokens": got, "o200k_tokens": ref, "total_error": (got - ref) / ref})
    return rows


def leave_one_out(transcripts: Sequence[tuple[str, Transcript]]) -> list[dict[str, Any]]:
    """Refit the calibrated counter without each transcript (same recipe as the shipped fit) and score it there."""
    exact = get_counter(REFERENCE)
    base_x, base_y = chunk_rows(calibration_texts([]), exact)
    per = {label: chunk_rows(transcript_texts(t), exact) for label, t in transcripts}
    rows = []
    for label, transcript in transcripts:
        x, y = list(base_x), list(base_y)
        for other, (ox, oy) in per.items():
            if other != label:
                x.extend(ox)
                y.extend(oy)
        held_out = CalibratedCounter(solve(x, y, source=f"without {label}"))
        texts = transcript_texts(transcript)
        total = sum(held_out.count_text(t) for t in texts)
        ref = sum(exact.count_text(t) for t in texts)
        rows.append(
            {
                "transcript": label,
                "counter": "calibrated (leave-one-out)",
                "blocks": len(texts),
                "tokens": total,
                "o200k_tokens": ref,
                "total_error": (total - ref) / ref if ref else 0.0,
            }
        )
    return rows


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.1f}%"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width table of the rows, then one summary line per counter."""
    head = f"{'transcript':<48} {'counter':<28} {'MB/s':>7} {'x o200k':>8} {'tokens':>9} {'total err':>9} {'msg |err|':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        mbs = f"{r['mb_per_s']:.1f}" if r.get("mb_per_s") is not None else "-"
        speed = f"{r['speed_vs_o200k']:.1f}" if r.get("speed_vs_o200k") is not None else "-"
        msg = f"{r['message_mean_abs_error'] * 100:.1f}%" if "message_mean_abs_error" in r else "-"
        lines.append(
            f"{r['transcript'][:48]:<48} {r['counter']:<28} {mbs:>7} {speed:>8} {r['tokens']:>9,} {_pct(r['total_error']):>9} {msg:>9}"
        )
    lines.append("")
    lines.append("summary per counter (mean over transcripts; speed = bytes / seconds over all transcripts):")
    for name in dict.fromkeys(r["counter"] for r in rows):
        mine = [r for r in rows if r["counter"] == name]
        mean_abs = sum(abs(r["total_error"]) for r in mine) / len(mine)
        worst = max(abs(r["total_error"]) for r in mine)
        text = f"  {name:<28} mean |total err| {mean_abs * 100:5.1f}%  worst {worst * 100:5.1f}%"
        timed = [r for r in mine if r.get("seconds")]
        if timed:
            secs = sum(r["seconds"] for r in timed)
            mb = sum(r["bytes"] for r in timed) / 1e6
            ref_secs = sum(r2["seconds"] for r2 in rows if r2["counter"] == REFERENCE and r2.get("seconds"))
            msg = sum(r["message_mean_abs_error"] for r in timed) / len(timed)
            text += f"  msg |err| {msg * 100:5.1f}%  {mb / secs:7.1f} MB/s"
            if ref_secs:
                text += f"  {ref_secs / secs:5.1f}x o200k"
        lines.append(text)
    return "\n".join(lines)


# --- texts the calibrated counter is fitted on, besides the corpus -------------------------

_STDLIB_CODE = ("textwrap", "json.decoder", "argparse", "shutil", "asyncio.tasks", "dataclasses", "http.client", "email.message")

# Written for the lab: short everyday passages in scripts whose tokenisation
# differs most from English (ideographs, kana, hangul, Cyrillic, accents).
_MULTILINGUAL = (
    "这个函数读取配置文件，如果文件不存在就返回默认值。请在修改之前先运行测试，确认所有用例都通过。"
    "上下文窗口快满了，所以我们把旧的工具输出换成了简短的摘要，并把完整内容保存到磁盘上。",
    "このスクリプトはログファイルを読み込み、エラーの行だけを表示します。設定を変更したら、もう一度テストを実行してください。"
    "会話が長くなりすぎたので、古いツールの出力を要約に置き換えました。",
    "이 함수는 설정 파일을 읽고 파일이 없으면 기본값을 반환합니다. 변경하기 전에 테스트를 먼저 실행해 주세요. "
    "대화가 너무 길어져서 오래된 도구 출력을 요약으로 바꾸었습니다.",
    "Эта функция читает файл настроек и возвращает значения по умолчанию, если файла нет. "
    "Перед изменением кода запустите тесты и убедитесь, что все проходят.",
    "Die Funktion liest die Konfigurationsdatei und gibt Standardwerte zurück, wenn die Datei fehlt. "
    "Bitte führe vor jeder Änderung die Tests aus. Le fichier de configuration est lu au démarrage ; "
    "s'il n'existe pas, les valeurs par défaut sont utilisées. ¿Dónde está el archivo? Está en el directorio raíz.",
    "│ name │ size │ modified │\n├──────┼──────┼──────────┤\n│ a.py │ 1 KB │ today    │\n→ done ✓ … 100% ★",
    "Tests pass 🎉 and the build is green ✅. Deploying now 🚀 — ping me if anything breaks 🙏. "
    "Great work team 👍😀 the release notes are ready 📝 and the dashboard shows 0 errors 📉🔥.",
    "Το αρχείο ρυθμίσεων διαβάζεται κατά την εκκίνηση. הקובץ נקרא בעת ההפעלה. يتم قراءة الملف عند البدء. "
    "Plik konfiguracyjny jest wczytywany przy starcie; jeśli go brakuje, używane są wartości domyślne.",
)


def _stdlib_texts() -> list[str]:
    import importlib

    code, prose = [], []
    for name in _STDLIB_CODE:
        try:
            mod = importlib.import_module(name)
            code.append(inspect.getsource(mod)[:40_000])
        except (ImportError, OSError, TypeError):
            continue
        for _, obj in sorted(vars(mod).items()):
            doc = inspect.getdoc(obj) if (inspect.isfunction(obj) or inspect.isclass(obj)) else None
            if doc and len(doc) > 80:
                prose.append(doc)
    return code + ["\n\n".join(prose)]


# Kinds the calibrated counter is known to get wrong; kept out of its fit (see calibrated.py).
WEAK_SPOTS = ("base64", "minified", "repeated")

_EMOJI = "🎉✅🚀🙏👍😀📝📉🔥💡⚠️🐛🔧📦✨❌🤔👀"
_WORDS = {
    "en": "the build passed after we fixed the flaky test in the parser module".split(),
    "de": "der Build lief durch nachdem wir den instabilen Test im Parser-Modul repariert hatten".split(),
    "ru": "сборка прошла после того как мы исправили нестабильный тест в модуле парсера".split(),
    "zh": "我们 修复 了 解析 模块 中 不 稳定 的 测试 之后 构建 通过 了".split(),
}


def generated_texts() -> dict[str, str]:
    """Deterministic texts of kinds agents see in tool output, by kind (the weak spots included)."""
    rnd = random.Random(20240601)
    idents = ["e", "t", "n", "r", "i", "o", "fn", "cb", "ctx", "opts", "res", "val", "el", "key", "data"]
    out: dict[str, str] = {}
    out["logs"] = "\n".join(
        f"2024-06-{rnd.randint(10, 28)}T{rnd.randint(10, 23)}:{rnd.randint(10, 59)}:{rnd.randint(10, 59)}."
        f"{rnd.randint(100, 999)}Z {rnd.choice(['INFO', 'WARN', 'DEBUG', 'ERROR'])} worker[{rnd.randint(1, 64)}] "
        f"request id={rnd.getrandbits(64):016x} took {rnd.random() * 900:.2f}ms bytes={rnd.randint(0, 10**7)}"
        for _ in range(600)
    )
    out["numbers"] = "\n".join(" ".join(f"{rnd.gauss(0, 100):10.4f}" for _ in range(8)) for _ in range(250))
    out["hex"] = "\n".join(f"{rnd.getrandbits(160):040x} {rnd.choice(['fix', 'add', 'refactor'])} module {rnd.randint(1, 99)}" for _ in range(200))
    records = [
        {
            "id": rnd.randint(1, 10**6),
            "name": rnd.choice(["alpha", "beta", "gamma", "delta"]) + f"_{rnd.randint(1, 999)}",
            "enabled": rnd.random() < 0.5,
            "score": round(rnd.random(), 4),
            "tags": rnd.sample(["api", "db", "ui", "cache", "auth", "search"], 3),
            "path": f"/srv/app/src/module_{rnd.randint(1, 50)}/handler.py",
        }
        for _ in range(300)
    ]
    out["json"] = json.dumps(records, indent=2)
    out["json_compact"] = json.dumps(records)
    hosts = ["github.com", "docs.python.org", "api.example.com", "registry.npmjs.org", "localhost:8080"]
    out["urls"] = "\n".join(
        f"https://{rnd.choice(hosts)}/{rnd.choice(idents)}/{rnd.choice(idents)}-{rnd.randint(1, 999)}/"
        f"{rnd.choice(['index.html', 'src/main.ts', 'v2/items', 'blob/main/README.md'])}?page={rnd.randint(1, 50)}&sort={rnd.choice(idents)}"
        for _ in range(200)
    )
    out["uuids"] = "\n".join(f"{rnd.choice(idents)}\t{uuid.UUID(int=rnd.getrandbits(128))}\t{rnd.randint(0, 10**6)}" for _ in range(200))
    out["table"] = "\n".join(
        f"| {rnd.choice(idents):<12} | {rnd.randint(0, 10**5):>8} | {rnd.choice(['ok', 'failed', 'skipped']):<10} |"
        + ("\n|" + "-" * 14 + "|" + "-" * 10 + "|" + "-" * 12 + "|" if i % 10 == 9 else "")
        for i in range(200)
    )
    tree = []
    for i in range(60):
        tree.append(f"{'├──' if i % 7 else '└──'} {rnd.choice(idents)}_{i}")
        for j in range(rnd.randint(1, 4)):
            tree.append(f"│   {'├──' if j else '└──'} {rnd.choice(idents)}{j}.{rnd.choice(['py', 'ts', 'md', 'json'])}")
    out["tree"] = "\n".join(tree)
    out["emoji"] = "\n".join(
        " ".join(rnd.choice(words) + (rnd.choice(_EMOJI) if rnd.random() < 0.3 else "") for _ in range(12))
        for words in (_WORDS[rnd.choice(list(_WORDS))] for _ in range(120))
    )
    out["base64"] = base64.encodebytes(rnd.randbytes(6000)).decode("ascii")
    out["minified"] = "".join(
        rnd.choice(
            [
                f"var {rnd.choice(idents)}={rnd.randint(0, 999)};",
                f"function {rnd.choice(idents)}({rnd.choice(idents)},{rnd.choice(idents)}){{return {rnd.choice(idents)}&&{rnd.choice(idents)}.{rnd.choice(idents)}}}",
                f"if(!{rnd.choice(idents)})throw new Error(\"{rnd.choice(idents)}\");",
                f"{rnd.choice(idents)}[{rnd.randint(0, 9)}]={{{rnd.choice(idents)}:[{rnd.randint(0, 99)},{rnd.randint(0, 99)}]}};",
            ]
        )
        for _ in range(400)
    )
    out["repeated"] = "\n".join(rnd.choice("=-*#_ ") * rnd.randint(20, 120) for _ in range(100))
    return out


def _cjk_test_texts() -> list[str]:
    # CPython's own test data: real Chinese, Japanese and Korean prose, when the test package is installed.
    folder = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    out = []
    for name in ("gb2312-utf8.txt", "big5-utf8.txt", "euc_jp-utf8.txt", "euc_kr-utf8.txt"):
        try:
            out.append((folder / name).read_text(encoding="utf-8"))
        except OSError:
            continue
    return out


def calibration_texts(transcripts: Iterable[Transcript | str | os.PathLike[str]]) -> list[str]:
    """The texts ``calibrated.fit`` is run on: the transcripts' block texts plus code, prose, JSON, logs and CJK."""
    texts: list[str] = []
    for item in transcripts:
        texts.extend(transcript_texts(_load(item)))
    texts.extend(_stdlib_texts())
    texts.extend(t for kind, t in generated_texts().items() if kind not in WEAK_SPOTS)
    texts.extend(_cjk_test_texts())
    texts.extend(_MULTILINGUAL)
    return texts

