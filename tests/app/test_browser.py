"""One end-to-end run of the lab in a real browser: Debian's Chromium driven by Playwright.

The app runs as ``streamlit run lab/app.py`` in a subprocess on a free local
port. The test uploads a transcript (a corpus session when LAB_CORPUS is set,
else a Claude Code session of sample_sessions/), moves the watermark slider with
the keyboard, visits every page (a screenshot of each goes to
test-artifacts/), and downloads the config from the Export page to check
that it carries the moved value.

Chromium comes from apt (``.ci/run`` installs it); ``playwright install`` is
never used. Without /usr/bin/chromium the test is skipped, unless
LAB_REQUIRE_BROWSER=1 (set by CI), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from lab.core import preset
from tests.conftest import CORPUS, ROOT, SAMPLES, corpus_file

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"
# A real session when there is a corpus; a fresh clone has only its own samples.
CORPUS_TRANSCRIPT = "claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl"
SAMPLE_TRANSCRIPT = SAMPLES / "generated-claude-code.jsonl"
STEPS_DOWN = 5  # ArrowLeft presses on the watermark ratio: 0.85 -> 0.80
START_TIMEOUT = 90.0
WAIT_MS = 120_000


def _require_browser() -> None:
    if Path(CHROMIUM).is_file():
        return
    reason = f"Chromium not found at {CHROMIUM} (apt-get install chromium; never `playwright install`)"
    if os.environ.get("LAB_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + "; LAB_REQUIRE_BROWSER=1 makes this a failure")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:  # noqa: S310 - our local server
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app, served by Streamlit on 127.0.0.1; killed at teardown whatever happened."""
    _require_browser()
    tmp = tmp_path_factory.mktemp("browser")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(HOME=str(tmp / "home"), LAB_APP_TMP=str(tmp / "app"), PYTHONPATH=str(ROOT))
    (tmp / "home").mkdir()
    log = (tmp / "server.log").open("wb")
    cmd = [
        sys.executable, "-m", "streamlit", "run", "lab/app.py",
        "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        # Other edits to the tree must not reload modules under the running test (class identity breaks).
        "--server.fileWatcherType", "none",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"streamlit did not come up on {url}:\n{(tmp / 'server.log').read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


def _idle(page: object) -> None:
    """Wait until the app has finished its current run (the status widget says nothing)."""
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')?.innerText.includes('Running')",
        timeout=WAIT_MS,
    )


def _open(page: object, name: str) -> None:
    """Go to a page through the sidebar (a new URL would start a new session and lose the upload)."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=name).click()  # type: ignore[attr-defined]
    page.locator("h1", has_text=name).first.wait_for(timeout=WAIT_MS)  # type: ignore[attr-defined]
    _idle(page)


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"browser-{name}.png"), full_page=True)  # type: ignore[attr-defined]


@pytest.mark.timeout(600)
def test_upload_tune_look_and_export_in_a_real_browser(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    transcript = corpus_file(CORPUS_TRANSCRIPT) if CORPUS is not None else SAMPLE_TRANSCRIPT
    assert transcript.is_file(), f"transcript missing: {transcript}"
    default_ratio = preset("minicode").watermark.ratio
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            page.set_default_timeout(WAIT_MS)
            page.goto(server)

            # Session: upload a real transcript through the file input.
            page.locator('[data-testid="stFileUploader"] input[type=file]').first.set_input_files(str(transcript))
            page.get_by_role("heading", name="Overview").wait_for()
            sidebar = page.locator('[data-testid="stSidebar"]')
            expect(sidebar).to_contain_text(transcript.name, timeout=WAIT_MS)
            _idle(page)
            _shot(page, "session")

            # Pipeline: open the watermark section and move its ratio slider with the keyboard.
            _open(page, "Pipeline")
            section = page.locator('[data-testid="stExpander"]').filter(has=page.locator("summary", has_text="Watermark"))
            section.locator("summary").click()
            thumb = section.locator('[data-testid="stSlider"]').filter(has_text="Ratio").first.get_by_role("slider")
            thumb.focus()
            for _ in range(STEPS_DOWN):
                page.keyboard.press("ArrowLeft")
            expect(sidebar).to_contain_text("+ 1 change(s)", timeout=WAIT_MS)
            _idle(page)
            _shot(page, "pipeline")

            # Every other page renders with the uploaded session and the moved slider.
            for name in ("Timeline", "Diff", "Summary", "Compare"):
                _open(page, name)
                expect(page.locator('[data-testid="stException"]')).to_have_count(0)
                if name == "Timeline":
                    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible(timeout=WAIT_MS)
                _shot(page, name.lower())

            # Export: download the config and check what it holds.
            _open(page, "Export")
            expect(page.locator('[data-testid="stException"]')).to_have_count(0)
            _shot(page, "export")
            with page.expect_download() as info:
                page.get_by_role("button", name="Config as JSON").click()
            target = tmp_path / "compaction.json"
            info.value.save_as(target)
        finally:
            browser.close()

    config = json.loads(target.read_text(encoding="utf-8"))
    assert config["label"] == "minicode"
    assert config["watermark"]["ratio"] != default_ratio
    assert config["watermark"]["ratio"] == pytest.approx(default_ratio - STEPS_DOWN * 0.01)
