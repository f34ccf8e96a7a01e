"""The steward's and the analyst's first minutes, in headless Chromium driven by Selenium.

The steward signs in, registers a dataset and creates an analyst (whose token the page shows
once); the analyst signs in, reads the schema, runs a dry run, submits a fit and reads the
result page (its plot must load); the admin page then lists the release. A screenshot of
every step is written to ``tmp_path/screenshots`` (and to ``$DPFIT_SERVE_SCREENSHOTS`` when
set), for a human to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dpfit.serve import init_site
from dpfit.serve.testing import running_server

from .conftest import SCHEMA, synthetic

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(monkeypatch):
    from selenium import webdriver

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must not download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        "--disable-extensions",
        "--no-first-run",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    driver.implicitly_wait(10)
    yield driver
    driver.quit()


class Steps:
    """Screenshots of a driven browser, numbered in order."""

    def __init__(self, driver, folder: Path) -> None:
        self.driver, self.folder, self.count = driver, folder, 0
        folder.mkdir(parents=True, exist_ok=True)

    def shot(self, name: str) -> Path:
        self.driver.set_window_size(1280, 600)  # then grow to the page's own height
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1280, max(800, min(int(height) + 120, 6000)))
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        assert self.driver.save_screenshot(str(path))
        return path

    def fill(self, element_id: str, text: str) -> None:
        field = self.driver.find_element("id", element_id)
        field.clear()
        field.send_keys(text)

    def click(self, css: str) -> None:
        """Click a button or link that loads a page, and wait until the new one is there."""
        self._load(self.driver.find_element("css selector", css))

    def follow(self, text: str) -> None:
        self._load(self.driver.find_element("link text", text))

    def _load(self, element) -> None:
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.wait import WebDriverWait

        old = self.driver.find_element("tag name", "html")
        element.click()
        WebDriverWait(self.driver, 60).until(expected_conditions.staleness_of(old))

    def text(self) -> str:
        return self.driver.find_element("tag name", "main").text

    def sign_in(self, url: str, token: str) -> None:
        self.driver.get(url + "/login")
        self.fill("token", token)
        self.click("main form button[type=submit]")

    def sign_out(self) -> None:
        self.click("form.signout button")


@pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="BROWSER TEST SKIPPED: chromium or chromedriver is not installed (apt-get install "
    "-y chromium chromium-driver); dpfit serve's pages were NOT checked in a browser",
)
@pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")
def test_first_minutes_of_a_steward_and_an_analyst(tmp_path, browser):
    synthetic(3000).to_csv(tmp_path / "survey.csv", index=False)
    (tmp_path / "schema.toml").write_text(SCHEMA)
    _, steward = init_site(tmp_path / "site")
    steps = Steps(browser, tmp_path / "screenshots")
    with running_server(tmp_path / "site") as server:
        steps.sign_in(server.url, steward)
        assert browser.find_element("tag name", "h1").text == "Admin"
        steps.shot("admin-empty")
        steps.fill("ds-name", "survey")
        steps.fill("ds-data", str(tmp_path / "survey.csv"))
        steps.fill("ds-schema", str(tmp_path / "schema.toml"))
        steps.fill("ds-rho", "2")
        steps.fill("ds-delta", "1e-6")
        steps.click("form[action='/admin/datasets'] button")
        assert "Done: dataset registered." in steps.text() and "3000" in steps.text()
        steps.shot("dataset-registered")
        steps.fill("an-name", "alice")
        steps.fill("an-dataset", "survey")
        steps.fill("an-rho", "0.5")
        steps.click("form[action='/admin/analysts'] button")
        token = browser.find_element("id", "new-token").text
        assert len(token) == 43
        steps.shot("analyst-token-shown-once")
        steps.sign_out()

        steps.sign_in(server.url, token)
        assert "Your datasets" in steps.text() and "0.5" in steps.text()
        steps.shot("analyst-datasets")
        steps.follow("survey")
        caption = browser.find_element("css selector", "#schema-heading + table caption")
        assert caption.text.startswith("The columns a formula may use")
        assert "a, b, c" in steps.text() and "[0, 10]" in steps.text()
        steps.shot("schema")
        steps.fill("formula", "y ~ x1 + x2 + g")
        steps.fill("rho", "0.2")
        steps.click("button[value=dry-run]")
        cost = browser.find_element("css selector", "[role=status]").text
        assert "epsilon at delta = 1e-06" in cost and "0.3 after this fit" in cost
        steps.shot("dry-run")
        steps.click("button[value=submit]")
        assert browser.find_element("tag name", "h1").text.startswith("Release")
        assert "Released coefficients with 95% intervals" in steps.text()
        assert "0.2-zCDP" in steps.text() and "0.3 of 0.5" in steps.text()
        plot = browser.find_element("css selector", "figure img")
        assert browser.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0", plot
        )
        steps.shot("result")
        steps.follow("All your requests")
        assert "y ~ x1 + x2 + g" in steps.text() and "released" in steps.text()
        steps.shot("history")
        steps.sign_out()

        steps.sign_in(server.url, steward)
        releases = browser.find_element("css selector", "#releases-heading ~ table").text
        assert "alice survey ols y ~ x1 + x2 + g 0.2 released" in releases
        steps.shot("admin-shows-the-release")
    keep = os.environ.get("DPFIT_SERVE_SCREENSHOTS")
    if keep:
        shutil.copytree(steps.folder, keep, dirs_exist_ok=True)
    assert steps.count == 9
