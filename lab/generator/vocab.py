"""Seeded vocabularies and the small text builders every tool output is made of.

Everything draws from one ``random.Random`` so a seed fixes the whole
session. Lines are assembled by concatenation from word lists rather than by
sampling real files: cheap (a 5,000-request session takes a few seconds),
varied enough that token counters see identifiers, numbers, paths, prose and
punctuation in realistic proportions, and free of anyone else's content.
"""

from __future__ import annotations

import random

__all__ = ["TextKit", "NOUNS", "VERBS", "ADJS", "ERRORS", "DIRS", "MONTHS", "CJK_NOUNS", "CJK_VERBS", "EXTENSIONS", "PAST", "THIRD", "past"]

NOUNS = (
    "cache session token request response handler parser config user order invoice queue worker retry "
    "timeout buffer index schema record payload client router metric event batch job lease shard snapshot "
    "ledger account tenant policy quota webhook cursor page filter report upload chunk stream socket frame "
    "plugin hook template migration bucket artifact build release secret profile setting feature span trace "
    "alert rule node graph edge state store pool lock digest manifest"
).split()
VERBS = (
    "load save parse build fetch resolve validate normalize merge split flush sync apply render compute "
    "dispatch emit collect refresh expire encode decode compact serialize register lookup schedule cancel "
    "check update create delete list read write open close reset prune"
).split()
ADJS = "active pending stale cached raw default local remote next last max min total partial current previous async safe legacy".split()
ERRORS = ("ValueError", "KeyError", "TypeError", "RuntimeError", "TimeoutError", "PermissionError", "LookupError")
TYPES_PY = ("str", "int", "bool", "float", "bytes", "dict[str, Any]", "list[str]", "None", "Path")
TYPES_TS = ("string", "number", "boolean", "Record<string, unknown>", "string[]", "void", "Promise<void>")
TYPES_GO = ("string", "int", "int64", "bool", "[]byte", "error", "time.Duration", "map[string]string")
EXTENSIONS = (".py", ".py", ".py", ".ts", ".ts", ".go", ".md", ".yaml")
DIRS = ("src", "app", "lib", "internal", "pkg", "services", "core", "api", "utils", "cli", "tests", "docs")
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()

_IRREGULAR = {"build": "built", "split": "split", "read": "read", "write": "written", "reset": "reset", "emit": "emitted", "apply": "applied", "sync": "synced", "lookup": "looked up"}
PAST = {v: _IRREGULAR.get(v) or (v + "d" if v.endswith("e") else v + "ed") for v in VERBS}
THIRD = {v: v[:-1] + "ies" if v.endswith("y") else v + ("es" if v.endswith(("ch", "sh", "s")) else "s") for v in VERBS}

CJK_NOUNS = "缓存 会话 请求 配置 用户 订单 队列 任务 数据库 接口 日志 权限 索引 文件 测试 服务 模块 参数 令牌 上下文 部署 版本 分支 依赖".split()
CJK_VERBS = "处理 更新 检查 加载 保存 解析 清理 同步 重试 校验 修复 重构".split()


def _upper_first(name: str) -> str:
    return name[:1].upper() + name[1:]


def past(verb: str) -> str:
    return PAST.get(verb) or verb + "ed"


class TextKit:
    """Word-level builders bound to one seeded generator."""

    def __init__(self, rng: random.Random, cjk_share: float = 0.0) -> None:
        self.rng = rng
        self.cjk_share = cjk_share
        self.pick = rng.choice

    # -- words -------------------------------------------------------------
    def chinese(self, share: float | None = None) -> bool:
        share = self.cjk_share if share is None else share
        return share > 0 and self.rng.random() < share

    def ident(self) -> str:
        p = self.pick
        return p(VERBS) + "_" + p(NOUNS) if self.rng.random() < 0.6 else p(ADJS) + "_" + p(NOUNS)

    def camel(self) -> str:
        p = self.pick
        return p(VERBS) + p(NOUNS).capitalize() + (p(NOUNS).capitalize() if self.rng.random() < 0.3 else "")

    def cls(self) -> str:
        p = self.pick
        return p(ADJS).capitalize() + p(NOUNS).capitalize() + p(("Manager", "Store", "Client", "Handler", "Service", "Error", "Config", ""))

    def words(self, n: int) -> str:
        p = self.pick
        pool = (NOUNS, VERBS, ADJS)
        return " ".join(p(pool[i % 3]) for i in range(n))

    def hexid(self, n: int = 7) -> str:
        return "".join(self.pick("0123456789abcdef") for _ in range(n))

    # -- prose -------------------------------------------------------------
    def comment(self) -> str:
        p = self.pick
        if self.chinese(self.cjk_share / 2):
            n1, n2, v = p(CJK_NOUNS), p(CJK_NOUNS), p(CJK_VERBS)
            return p((f"{v}{n1}之前先检查{n2}", f"这里的{n1}可能为空，需要先{v}", f"注意：{n1}过期后要重新{v}", f"{n1}和{n2}的逻辑要保持一致"))
        n1, n2 = p(NOUNS), p(NOUNS)
        r = self.rng.randrange(5)
        if r == 0:
            return f"{p(VERBS)} the {n1} before the {n2} is {p(ADJS)}"
        if r == 1:
            return f"TODO: handle a {p(ADJS)} {n1} when the {n2} is missing"
        if r == 2:
            return f"the {n1} may be None if the {n2} expired (see #{self.rng.randrange(10, 4000)})"
        if r == 3:
            return f"keep in sync with {n2}_{n1}.py"
        return f"{n1}s are {past(p(VERBS))} lazily; {n2}s are not"

    def sentence(self) -> str:
        p = self.pick
        return f"The {p(ADJS)} {p(NOUNS)} {THIRD[p(VERBS)]} each {p(NOUNS)} before the {p(NOUNS)} is {past(p(VERBS))}."

    # -- code ----------------------------------------------------------------
    def code_lines(self, ext: str, target_chars: int) -> list[str]:
        make = {".py": self._py_block, ".ts": self._ts_block, ".go": self._go_block, ".md": self._md_block, ".yaml": self._yaml_block}.get(ext, self._py_block)
        lines = self._header(ext)
        size = sum(len(x) + 1 for x in lines)
        while size < target_chars:
            block = make()
            lines.extend(block)
            size += sum(len(x) + 1 for x in block)
        return lines

    def _header(self, ext: str) -> list[str]:
        p = self.pick
        if ext == ".py":
            return [f'"""{self.sentence()}"""', "", "from __future__ import annotations", "", f"import {p(('json', 'logging', 'os', 're', 'time'))}",
                    f"from .{p(NOUNS)} import {self.cls()}", "", "logger = logging.getLogger(__name__)", ""]
        if ext == ".ts":
            return [f"import {{ {self.cls()} }} from './{p(NOUNS)}';", f"import type {{ {self.cls()} }} from '../types';", ""]
        if ext == ".go":
            return [f"package {p(NOUNS)}", "", "import (", '\t"context"', '\t"fmt"', ")", ""]
        if ext == ".md":
            return [f"# {p(NOUNS).capitalize()} {p(NOUNS)} guide", ""]
        return [f"# {self.comment()}"]

    def _py_block(self) -> list[str]:
        p, r = self.pick, self.rng
        fn, a, v, it = self.ident(), p(NOUNS), p(NOUNS) + "s", p(NOUNS)
        out = [f"def {fn}({a}: {p(TYPES_PY)}, {p(ADJS)}: {p(TYPES_PY)} = None) -> {p(TYPES_PY)}:", f'    """{self.sentence()}"""']
        for _ in range(r.randrange(2, 9)):
            k = r.randrange(8)
            if k == 0:
                out += [f"    if not {v}:", f"        raise {p(ERRORS)}(f\"{p(NOUNS)} {p(ADJS)}: {{{a}!r}}\")"]
            elif k == 1:
                out += [f"    for {it} in {v}:", f"        {it}.{p(VERBS)}_{p(NOUNS)}({a}, timeout={r.randrange(1, 120)})"]
            elif k == 2:
                out.append(f"    # {self.comment()}")
            elif k == 3:
                out.append(f'    logger.debug("{p(VERBS)} {p(NOUNS)} %s in %.2fs", {a}, {r.random() * 9:.2f})')
            elif k == 4:
                out.append(f'    {v} = {{"{p(NOUNS)}": {r.randrange(1000)}, "{p(NOUNS)}": {a}.{p(NOUNS)}}}')
            else:
                out.append(f"    {v} = self.{self.ident()}({a}, {p(ADJS)}={p(('True', 'False', 'None', str(r.randrange(64))))})")
        out += [f"    return {v}", ""]
        return out

    def _ts_block(self) -> list[str]:
        p, r = self.pick, self.rng
        fn, a, v = self.camel(), p(NOUNS), p(NOUNS)
        out = [f"export async function {fn}({a}: {p(TYPES_TS)}, opts?: {self.cls()}): {p(TYPES_TS)} {{"]
        for _ in range(r.randrange(2, 8)):
            k = r.randrange(5)
            if k == 0:
                out += [f"  if (!{v}) {{", f"    throw new Error(`{p(NOUNS)} ${{{a}}} is {p(ADJS)}`);", "  }"]
            elif k == 1:
                out.append(f"  // {self.comment()}")
            else:
                out.append(f"  const {v} = await {p(NOUNS)}.{self.camel()}({a}, {{ {p(NOUNS)}: {r.randrange(500)} }});")
        out += [f"  return {v};", "}", ""]
        return out

    def _go_block(self) -> list[str]:
        p, r = self.pick, self.rng
        recv, fn, v = p(NOUNS)[0], _upper_first(self.camel()), p(NOUNS)
        out = [f"// {fn} {self.sentence().lower()}", f"func ({recv} *{self.cls()}) {fn}(ctx context.Context, {p(NOUNS)} {p(TYPES_GO)}) ({p(TYPES_GO)}, error) {{"]
        for _ in range(r.randrange(2, 7)):
            if r.random() < 0.5:
                out += [f"\t{v}, err := {recv}.{p(NOUNS)}.{_upper_first(self.camel())}(ctx)", "\tif err != nil {", f'\t\treturn nil, fmt.Errorf("{p(VERBS)} {p(NOUNS)}: %w", err)', "\t}"]
            else:
                out.append(f"\t// {self.comment()}")
        out += [f"\treturn {v}, nil", "}", ""]
        return out

    def _md_block(self) -> list[str]:
        p, r = self.pick, self.rng
        out = [f"## {p(VERBS).capitalize()} the {p(NOUNS)}", "", self.sentence() + " " + self.sentence(), ""]
        out += [f"- {self.comment()}" for _ in range(r.randrange(1, 5))]
        if r.random() < 0.4:
            out += ["", "```bash", f"make {p(VERBS)}-{p(NOUNS)} ENV={p(('staging', 'dev', 'prod'))}", "```"]
        return out + [""]

    def _yaml_block(self) -> list[str]:
        p, r = self.pick, self.rng
        out = [f"{p(NOUNS)}:"]
        for _ in range(r.randrange(2, 7)):
            out.append(f"  {p(NOUNS)}_{p(NOUNS)}: {p((str(r.randrange(1, 9000)), 'true', 'false', p(NOUNS), f'${{{p(NOUNS).upper()}_URL}}'))}")
        if r.random() < 0.3:
            out.append(f"  # {self.comment()}")
        return out

    def grep_line(self, pattern: str) -> str:
        p, r = self.pick, self.rng
        k = r.randrange(5)
        if k == 0:
            return f"def {pattern}({p(NOUNS)}: {p(TYPES_PY)}) -> {p(TYPES_PY)}:"
        if k == 1:
            return f"from .{p(NOUNS)} import {pattern}"
        if k == 2:
            return f"    {p(NOUNS)} = {pattern}({p(NOUNS)}, {p(ADJS)}={r.randrange(100)})"
        if k == 3:
            return f"    # {pattern}: {self.comment()}"
        return f"        return self.{pattern}(ctx)"
