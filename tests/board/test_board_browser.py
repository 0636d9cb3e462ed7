"""The page in real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by selenium; no browser is downloaded): load it, click a column, see the agent
answer and the oracle's marks, click a full column and see the message, and a
screenshot in which the board is drawn."""

from __future__ import annotations

import io
import os
import shutil

import numpy as np
import pytest

from board.cli import BackgroundServer
from board.session import Table
from tests.board.conftest import ScriptedAgent

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        message = "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        if os.geteuid() == 0:  # CI runs as root and make test installs them: missing there is a failure
            pytest.fail(message + "; make test installs them (.ci/system-deps)")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1300,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _wait(driver, condition, timeout=20):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: condition(d))


def test_play_a_column_see_the_reply_the_marks_and_an_illegal_click(browser, connect4, c4_oracle, tmp_path):
    from selenium.webdriver.common.by import By
    from PIL import Image
    # The agent opens with column 1, which loses a won position (the empty board is won only
    # by the centre: Allis 1988): a blunder; then it answers the person in column 4.
    table = Table(connect4, ScriptedAgent([0, 3, 3, 3], connect4), oracle=c4_oracle)
    with BackgroundServer(table) as server:
        browser.get(server.url + "/")
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#board rect.column"))
        scores = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#board text.col-score")]
        assert scores == ["-2", "-1", "0", "+1", "0", "-1", "-2"]  # the oracle over each column, as published
        browser.find_element(By.ID, "new-second").click()
        _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history li")) == 1)
        column = '#board rect.column[data-action="3"]'
        for n in (3, 5, 7):  # the person fills column 4 with the agent: six discs
            browser.find_element(By.CSS_SELECTOR, column).click()
            _wait(browser, lambda d, n=n: len(d.find_elements(By.CSS_SELECTOR, "#history li")) == n)
        plies = browser.find_elements(By.CSS_SELECTOR, "#history li")
        assert plies[0].text.startswith("agent: 1") and plies[1].text.startswith("human: 4")
        assert plies[2].text.startswith("agent: 4")
        assert "blunder" in plies[0].text and "the position was a win" in plies[0].text
        marks = browser.find_elements(By.CSS_SELECTOR, "#history .mark")
        assert len(marks) == 7 and {m.text for m in marks} <= {"optimal", "inaccuracy", "error", "blunder"}
        assert browser.find_elements(By.CSS_SELECTOR, "#board circle.ply-mark.blunder")  # ringed on the board
        assert len(browser.find_elements(By.CSS_SELECTOR, "#agent-values tr")) == 1 + 7  # the agent's values
        assert "1 blunder" in browser.find_element(By.ID, "mark-counts").text
        browser.find_element(By.CSS_SELECTOR, column).click()
        message = _wait(browser, lambda d: d.find_element(By.ID, "message").text or None)
        assert message == "action 3 (4) is illegal: column 4 is full"
        assert "error" in browser.find_element(By.ID, "message").get_attribute("class")
        # The board is drawn: the SVG is there and its screenshot is mostly the board's blue.
        svg = browser.find_element(By.ID, "board")
        assert svg.size["width"] >= 7 * 60 and svg.size["height"] >= 6 * 60
        rgb = np.asarray(Image.open(io.BytesIO(svg.screenshot_as_png)).convert("RGB"), np.int64)  # [H, W, 3]
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        blue = ((b > 150) & (r < 80) & (g < 130)).mean()  # the board's frame
        discs = ((r > 180) & (b < 90)).mean()  # red and yellow discs
        assert blue > 0.3 and discs > 0.02, (blue, discs)
        # A recorded game, opened from a file: every move marked, stepped back a ply.
        record = tmp_path / "game.txt"
        record.write_text("4441")
        browser.find_element(By.ID, "replay-file").send_keys(str(record))
        browser.find_element(By.ID, "replay-load").click()
        _wait(browser, lambda d: d.find_element(By.ID, "replay-pos").text == "4 / 4")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#history .mark")) == 4
        browser.find_element(By.ID, "replay-back").click()
        _wait(browser, lambda d: d.find_element(By.ID, "replay-pos").text == "3 / 4")
        assert "replay of game.txt" in browser.find_element(By.ID, "status").text


def test_a_chomp_square_takes_a_click_through_its_label(browser):
    import games
    from selenium.webdriver.common.by import By
    chomp = games.make("chomp", rows=3, cols=4)
    table = Table(chomp, ScriptedAgent([1], chomp), oracle=Table.oracle_for(chomp))
    with BackgroundServer(table) as server:
        browser.get(server.url + "/")
        cell = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#board rect.cell[data-action="11"]'))[0]
        labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#board text.oracle")]
        assert sorted(set(labels)) == ["loss", "win"]  # 3x4 is a first-player win: some squares win
        cell.click()  # at its centre, where the oracle's label is drawn
        _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history li")) == 2)
        assert browser.find_element(By.CSS_SELECTOR, "#history li").text.startswith("human: r2c3")
