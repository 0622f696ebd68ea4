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

Transcripts are benched session by session (``corpus_sessions``: a file of
several sessions, such as an OpenHands evaluation output, gives one row each).

The calibrated counter was fitted on this same corpus plus generated text
(``calibration_kinds``; ``refit`` rebuilds the shipped weights), so its rows
here are in-sample. ``held_out`` refits it without each session in turn (the
generated kinds stay in) and scores it on that session, the figure for
sessions it has never seen, then without each generated kind in turn;
``kind_errors`` scores the shipped weights on generated text drawn at a seed
the fit did not use. ``held_out_summary`` prints these against the targets
(<= 3% mean error on held-out sessions, >= 5x tiktoken's speed in the same run).
"""

from __future__ import annotations

import base64
import json
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from ..core.messages import ImageBlock, Message, Transcript, block_text
from ..core.tokens import get_counter
from ..core.tokens.calibrated import IMPLEMENTATION, CalibratedCounter, Coefficients, chunk_rows, solve
from ..errors import LabError
from ..generator.text_kinds import text_kinds
from .corpus import corpus_files
from ..formats import load
from ..evaluation.batch import read_batch

__all__ = [
    "BENCH_COUNTERS",
    "bench_counters",
    "bench_counters_paths",
    "leave_one_out",
    "held_out",
    "held_out_summary",
    "kind_errors",
    "calibration_kinds",
    "calibration_texts",
    "corpus_sessions",
    "refit",
    "generated_texts",
    "transcript_texts",
    "format_table",
    "WEAK_SPOTS",
    "FIT_SEED",
    "ERROR_TARGET",
    "SPEED_TARGET",
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


def corpus_sessions(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, Transcript]]:
    """The sessions of ``paths``, each labelled by its file name (and its id when a file holds several).

    Sessions, not files: an OpenHands evaluation output holds several, and
    leaving one file out would hold out several sessions at once.
    """
    return [(Path(name.split(" [", 1)[0]).name + (" [" + name.split(" [", 1)[1] if " [" in name else ""), t) for name, t, _ in read_batch(list(paths)).items if t is not None]


def bench_counters_paths(paths: Iterable[str | os.PathLike[str]], counters: Sequence[str] = BENCH_COUNTERS) -> list[dict[str, Any]]:
    """``bench_counters`` over the sessions of transcript files, plus the calibrated counter's held-out and kind rows."""
    _check_offline(counters)
    sessions = corpus_sessions(paths)
    rows: list[dict[str, Any]] = []
    for label, transcript in sessions:
        rows.extend(_bench_one(label, transcript, counters))
    if "calibrated" in counters:
        if len(sessions) > 1:
            rows.extend(leave_one_out(sessions))
        rows.extend(kind_errors())
    return rows


# --- the fit and its held-out figures -------------------------------------------------------

# The seed of the generated text in the shipped fit; the bench's unseen-text rows use FIT_SEED + 1.
FIT_SEED = 0
# Characters of each generated kind: about 20 chunks each, so a kind weighs like a short session.
FIT_KIND_CHARS = 40_000
# What the README promises: mean |error| of held-out session totals, and speed against tiktoken o200k.
ERROR_TARGET = 0.03
SPEED_TARGET = 5.0

Rows = tuple[list[tuple[int, ...]], list[int]]


def calibration_kinds(seed: int = FIT_SEED, size: int = FIT_KIND_CHARS) -> dict[str, str]:
    """The generated texts of the fit, by kind: ``lab.generator.text_kinds`` and this module's ``generated_texts``."""
    kinds = dict(text_kinds(seed=seed, size=size))
    for kind, text in generated_texts().items():
        kinds[kind if kind not in kinds else f"{kind}_2"] = text
    kinds["multilingual"] = "\n\n".join(_MULTILINGUAL)
    return kinds


def calibration_texts(transcripts: Iterable[Transcript | str | os.PathLike[str]]) -> list[str]:
    """The texts ``calibrated.fit`` is run on: the transcripts' block texts, then every generated kind."""
    texts: list[str] = []
    for item in transcripts:
        texts.extend(transcript_texts(_load(item)))
    texts.extend(calibration_kinds().values())
    return texts


def _groups(sessions: Sequence[tuple[str, Transcript]], exact: Any) -> tuple[dict[str, Rows], dict[str, Rows]]:
    per_session = {label: chunk_rows(transcript_texts(t), exact) for label, t in sessions}
    per_kind = {kind: chunk_rows([text], exact) for kind, text in calibration_kinds().items()}
    return per_session, per_kind


def _solve(groups: Iterable[Rows], source: str) -> Coefficients:
    x: list[tuple[int, ...]] = []
    y: list[int] = []
    for gx, gy in groups:
        x.extend(gx)
        y.extend(gy)
    return solve(x, y, source=source)


def refit(paths: Iterable[str | os.PathLike[str]] | None = None) -> Coefficients:
    """Rebuild the shipped ``COEFFICIENTS``: every session of ``paths`` (default: the corpus, ``$LAB_CORPUS``)
    plus the generated kinds at ``FIT_SEED``, fitted by ``calibrated.solve`` against exact o200k.

    ``python -m lab.bench.tokens`` prints the result as the literal to paste into calibrated.py.
    """
    if paths is None:
        paths = corpus_files()
    per_session, per_kind = _groups(corpus_sessions(paths), get_counter(REFERENCE))
    return _solve([*per_session.values(), *per_kind.values()], "o200k_base fit on the corpus sessions + generated text kinds (seed 0)")


def _total_error(counter: Any, exact: Any, texts: Sequence[str]) -> tuple[int, int, float]:
    got = sum(counter.count_text(t) for t in texts)
    ref = sum(exact.count_text(t) for t in texts)
    return got, ref, (got - ref) / ref if ref else 0.0


def held_out(sessions: Sequence[tuple[str, Transcript]]) -> list[dict[str, Any]]:
    """The calibrated counter refitted without each session, and without each generated kind, scored on what it left out.

    A session is held out with every generated kind still in the training set
    (the shipped fit has them too); a kind is held out with every session and
    the other kinds in. Same recipe as ``refit``, so these are the figures for
    text the shipped weights never saw.
    """
    exact = get_counter(REFERENCE)
    per_session, per_kind = _groups(sessions, exact)
    kinds = calibration_kinds()
    rows = []
    for label, transcript in sessions:
        w = _solve([g for other, g in per_session.items() if other != label] + list(per_kind.values()), f"without {label}")
        texts = transcript_texts(transcript)
        got, ref, err = _total_error(CalibratedCounter(w), exact, texts)
        rows.append({"transcript": label, "counter": "calibrated (session held out)", "blocks": len(texts), "tokens": got, "o200k_tokens": ref, "total_error": err})
    for kind, text in kinds.items():
        w = _solve(list(per_session.values()) + [g for other, g in per_kind.items() if other != kind], f"without [{kind}]")
        got, ref, err = _total_error(CalibratedCounter(w), exact, [text])
        rows.append({"transcript": f"[{kind}]", "counter": "calibrated (kind held out)", "blocks": 1, "tokens": got, "o200k_tokens": ref, "total_error": err})
    return rows


def kind_errors(seed: int = FIT_SEED + 1) -> list[dict[str, Any]]:
    """The shipped counter's total error on each generated kind, drawn at a seed the fit did not use."""
    exact, est = get_counter(REFERENCE), get_counter("calibrated")
    rows = []
    for kind, text in text_kinds(seed=seed, size=FIT_KIND_CHARS // 2).items():
        got, ref, err = _total_error(est, exact, [text])
        rows.append({"transcript": f"[{kind}]", "counter": "calibrated (unseen text)", "blocks": 1, "tokens": got, "o200k_tokens": ref, "total_error": err})
    return rows


def leave_one_out(transcripts: Sequence[tuple[str, Transcript]]) -> list[dict[str, Any]]:
    """``held_out``: one row per session left out of the fit, then one per generated kind left out."""
    return held_out(transcripts)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.1f}%"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width table of the rows, then one summary line per counter."""
    head = f"{'transcript':<48} {'counter':<30} {'MB/s':>7} {'x o200k':>8} {'tokens':>9} {'total err':>9} {'msg |err|':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        mbs = f"{r['mb_per_s']:.1f}" if r.get("mb_per_s") is not None else "-"
        speed = f"{r['speed_vs_o200k']:.1f}" if r.get("speed_vs_o200k") is not None else "-"
        msg = f"{r['message_mean_abs_error'] * 100:.1f}%" if "message_mean_abs_error" in r else "-"
        lines.append(
            f"{r['transcript'][:48]:<48} {r['counter']:<30} {mbs:>7} {speed:>8} {r['tokens']:>9,} {_pct(r['total_error']):>9} {msg:>9}"
        )
    lines.append("")
    lines.append("summary per counter (mean over transcripts; speed = bytes / seconds over all transcripts):")
    for name in dict.fromkeys(r["counter"] for r in rows):
        mine = [r for r in rows if r["counter"] == name]
        mean_abs = sum(abs(r["total_error"]) for r in mine) / len(mine)
        worst = max(abs(r["total_error"]) for r in mine)
        text = f"  {name:<30} mean |total err| {mean_abs * 100:5.1f}%  worst {worst * 100:5.1f}%"
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
    summary = held_out_summary(rows)
    if summary:
        lines.append("")
        lines.extend(summary)
    return "\n".join(lines)


def _speed(rows: Sequence[dict[str, Any]], name: str) -> float | None:
    secs = sum(r["seconds"] for r in rows if r["counter"] == name and r.get("seconds"))
    ref = sum(r["seconds"] for r in rows if r["counter"] == REFERENCE and r.get("seconds"))
    return ref / secs if secs and ref else None


def _spread(rows: Sequence[dict[str, Any]], counter: str) -> tuple[int, float, float, str] | None:
    mine = [r for r in rows if r["counter"] == counter]
    if not mine:
        return None
    worst = max(mine, key=lambda r: abs(r["total_error"]))
    return len(mine), sum(abs(r["total_error"]) for r in mine) / len(mine), worst["total_error"], worst["transcript"]


def held_out_summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The calibrated counter's figures for the README: held-out error against its target, and speed against its target."""
    lines = []
    for counter, what in (
        ("calibrated", "in-sample (sessions in the fit)"),
        ("calibrated (session held out)", "sessions held out (leave-one-session-out, generated kinds in the fit)"),
        ("calibrated (kind held out)", "generated kinds held out (each kind left out of the fit)"),
        ("calibrated (unseen text)", f"unseen text of the fitted kinds (seed {FIT_SEED + 1})"),
    ):
        spread = _spread(rows, counter)
        if spread is None:
            continue
        n, mean, worst, where = spread
        line = f"  {what}: mean |error| {mean * 100:.1f}% over {n}, worst {worst * 100:+.1f}% ({where})"
        if counter == "calibrated (kind held out)":
            rest = [abs(r["total_error"]) for r in rows if r["counter"] == counter and r["transcript"].strip("[]") not in WEAK_SPOTS]
            if rest and len(rest) < n:
                line += f"; {sum(rest) / len(rest) * 100:.1f}% without {', '.join(WEAK_SPOTS)}"
        if counter == "calibrated (session held out)":
            line += f"; target <= {ERROR_TARGET * 100:.0f}%: {'met' if mean <= ERROR_TARGET else 'MISSED'}"
        lines.append(line)
    speed = _speed(rows, "calibrated")
    if speed is not None:
        lines.append(f"  speed: {speed:.1f}x tiktoken o200k in this run ({IMPLEMENTATION} feature pass); "
                     f"target >= {SPEED_TARGET:.0f}x: {'met' if speed >= SPEED_TARGET else 'MISSED'}")
    return ["calibrated counter against o200k:", *lines] if lines else []


# --- texts the calibrated counter is fitted on, besides the corpus -------------------------

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


# Kinds no count of the calibrated counter follows: a run of one repeated character (ruler lines, padding) is
# one or two BPE tokens at any length. The summary gives the held-out kinds' mean with and without them.
WEAK_SPOTS = ("repeated",)

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


if __name__ == "__main__":  # python -m lab.bench.tokens: rebuild the shipped weights from $LAB_CORPUS
    fitted = refit()
    print(f"# {fitted.source}\nweights=({', '.join(repr(w) for w in fitted.weights)}),")
