"""The inspector in a real headless Chromium: click through a corrected tenant.

Skips (with the reason) where Chromium, chromedriver or Selenium is missing;
``.ci/run`` installs them. Screenshots go to a private temporary directory;
with ``MEMSTORE_UPDATE_SCREENSHOT=1`` the tenant page is also saved as
``docs/inspector.png`` (the picture of docs/inspector.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inspect_support import TOKEN, XSS, running_inspector, seed_sync

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
README_SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "inspector.png"


def _missing() -> str | None:
    if CHROMIUM is None or CHROMEDRIVER is None:
        return (
            "no Chromium: install Debian's chromium and chromium-driver "
            "(apt-get install -y chromium chromium-driver; .ci/run does)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture
def private_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memstore-inspect-browser-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def browser(private_dir: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1800",
        f"--user-data-dir={private_dir / 'profile'}",
    ):
        options.add_argument(flag)
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(private_dir / "driver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def wait_loaded(browser: Any) -> None:
    """Until the page has loaded and its deferred script has run."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 60).until(
        lambda b: b.execute_script("return document.readyState") == "complete"
    )


def test_click_through_a_corrected_tenant(
    db_url: str, browser: Any, private_dir: Path, backend: str
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    seeded = seed_sync(db_url)
    shots = private_dir / "shots"
    shots.mkdir()
    with running_inspector(db_url) as base:
        browser.get(f"{base}/?token={TOKEN}")  # once; then the HttpOnly cookie
        assert "token" not in browser.current_url
        links = {a.text: a for a in browser.find_elements(By.CSS_SELECTOR, "a.tenant-link")}
        assert set(links) == {"alice", "bob"}
        browser.save_screenshot(str(shots / "tenants.png"))
        links["alice"].click()
        WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.ID, "tenant-name"))
        wait_loaded(browser)
        assert browser.find_element(By.ID, "tenant-name").text == "alice"
        # The cookie is HttpOnly: page scripts cannot read the token.
        assert browser.execute_script("return document.cookie") == ""

        bars = browser.find_elements(By.CSS_SELECTOR, "g.bar")
        status = {}
        for bar in bars:
            title = bar.find_element(By.TAG_NAME, "title").get_attribute("textContent")
            status.setdefault(title, []).append(bar)
        # Paris: the original (superseded by the correction) and its copy ending in
        # June; London current; the cat retracted.
        assert sorted(status) == sorted(
            [
                "Paris (superseded)",
                "Paris (current)",
                f"London {XSS} (current)",
                "a cat named Mimi (retracted)",
            ]
        )
        assert browser.execute_script("return window.__pwned") is None

        # Click the London bar: its source episode and confidence.
        london = status[f"London {XSS} (current)"][0]
        london.click()
        detail = browser.find_element(By.ID, london.get_attribute("data-detail"))
        assert detail.is_displayed()
        assert detail.find_element(By.CSS_SELECTOR, ".confidence").text == "0.80"
        assert seeded.london_episode in detail.text
        assert "Now I live in London" in detail.text
        browser.save_screenshot(str(shots / "london.png"))

        retracted = status["a cat named Mimi (retracted)"][0]
        retracted.click()
        detail = browser.find_element(By.ID, retracted.get_attribute("data-detail"))
        assert "retracted" in detail.text and "No source episodes" in detail.text

        # "As known at": step back to before the correction.
        slider = browser.find_element(By.ID, "known-at")
        slider.send_keys(Keys.HOME)
        assert browser.find_element(By.ID, "known-at-label").text.startswith("2026-07-01")

        def unknown(bar: Any) -> bool:
            return "unknown" in (bar.get_attribute("class") or "").split()

        # Before the correction only the original Paris row was known.
        assert not unknown(status["Paris (superseded)"][0])
        assert unknown(london) and unknown(status["Paris (current)"][0])
        assert unknown(retracted)
        slider.send_keys(Keys.END)
        assert browser.find_element(By.ID, "known-at-label").text == "now"
        assert unknown(status["Paris (superseded)"][0]) and not unknown(london)
        assert unknown(retracted)  # retracted: not believed now

        # The transaction-time table names each change and when it was recorded.
        events = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#changes tr.change")]
        assert any("superseded" in e and "Paris" in e for e in events)
        assert any("retracted" in e and "Mimi" in e for e in events)

        # Search: recall_scored with its score parts.
        box = browser.find_element(By.ID, "q")
        box.send_keys("paris")
        browser.find_element(By.ID, "search-button").click()
        # A form submit loads a new page: wait for it rather than read the old one.
        WebDriverWait(browser, 60).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#hits tr.hit"))
        wait_loaded(browser)
        hits = browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
        assert hits and "Paris" in hits[0].text
        dense = hits[0].find_element(By.CSS_SELECTOR, ".part-dense").text
        assert dense != "\u2013" and float(dense) > 0
        float(hits[0].find_element(By.CSS_SELECTOR, ".part-keyword").text)
        browser.save_screenshot(str(shots / "search.png"))

        # Blocks: history with a diff of the append.
        added = browser.find_elements(By.CSS_SELECTOR, "#blocks pre.diff .dadd")
        assert any("Use metric units." in a.get_attribute("textContent") for a in added)

        browser.get(f"{base}/t/alice")
        browser.find_element(By.CSS_SELECTOR, "g.bar").click()
        browser.set_window_size(1400, 1100)
        browser.save_screenshot(str(shots / "alice.png"))
    assert (shots / "alice.png").stat().st_size > 10_000
    if backend == "sqlite" and os.environ.get("MEMSTORE_UPDATE_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shots / "alice.png", README_SCREENSHOT)
