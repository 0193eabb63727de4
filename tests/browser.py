"""A real Chromium driven by Playwright, one for the whole test session (tests/dashboard, tests/fleet):
Playwright's sync API runs one instance per process. Chromium is Debian's (/usr/bin/chromium); if it is
missing the tests fail, they never skip. Screenshots go to test-artifacts/ for a person to look at."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="session")
def browser():  # noqa: ANN201
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)  # htmx refreshes every 5 s; a loaded CI machine is slower

    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: install Debian's Chromium "
        "(apt-get install -y --no-install-recommends chromium)"
    )
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):  # noqa: ANN001, ANN201
    """A fresh browser context per test; console errors (a CSP violation, a JS exception) are collected."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(15_000)
    p = context.new_page()
    p.errors = []  # type: ignore[attr-defined]
    p.dialogs = []  # type: ignore[attr-defined]
    p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: p.errors.append(str(e)))

    def on_dialog(d) -> None:  # noqa: ANN001
        p.dialogs.append(d.message)
        d.dismiss()

    p.on("dialog", on_dialog)
    try:
        yield p
    finally:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
