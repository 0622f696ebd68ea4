"""What the user and the assistant say, in English or Chinese, and the planted facts.

Planted facts are short, exact, checkable strings (a vault path, a port, a
decision) with random parts, so a retention score can search for each one
verbatim after compaction.
"""

from __future__ import annotations

from .vocab import ADJS, CJK_NOUNS, CJK_VERBS, ERRORS, NOUNS, VERBS, TextKit, past

__all__ = ["Prose"]

_FACTS_EN = (
    "The deploy key is stored in vault path secret/ci/deploy-{hex4}",
    "Use port {port} for the staging API",
    "We decided to keep {lib_a} and not migrate to {lib_b} for the {noun} service",
    "The staging database host is db-stg-{n}.{project}.internal",
    "Release branch for this work is release/{major}.{minor}.x",
    "The feature flag for the new {noun} path is {flag}",
    "Do not change the signature of {ident}(); the {noun} team calls it directly",
    "Partner API rate limit is {n} requests per minute",
    "The on-call contact for {noun} incidents is @{handle}",
    "Build artifacts go to s3://{project}-artifacts-{hex4}/builds",
    "The {noun} service must answer within {ms} ms at p99",
    "Test fixtures live in tests/fixtures/{noun}_{hex4}.json",
)
_FACTS_ZH = (
    "部署密钥存放在 vault 路径 secret/ci/deploy-{hex4}",
    "预发布环境的 API 使用端口 {port}",
    "我们决定{noun}服务继续使用 {lib_a}，不迁移到 {lib_b}",
    "{cn}相关故障请联系值班同学 @{handle}",
)
_LIBS = ("httpx", "requests", "aiohttp", "SQLAlchemy", "Peewee", "Celery", "RQ", "pydantic", "attrs", "structlog", "loguru")
_HANDLES = ("mei.chen", "j.okafor", "sam-r", "lina.v", "tkowalski", "priya_n", "dmitri", "aiko.s")


class Prose:
    def __init__(self, kit: TextKit, project: str) -> None:
        self.kit = kit
        self.rng = kit.rng
        self.project = project
        self._facts: set[str] = set()
        self._decks: dict[int, list[str]] = {}

    def _fill(self, template: str) -> str:
        r, p = self.rng, self.rng.choice
        libs = r.sample(_LIBS, 2)
        return template.format(
            hex4=self.kit.hexid(4).upper(), port=r.randrange(3000, 9999), lib_a=libs[0], lib_b=libs[1], noun=p(NOUNS),
            n=r.randrange(2, 600), project=self.project, major=r.randrange(1, 9), minor=r.randrange(0, 30),
            flag=f"FF_{p(NOUNS).upper()}_{p(ADJS).upper()}", ident=self.kit.ident(), handle=p(_HANDLES),
            ms=r.randrange(50, 900), cn=p(CJK_NOUNS),
        )

    def fact(self) -> str:
        """A new planted fact, unique within the session."""
        for _ in range(200):
            pool = _FACTS_ZH if self.kit.chinese() else _FACTS_EN
            # Templates are dealt like cards, so facts differ in kind before any kind repeats.
            deck = self._decks.setdefault(id(pool), [])
            if not deck:
                deck.extend(self.rng.sample(pool, len(pool)))
            text = self._fill(deck.pop())
            if text not in self._facts and not any(text in f or f in text for f in self._facts):
                self._facts.add(text)
                return text
        raise RuntimeError("could not draw a unique fact")  # pragma: no cover

    # -- user --------------------------------------------------------------------
    def task(self, path: str) -> str:
        p = self.rng.choice
        if self.kit.chinese():
            return p((
                f"测试 `tests/test_{p(NOUNS)}.py` 在上次重构后开始失败，报 `{p(ERRORS)}`。请找到原因并修复，确保所有测试通过。",
                f"请重构{p(CJK_NOUNS)}和{p(CJK_NOUNS)}的处理逻辑，把重复的代码合并到 `{path}` 里，不要改变对外接口。",
            ))
        return p((
            f"The test `tests/test_{p(NOUNS)}.py::test_{self.kit.ident()}` fails with `{p(ERRORS)}` since the last refactor of the "
            f"{p(NOUNS)} {p(NOUNS)}. Please find the cause, fix it, and make sure the whole suite passes.",
            f"Please add retry with exponential backoff to the {p(NOUNS)} client in `{path}`. Keep the public API unchanged and add tests.",
            f"Refactor the {p(NOUNS)} handling so that {p(ADJS)} {p(NOUNS)}s are {past(p(VERBS))} in one place (start with `{path}`). "
            "Read the code first; don't change behaviour.",
        ))

    def follow_up(self, path: str) -> str:
        p = self.rng.choice
        if self.kit.chinese():
            return p((f"另外，请确认{p(CJK_NOUNS)}在关闭缓存时也能正常{p(CJK_VERBS)}。", f"先别改 `{path}`，那个文件归别的组维护。",
                      f"能再加一个{p(CJK_NOUNS)}为空时的测试吗？"))
        return p((
            f"Also make sure the {p(NOUNS)} path still works when the {p(NOUNS)} cache is disabled.",
            f"Please don't touch `{path}` for now, another team owns it.",
            f"Can you also add a test for the {p(ADJS)} {p(NOUNS)} case?",
            f"Actually, keep the old {p(NOUNS)} behaviour behind a flag for one release.",
            "Looks good so far. Continue, but run the full test suite before you finish.",
        ))

    @staticmethod
    def with_facts(text: str, facts: list[str]) -> str:
        if not facts:
            return text
        return text + "\n\n" + "\n".join(f"Important: {f}." for f in facts)

    # -- assistant ---------------------------------------------------------------
    def before_tool(self, name: str, target: str) -> str:
        p = self.rng.choice
        if self.kit.chinese():
            if name == "Bash":
                return p((f"运行 `{target}` 看看结果。", "再跑一次确认一下。"))
            return p((f"我先看一下 `{target}`。", f"用 {name} 检查一下{p(CJK_NOUNS)}的{p(CJK_VERBS)}逻辑。", "继续排查。"))
        if name == "Bash":
            return p((f"Let me run `{target}`.", "Let me run that again to confirm.", f"Running `{target}` to see the current state."))
        if name == "Grep":
            return p((f"Let me search for `{target}`.", f"I'll grep for `{target}` to find its callers."))
        if name in ("Glob", "LS"):
            return p(("Let me list the files first.", "I'll look at the layout of the project."))
        return p((f"Let me look at `{target}`.", f"I'll read `{target}` to check how the {p(NOUNS)} is {past(p(VERBS))}.",
                  f"Now let me check `{target}` to see where the {p(NOUNS)} comes from."))

    def thinking(self, path: str) -> str:
        p = self.rng.choice
        if self.kit.chinese():
            return f"用户要{p(CJK_VERBS)}{p(CJK_NOUNS)}。问题可能出在{p(CJK_NOUNS)}被{p(CJK_VERBS)}了两次，先读 {path} 再决定怎么改。"
        return (f"The {p(NOUNS)} is probably {past(p(VERBS))} twice: once in the {p(NOUNS)} and once in the {p(NOUNS)}. "
                f"Before editing anything I should read {path} and check the {p(ADJS)} case.")

    def report(self, path: str) -> str:
        p = self.rng.choice
        if self.kit.chinese():
            return f"已经{p(CJK_VERBS)}了{p(CJK_NOUNS)}的逻辑，相关测试都通过了。下一步我会看一下 `{path}`。"
        return f"I've {past(p(VERBS))} the {p(NOUNS)} {p(NOUNS)} and the related tests pass. Next I'll look at `{path}`."

    def final(self, paths: list[str]) -> str:
        r, p = self.rng, self.rng.choice
        if self.kit.chinese():
            return "完成了。修改内容：\n" + "\n".join(f"- `{x}`：{p(CJK_VERBS)}{p(CJK_NOUNS)}" for x in paths) + f"\n\n全部 {r.randrange(20, 900)} 个测试通过。"
        return ("Done. Summary of the changes:\n" + "\n".join(f"- `{x}`: {p(VERBS)} the {p(ADJS)} {p(NOUNS)}" for x in paths)
                + f"\n\nAll {r.randrange(20, 900)} tests pass.")
