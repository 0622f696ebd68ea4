"""Seeded text of the kinds agents meet in tool output that the real corpus has little of.

The calibrated token counter (``lab.core.tokens.calibrated``) is fitted on the
corpus plus these texts, and its held-out error is measured on them, so they
must be kinds the corpus under-represents: JSON API responses and escaped JSON,
MCP tool schemas and results, base64 and JWTs, minified JS and CSS, Chinese,
Japanese, Korean and Cyrillic prose, shell and build logs, CTF-style hex dumps
and disassembly, Cline-style XML tool calls, and ruler lines.

Texts are assembled from word lists and sentences written for the lab, never
copied from anyone's files, and every kind draws from its own
``random.Random(f"{seed}:{kind}")``: adding a kind or changing one leaves the
others byte-for-byte the same, so a refit moves only where the text moved.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable

from .vocab import ADJS, ERRORS, NOUNS, VERBS
from ..errors import ConfigError

__all__ = ["TEXT_KINDS", "text_kind", "text_kinds"]

_IDENTS = ("e", "t", "n", "r", "i", "o", "fn", "cb", "ctx", "opts", "res", "val", "el", "key", "data", "props", "state", "ref")
_HOSTS = ("api.example.com", "github.com", "registry.npmjs.org", "localhost:8080", "hooks.slack.com", "storage.googleapis.com")

# Sentences written for the lab, recombined at random: the scripts whose tokenisation differs most from English.
_ZH = (
    "这个函数读取配置文件，如果文件不存在就返回默认值。", "请在修改之前先运行测试，确认所有用例都通过。",
    "上下文窗口快满了，所以我们把旧的工具输出换成了简短的摘要。", "完整内容已经保存到磁盘上，需要时可以重新读取。",
    "数据库连接池在高峰期会耗尽，需要增加最大连接数。", "这个接口的响应时间超过了两秒，用户已经开始投诉。",
    "我检查了日志，发现错误发生在解析请求参数的时候。", "缓存过期以后，服务会重新从上游拉取数据。",
    "部署脚本需要管理员权限，请联系运维同学开通。", "新版本修复了内存泄漏的问题，并提升了启动速度。",
    "单元测试覆盖率目前是百分之八十二，还需要补充边界情况。", "请不要直接修改主分支，先创建一个新的功能分支。",
)
_JA = (
    "このスクリプトはログファイルを読み込み、エラーの行だけを表示します。", "設定を変更したら、もう一度テストを実行してください。",
    "会話が長くなりすぎたので、古いツールの出力を要約に置き換えました。", "データベースへの接続がタイムアウトしました。",
    "この関数は引数が空のときに例外を投げます。", "キャッシュの有効期限が切れると、サーバーから再取得します。",
    "ビルドは成功しましたが、警告が三件あります。", "レビューのコメントに対応して、変数名を分かりやすくしました。",
    "本番環境にデプロイする前に、ステージングで確認してください。", "メモリ使用量が急に増えた原因を調査しています。",
)
_KO = (
    "이 함수는 설정 파일을 읽고 파일이 없으면 기본값을 반환합니다.", "변경하기 전에 테스트를 먼저 실행해 주세요.",
    "대화가 너무 길어져서 오래된 도구 출력을 요약으로 바꾸었습니다.", "데이터베이스 연결 시간이 초과되었습니다.",
    "캐시가 만료되면 서버에서 데이터를 다시 가져옵니다.", "빌드는 성공했지만 경고가 세 개 있습니다.",
    "배포하기 전에 스테이징 환경에서 확인해 주세요.", "메모리 사용량이 갑자기 늘어난 원인을 조사하고 있습니다.",
)
_RU = (
    "Эта функция читает файл настроек и возвращает значения по умолчанию, если файла нет.",
    "Перед изменением кода запустите тесты и убедитесь, что все проходят.",
    "Контекстное окно почти заполнено, поэтому старые результаты инструментов заменены кратким описанием.",
    "Соединение с базой данных было разорвано по таймауту.", "Сборка завершилась успешно, но есть три предупреждения.",
    "Я проверил журнал и нашёл ошибку при разборе параметров запроса.",
    "После истечения срока действия кэша сервис снова загружает данные из источника.",
    "Пожалуйста, не меняйте основную ветку напрямую, создайте отдельную ветку для задачи.",
    "Новая версия исправляет утечку памяти и ускоряет запуск приложения.",
    "Ошибка: не удалось открыть файл конфигурации, доступ запрещён.",
)
_RU_WORDS = "сервер запрос ответ файл ошибка пользователь данные модуль функция тест сборка ветка кэш журнал очередь задача".split()

_MCP_TOOLS = (
    ("search_records", "Search records of an object by attribute values; returns matching records with their ids."),
    ("get_record", "Fetch one record by id, with every attribute and its current value."),
    ("create_note", "Attach a markdown note to a record. Use this to log calls, meetings and decisions."),
    ("list_lists", "List every list in the workspace with its parent object and entry count."),
    ("update_entry", "Update attribute values of a list entry; attributes not given are left unchanged."),
    ("query_metrics", "Run a metrics query over a time range and return one series per label set."),
    ("read_resource", "Read a resource by URI from the connected server and return its contents."),
)


def _ident(r: random.Random) -> str:
    return r.choice(_IDENTS) if r.random() < 0.5 else f"{r.choice(VERBS)}{r.choice(NOUNS).title()}"


def _record(r: random.Random) -> dict[str, object]:
    return {
        "id": f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-{r.getrandbits(16):04x}-{r.getrandbits(48):012x}",
        "name": f"{r.choice(ADJS)}_{r.choice(NOUNS)}_{r.randint(1, 999)}",
        "created_at": f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999999):06d}Z",
        "status": r.choice(["active", "archived", "pending", "failed"]),
        "count": r.randint(0, 10**6),
        "ratio": round(r.random(), r.randint(2, 6)),
        "enabled": r.random() < 0.5,
        "owner": None if r.random() < 0.2 else {"email": f"{r.choice(NOUNS)}.{r.choice(NOUNS)}@example.com", "role": r.choice(["admin", "member"])},
        "tags": r.sample(list(NOUNS[:30]), r.randint(0, 4)),
        "url": f"https://{r.choice(_HOSTS)}/v{r.randint(1, 3)}/{r.choice(NOUNS)}s/{r.getrandbits(40):x}",
    }


def _code_line(r: random.Random) -> str:
    a, b = _ident(r), _ident(r)
    return r.choice(
        [
            f"    const {a} = await {b}.{r.choice(VERBS)}({r.choice(NOUNS)}Id, {{ timeout: {r.randint(1, 60) * 1000} }});",
            f"    if (!{a}) throw new Error(`{r.choice(NOUNS)} not found: ${{{b}}}`);",
            f"def {r.choice(VERBS)}_{r.choice(NOUNS)}(self, {r.choice(NOUNS)}: str, *, {r.choice(ADJS)}: bool = False) -> dict:",
            f"        return {{\"{r.choice(NOUNS)}\": self.{r.choice(NOUNS)}, \"{r.choice(ADJS)}\": {r.randint(0, 99)}}}",
            f"    # {r.choice(VERBS)} the {r.choice(ADJS)} {r.choice(NOUNS)} before the {r.choice(NOUNS)} is {r.choice(VERBS)}ed",
        ]
    )


def _fill(r: random.Random, size: int, line: Callable[[random.Random], str], sep: str = "\n") -> str:
    parts: list[str] = []
    n = 0
    while n < size:
        s = line(r)
        parts.append(s)
        n += len(s) + len(sep)
    return sep.join(parts)


def _json_pretty(r: random.Random, size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        body = {"data": [_record(r) for _ in range(r.randint(2, 6))], "meta": {"page": r.randint(1, 40), "has_more": r.random() < 0.5}}
        out.append(json.dumps(body, indent=r.choice([2, 4]), ensure_ascii=False))
    return "\n".join(out)


def _json_escaped(r: random.Random, size: int) -> str:
    # A tool result whose text is itself JSON or source code, serialised once more: quotes and newlines escaped.
    out: list[str] = []
    while sum(map(len, out)) < size:
        inner = json.dumps([_record(r) for _ in range(r.randint(1, 3))]) if r.random() < 0.5 else "\n".join(_code_line(r) for _ in range(r.randint(5, 25)))
        out.append(json.dumps({"type": "tool_result", "tool_use_id": f"toolu_{r.getrandbits(96):024x}", "content": [{"type": "text", "text": inner}]}))
    return "\n".join(out)


def _mcp_schema(r: random.Random, size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        tools = []
        for name, desc in r.sample(_MCP_TOOLS, r.randint(2, len(_MCP_TOOLS))):
            props = {
                f"{r.choice(NOUNS)}_{r.choice(['id', 'slug', 'filter', 'limit', 'cursor', 'values'])}": {
                    "type": r.choice(["string", "integer", "boolean", "array", "object"]),
                    "description": f"The {r.choice(ADJS)} {r.choice(NOUNS)} to {r.choice(VERBS)}; {r.choice(['optional', 'required'])}.",
                }
                for _ in range(r.randint(1, 5))
            }
            tools.append(
                {
                    "name": f"mcp__{r.choice(['attio', 'github', 'grafana', 'linear'])}__{name}",
                    "description": desc,
                    "inputSchema": {"type": "object", "properties": props, "required": sorted(props)[:1], "additionalProperties": False,
                                    "$schema": "http://json-schema.org/draft-07/schema#"},
                }
            )
        out.append(json.dumps({"tools": tools}, indent=None if r.random() < 0.5 else 2))
    return "\n".join(out)


def _mcp_result(r: random.Random, size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        text = json.dumps({"records": [_record(r) for _ in range(r.randint(1, 4))], "next_cursor": base64.urlsafe_b64encode(r.randbytes(18)).decode()}, indent=2)
        out.append(json.dumps({"jsonrpc": "2.0", "id": r.randint(1, 999), "result": {"content": [{"type": "text", "text": text}], "isError": False}}))
    return "\n".join(out)


def _base64(r: random.Random, size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        k = r.randrange(4)
        if k == 0:
            out.append(base64.encodebytes(r.randbytes(r.randint(200, 3000))).decode("ascii"))
        elif k == 1:
            out.append(f"data:image/png;base64,{base64.b64encode(r.randbytes(r.randint(200, 2000))).decode()}")
        elif k == 2:
            parts = (base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()), base64.urlsafe_b64encode(r.randbytes(90)),
                     base64.urlsafe_b64encode(r.randbytes(32)))
            out.append("Authorization: Bearer " + ".".join(p.decode().rstrip("=") for p in parts))
        else:
            out.append(f"sha512-{base64.b64encode(r.randbytes(64)).decode()}  integrity of {r.choice(NOUNS)}-{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}.tgz")
    return "\n".join(out)


def _minified_js(r: random.Random, size: int) -> str:
    def stmt(r: random.Random) -> str:
        a, b, c = (r.choice(_IDENTS) for _ in range(3))
        return r.choice(
            [
                f"var {a}={r.randint(0, 999)},{b}=\"{r.choice(NOUNS)}\";",
                f"function {a}({b},{c}){{return {b}&&{b}.{r.choice(NOUNS)}?{c}({b}):void 0}}",
                f"if(!{a})throw new Error(\"{r.choice(NOUNS)} {r.choice(VERBS)}\");",
                f"{a}[{r.randint(0, 9)}]={{{b}:[{r.randint(0, 99)},{r.randint(0, 99)}],{c}:!0}};",
                f"{a}.prototype.{r.choice(VERBS)}=function({b}){{this.{r.choice(NOUNS)}={b}||{{}};return this}};",
                f"for(var {a}=0;{a}<{b}.length;{a}++){c}.push({b}[{a}]>>>{r.randint(1, 8)}&{r.randint(1, 255)});",
                f"export{{{a} as {r.choice(NOUNS)},{b} as {r.choice(VERBS)}}};",
            ]
        )

    def rule(r: random.Random) -> str:
        return (f".{r.choice(NOUNS)}-{r.choice(ADJS)}{{margin:{r.randint(0, 32)}px {r.randint(0, 32)}px;color:#{r.getrandbits(24):06x};"
                f"display:{r.choice(['flex', 'block', 'none'])}}}")

    return _fill(r, size // 2, stmt, "") + "\n" + _fill(r, size // 2, rule, "")


def _prose(r: random.Random, size: int, sentences: tuple[str, ...], sep: str) -> str:
    def paragraph(r: random.Random) -> str:
        return sep.join(r.choice(sentences) for _ in range(r.randint(2, 6)))

    return _fill(r, size, paragraph)


def _chinese(r: random.Random, size: int) -> str:
    def line(r: random.Random) -> str:
        if r.random() < 0.25:
            # Code with comments in Chinese, as a Chinese-speaking user's project has.
            return f"    # {r.choice(_ZH)}\n{_code_line(r)}"
        return "".join(r.choice(_ZH) for _ in range(r.randint(2, 6)))

    return _fill(r, size, line)


def _japanese(r: random.Random, size: int) -> str:
    return _prose(r, size, _JA, "")


def _korean(r: random.Random, size: int) -> str:
    return _prose(r, size, _KO, " ")


def _cyrillic(r: random.Random, size: int) -> str:
    def line(r: random.Random) -> str:
        if r.random() < 0.6:
            return " ".join(r.choice(_RU) for _ in range(r.randint(1, 4)))
        return f"[{r.choice(['ИНФО', 'ОШИБКА', 'ПРЕДУПР'])}] {r.choice(_RU_WORDS)} {r.randint(1, 9999)}: {r.choice(_RU)}"

    return _fill(r, size, line)


def _shell_log(r: random.Random, size: int) -> str:
    def line(r: random.Random) -> str:
        k = r.randrange(8)
        n = r.choice(NOUNS)
        if k == 0:
            return f"tests/test_{n}.py::test_{r.choice(VERBS)}_{r.choice(NOUNS)} {r.choice(['PASSED', 'PASSED', 'FAILED', 'SKIPPED'])} [{r.randint(1, 100):>3}%]"
        if k == 1:
            return f"{'=' * r.randint(10, 35)} {r.randint(1, 300)} passed, {r.randint(0, 9)} failed in {r.random() * 90:.2f}s {'=' * r.randint(10, 35)}"
        if k == 2:
            return f"npm WARN deprecated {n}@{r.randint(0, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}: this library is no longer supported"
        if k == 3:
            return f"   Compiling {n}-{r.choice(VERBS)} v{r.randint(0, 3)}.{r.randint(0, 40)}.{r.randint(0, 20)}"
        if k == 4:
            return (f"-rw-r--r--  1 {r.choice(['dev', 'root', 'runner'])} staff {r.randint(0, 10**6):>8} "
                    f"{r.choice(['Jan', 'Mar', 'Oct'])} {r.randint(1, 28):>2} {r.randint(0, 23):02d}:{r.randint(0, 59):02d} {n}_{r.choice(VERBS)}.py")
        if k == 5:
            return f"{r.getrandbits(28):07x} {r.choice(VERBS).title()} {r.choice(ADJS)} {n} in the {r.choice(NOUNS)} {r.choice(['module', 'handler', 'tests'])}"
        if k == 6:
            return (f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d},"
                    f"{r.randint(0, 999):03d} {r.choice(['INFO', 'WARNING', 'ERROR', 'DEBUG'])} [{n}.{r.choice(VERBS)}] {r.choice(ERRORS)}: "
                    f"{r.choice(ADJS)} {n} {r.getrandbits(32):08x} after {r.randint(1, 5000)}ms")
        return f"  File \"/usr/lib/python3.12/site-packages/{n}/{r.choice(VERBS)}.py\", line {r.randint(1, 900)}, in {r.choice(VERBS)}_{n}"

    return _fill(r, size, line)


def _hexdump(r: random.Random, size: int) -> str:
    def line(r: random.Random) -> str:
        k = r.randrange(5)
        addr = r.getrandbits(20) & ~0xF
        if k <= 1:
            raw = r.randbytes(16) if r.random() < 0.5 else bytes(r.choice(b"AAAAAAAA\x00\x00\x00/bin/sh\x90\x90flag{") for _ in range(16))
            hexes = " ".join(raw[i : i + 2].hex() for i in range(0, 16, 2))
            return f"{addr:08x}: {hexes}  {''.join(chr(b) if 32 <= b < 127 else '.' for b in raw)}"
        if k == 2:
            ops = r.choice(["mov    rax,QWORD PTR [rbp-0x18]", "call   0x401030 <puts@plt>", "lea    rdi,[rip+0xe9c]", "xor    eax,eax",
                            "cmp    DWORD PTR [rbp-0x4],0x1f", "jle    0x401196 <main+48>", "push   rbp", "ret"])
            return f"  {addr:x}:\t{' '.join(f'{b:02x}' for b in r.randbytes(r.randint(1, 7))):<21}\t{ops}"
        if k == 3:
            return f"{r.choice(['rax', 'rbx', 'rcx', 'rdx', 'rsi', 'rdi', 'rbp', 'rsp', 'rip'])}            0x{r.getrandbits(48):x}      {r.getrandbits(40)}"
        return "payload = b\"" + "".join(f"\\x{b:02x}" for b in r.randbytes(r.randint(8, 32))) + f"\" + p64(0x{r.getrandbits(44):x})"

    return _fill(r, size, line)


def _cline_xml(r: random.Random, size: int) -> str:
    # Cline-style turns: XML tool tags, environment details and file listings inside one JSON-escaped message.
    def turn(r: random.Random) -> str:
        path = f"src/{r.choice(NOUNS)}/{r.choice(VERBS)}{r.choice(NOUNS).title()}.{r.choice(['ts', 'tsx', 'py'])}"
        files = "\n".join(f"src/{r.choice(NOUNS)}/{r.choice(NOUNS)}.{r.choice(['ts', 'tsx', 'json', 'md'])}" for _ in range(r.randint(3, 12)))
        body = (f"<thinking>I need to {r.choice(VERBS)} the {r.choice(ADJS)} {r.choice(NOUNS)} first.</thinking>\n"
                f"<read_file>\n<path>{path}</path>\n</read_file>\n\n<environment_details>\n# VSCode Visible Files\n{path}\n\n"
                f"# Current Time\n{r.randint(1, 12)}/{r.randint(1, 28)}/2025, {r.randint(1, 12)}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d} PM\n\n"
                f"# Current Working Directory Files\n{files}\n</environment_details>")
        return json.dumps({"ts": 1_700_000_000_000 + r.getrandbits(32), "type": "say", "say": "text", "text": body})

    return _fill(r, size, turn)


def _rulers(r: random.Random, size: int) -> str:
    def line(r: random.Random) -> str:
        ch = r.choice("=-*#_~ .")
        if r.random() < 0.5:
            return ch * r.randint(20, 120)
        return f"{ch * r.randint(3, 40)} {r.choice(VERBS)} {r.choice(NOUNS)} {ch * r.randint(3, 40)}"

    return _fill(r, size, line)


TEXT_KINDS: dict[str, Callable[[random.Random, int], str]] = {
    "json": _json_pretty,
    "json_escaped": _json_escaped,
    "mcp_schema": _mcp_schema,
    "mcp_result": _mcp_result,
    "base64": _base64,
    "minified": _minified_js,
    "chinese": _chinese,
    "japanese": _japanese,
    "korean": _korean,
    "cyrillic": _cyrillic,
    "shell_log": _shell_log,
    "hexdump": _hexdump,
    "cline_xml": _cline_xml,
    "rulers": _rulers,
}


def text_kind(kind: str, *, seed: int = 0, size: int = 20_000) -> str:
    """About ``size`` characters of ``kind`` (a key of ``TEXT_KINDS``); the same text for the same seed."""
    try:
        make = TEXT_KINDS[kind]
    except KeyError:
        raise ConfigError(f"unknown text kind {kind!r}; choose one of {', '.join(TEXT_KINDS)}") from None
    return make(random.Random(f"{seed}:{kind}"), size)


def text_kinds(*, seed: int = 0, size: int = 20_000) -> dict[str, str]:
    """Every kind of ``TEXT_KINDS``, about ``size`` characters each."""
    return {kind: text_kind(kind, seed=seed, size=size) for kind in TEXT_KINDS}
