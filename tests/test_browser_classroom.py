"""The classroom in a real browser: nbgrader's JupyterLab extensions driven by headless
Debian Chromium through Playwright (as ``tests/test_browser.py`` drives the widgets).

The course is built from the kit's sources (the build-it-yourself assignment, its first
stage only), generated and released from the command line.  Then:

* **the student**, in a JupyterLab started in a home folder of their own (their
  ``~/.jupyter/nbgrader_config.py`` names the course ``dualarr``, the course's exchange
  and their student id), opens *Nbgrader → Assignment List*, sees the released
  assignment, clicks *Fetch*, opens the fetched notebook from the list, writes the answer
  of ``read`` (the source notebook's solution) into its answer cell, saves, clicks
  *Submit* and sees the submission listed;
* **the instructor** collects and autogrades from the command line, exports the grades,
  opens *Nbgrader → Formgrader* in a JupyterLab started in the course folder, goes to
  *Manage Students*, sees the student's overall score, then the student's page with the
  assignment's and the notebook's score, then the same score in the gradebook (*Manual
  Grading*): the points the command-line export gives (1 of 4: ``read`` only).

Screenshots ``classroom-*.png`` go to ``build/browser-screenshots/`` (or
``$DUALARR_SCREENSHOTS``).  Skipped, with the reason, where Chromium, Playwright or
nbgrader is missing.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lab_server import CHROMIUM, CHROMIUM_ARGS, jupyter_lab, screenshots

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COURSE_ID = "dualarr"
ASSIGNMENT = "build-it-yourself"
NOTEBOOK = "a-tracing-and-evaluation.ipynb"
STUDENT = "ada"
POINTS, MAX_POINTS = 1, 4  # the answer of read passes its check, and only that one
LIST_ID = f"nbgrader-{COURSE_ID}-{ASSIGNMENT}"  # nbgrader's id of the assignment's rows

pytestmark = pytest.mark.browser


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(screenshots() / f"classroom-{name}.png"))


def _env() -> dict[str, str]:
    """The environment of nbgrader's commands and servers: the venv's ``bin`` first (for
    ``alembic``), a short grading time limit."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "DUALARR_GRADING_TIMEOUT": "20"}


def nbgrader(course: Path, *args: str) -> str:
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@contextmanager
def _browser_on(base: str, token: str) -> Iterator[Any]:
    """A 1400 x 1000 Chromium page on JupyterLab at ``base``, the app restored."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab?token={token}")
            page.wait_for_function("() => !!window.jupyterapp", timeout=120_000)
            page.evaluate("() => window.jupyterapp.restored")
            yield page
        finally:
            browser.close()


def _nbgrader_menu(page: Any, command: str) -> None:
    """Click *Nbgrader* in the menu bar, then the item running ``command``."""
    page.locator('#jp-MainMenu .lm-MenuBar-itemLabel:text-is("Nbgrader")').click()
    page.locator(f'#jp-mainmenu-nbgrader li[data-command="{command}"]').click()


def _rows(page: Any, status: str, count: int) -> Any:
    """The assignment list's ``status`` section (released, fetched, submitted), loaded,
    with ``count`` rows."""
    from playwright.sync_api import expect

    for part in ("loading", "placeholder", "error"):
        expect(page.locator(f"#{status}_assignments_list_{part}")).to_be_hidden(
            timeout=60_000
        )
    rows = page.locator(f"#{status}_assignments_list > .list_item")
    expect(rows).to_have_count(count, timeout=60_000)
    return rows


def _answer(source: str) -> str:
    """A solution cell as a student writes it: the solution without nbgrader's markers."""
    return "".join(
        line for line in source.splitlines(keepends=True)
        if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
    ).rstrip()


def _read_answer(course: Path) -> str:
    cells = json.loads((course / "source" / ASSIGNMENT / NOTEBOOK).read_text())["cells"]
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["metadata"].get("nbgrader", {}).get("solution") and "def read(" in source:
            return _answer(source)
    raise AssertionError("no answer cell defines read")


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course, its assignment released: the course folder (``<root>/course``)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium fonts-liberation; "
            ".ci/setup.sh does it when run as root)"
        )
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (the classroom extra)")
    from dualarr.teach.classroom import build_course

    course = tmp_path_factory.mktemp("classroom-browser") / "course"
    build_course(course, [ASSIGNMENT])
    for other in (course / "source" / ASSIGNMENT).glob("*.ipynb"):
        if other.name != NOTEBOOK:  # one stage: the browser, not the track, is under test
            other.unlink()
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    nbgrader(course, "release_assignment", ASSIGNMENT, "--force")
    return course


@pytest.fixture(scope="module")
def submitted(classroom: Path) -> Path:
    """The student's session in the browser: fetch, answer ``read``, save, submit.
    The student's home folder."""
    from playwright.sync_api import expect

    course = classroom
    home = course.parent / "homes" / STUDENT
    config = home / ".jupyter"
    config.mkdir(parents=True)
    # The student's own configuration (a JupyterHub image would ship it): the course,
    # the exchange, the id their submissions go under, and a cache in their home.
    (config / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.CourseDirectory.student_id = {STUDENT!r}\n"
        f"c.Exchange.root = {str(course / 'exchange')!r}\n"
        f"c.Exchange.cache = {str(home / '.nbgrader-cache')!r}\n",
        encoding="utf-8",
    )
    answer = _read_answer(course)
    env = {**_env(), "JUPYTER_CONFIG_DIR": str(config)}
    with jupyter_lab(home, course.parent / "student-lab", env) as (base, token), \
            _browser_on(base, token) as page:
        _nbgrader_menu(page, "nbgrader:open-assignment-list")
        tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="Assignments")
        expect(tab).to_be_visible(timeout=30_000)
        expect(page.locator("#course_list_default")).to_have_text(COURSE_ID, timeout=60_000)

        # The released assignment, fetched.
        released = _rows(page, "released", 1)
        expect(released.first.locator(".item_name")).to_have_text(ASSIGNMENT)
        expect(released.first.locator(".item_course")).to_have_text(COURSE_ID)
        _shot(page, "01-student-released")
        fetch = released.first.locator(".item_status button")
        expect(fetch).to_have_text("Fetch")
        fetch.click()
        fetched = _rows(page, "fetched", 1)
        expect(fetched.first.locator(".item_name").first).to_have_text(ASSIGNMENT)
        assert (home / ASSIGNMENT / NOTEBOOK).is_file(), "the fetch wrote no notebook"
        page.locator(f"#fetched_assignments_list a:text-is('{ASSIGNMENT}')").click()
        notebooks = page.locator(f"#{LIST_ID}.collapse.in .list_item")
        link = notebooks.locator(f"a:text-is('{Path(NOTEBOOK).stem}')")
        expect(link).to_be_visible(timeout=30_000)
        _shot(page, "02-student-fetched")

        # The fetched notebook, opened from the list: the answer of read, saved.
        link.click()
        path = f"{ASSIGNMENT}/{NOTEBOOK}"
        page.wait_for_function(
            "(path) => { const w = window.jupyterapp?.shell?.currentWidget;"
            " return w?.context?.path === path && w.context.isReady; }",
            arg=path, timeout=120_000,
        )
        index = page.evaluate(
            """() => {
              const panel = window.jupyterapp.shell.currentWidget;
              const cells = panel.content.widgets;
              const k = cells.findIndex((c) => c.model.sharedModel.getSource()
                .includes('def read(') && c.model.type === 'code');
              panel.content.activeCellIndex = k;
              panel.content.scrollToItem(k, 'center');
              return k;
            }"""
        )
        assert index >= 0, "the fetched notebook has no cell defining read"
        cell = page.locator(".jp-Notebook .jp-Cell.jp-mod-active")
        expect(cell).to_contain_text("raise NotImplementedError()", timeout=30_000)
        editor = cell.locator(".cm-content")
        editor.click()
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.insert_text(answer)
        typed = page.evaluate(
            "(k) => window.jupyterapp.shell.currentWidget.content.widgets[k]"
            ".model.sharedModel.getSource()", index,
        )
        assert typed == answer, f"the cell holds {typed!r}"
        expect(cell).to_contain_text("np.zeros(array.shape[len(ix) :], array.dtype)")
        page.keyboard.press("ControlOrMeta+s")
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
            timeout=30_000,
        )
        cells = json.loads((home / path).read_text())["cells"]
        assert any("".join(c["source"]) == answer for c in cells), "the answer was not saved"
        _shot(page, "03-student-answered-read")

        # Submitted from the assignment list.
        tab.click()
        fetched = _rows(page, "fetched", 1)
        submit = fetched.first.locator('.item_status button:text-is("Submit")')
        submit.click()
        rows = _rows(page, "submitted", 1)
        expect(rows.first.locator(".item_name").first).to_have_text(ASSIGNMENT)
        expect(rows.first.locator(".item_course").first).to_have_text(COURSE_ID)
        # nbgrader's list: an empty first row, then one row (a timestamp) per submission
        expect(page.locator(f"#{LIST_ID}-submissions > .list_item")).to_have_count(2)
        _shot(page, "04-student-submitted")
    inbound = list((course / "exchange" / COURSE_ID / "inbound").glob(f"{STUDENT}+{ASSIGNMENT}+*"))
    assert len(inbound) == 1, inbound
    return home


def test_student_fetches_answers_and_submits_in_the_assignment_list(
    classroom: Path, submitted: Path
) -> None:
    inbound = next((classroom / "exchange" / COURSE_ID / "inbound").glob(f"{STUDENT}+*"))
    cells = json.loads((inbound / NOTEBOOK).read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells]
    assert _read_answer(classroom) in sources  # the answer written in the browser
    assert sum("raise NotImplementedError()" in s for s in sources) >= 1  # the rest: stubs


def test_instructor_sees_the_grade_in_the_formgrader(classroom: Path, submitted: Path) -> None:
    from playwright.sync_api import expect

    course = classroom
    nbgrader(course, "db", "student", "add", STUDENT, "--first-name=Ada", "--last-name=Lovelace")
    nbgrader(course, "collect", ASSIGNMENT)
    nbgrader(course, "autograde", ASSIGNMENT, "--create", "--force")
    nbgrader(course, "export", "--to", str(course / "grades.csv"))
    with (course / "grades.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT]
    assert [r["student_id"] for r in rows] == [STUDENT]
    score, max_score = float(rows[0]["raw_score"]), float(rows[0]["max_score"])
    assert (score, max_score) == (POINTS, MAX_POINTS)
    shown = f"{score:g} / {max_score:g}"  # as the formgrader rounds and writes it

    with jupyter_lab(course, course.parent / "instructor-lab", _env()) as (base, token), \
            _browser_on(base, token) as page:
        _nbgrader_menu(page, "nbgrader:open-formgrader")
        tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="Formgrader")
        expect(tab).to_be_visible(timeout=30_000)
        grader = page.frame_locator("#jp-main-dock-panel iframe")
        expect(grader.locator(".breadcrumb li")).to_have_text(["Assignments"], timeout=60_000)
        assignment = grader.locator("#main-table tr", has_text=ASSIGNMENT)
        expect(assignment).to_be_visible(timeout=60_000)
        _shot(page, "05-instructor-formgrader")

        grader.locator("a:text-is('Manage Students')").click()
        expect(grader.locator(".breadcrumb li")).to_have_text(["Students"], timeout=60_000)
        student = grader.locator("#main-table tr", has_text=STUDENT)
        expect(student.locator("td.score")).to_have_text(shown, timeout=60_000)
        expect(student.locator("td.name")).to_have_text("Lovelace, Ada")
        _shot(page, "06-instructor-students")

        student.locator("td.name a").click()
        expect(grader.locator(".breadcrumb li")).to_have_text(
            ["Students", STUDENT], timeout=60_000
        )
        submission = grader.locator("#main-table tr", has_text=ASSIGNMENT)
        expect(submission.locator("td.score")).to_have_text(shown, timeout=60_000)
        expect(submission.locator("td.code-score")).to_have_text(shown)
        expect(submission.locator("td.name a")).to_have_text(ASSIGNMENT)
        _shot(page, "07-instructor-student-grades")

        submission.locator("td.name a").click()  # the notebooks of the submission
        expect(grader.locator(".breadcrumb li")).to_have_text(
            ["Students", STUDENT, ASSIGNMENT], timeout=60_000
        )
        notebook = grader.locator("#main-table tr", has_text=Path(NOTEBOOK).stem)
        expect(notebook.locator("td.score")).to_have_text(shown, timeout=60_000)
        _shot(page, "08-instructor-notebook-grades")

        # The same score in the gradebook (Manual Grading), the names hidden until asked.
        grader.locator("a:text-is('Manual Grading')").first.click()
        grader.locator(f"#main-table td.name a:text-is('{ASSIGNMENT}')").click()
        grader.locator(f"#main-table td.name a:text-is('{Path(NOTEBOOK).stem}')").click()
        expect(grader.locator(".breadcrumb li")).to_have_text(
            ["Manual Grading", ASSIGNMENT, Path(NOTEBOOK).stem], timeout=60_000
        )
        row = grader.locator("#main-table tr", has_text="Submission #1")
        expect(row.locator("td.score")).to_have_text(shown, timeout=60_000)
        grader.locator("#toggle_names").click()
        expect(row.locator("td.name a.name-shown")).to_have_text("Lovelace, Ada")
        _shot(page, "09-instructor-gradebook")
