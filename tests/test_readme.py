"""The README's code example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs_as_documented() -> None:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has a Python example"
    namespace: dict[str, object] = {}  # the blocks build on each other, as in a session
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)
        lines = block.splitlines()
        for k, line in enumerate(lines):
            if line.startswith("print(") and "#" in line:
                promised = line.split("#", 1)[1].strip()
                assert promised in out.getvalue()
            elif line.startswith("print("):  # the output as the comment lines below it
                shown = []
                for following in lines[k + 1 :]:
                    if not following.startswith("# "):
                        break
                    shown.append(following[2:])
                assert "\n".join(shown) in out.getvalue()


def test_readme_has_exactly_two_setup_commands() -> None:
    quick_start = README.read_text().split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"^bash (\S+)", quick_start, flags=re.M)
    assert commands == [".ci/lab", ".ci/test"]
    for command in commands:
        assert (README.parent / command).is_file()


ROOT = README.parent
PAPER = "*Dual-Numbers Reverse AD for Functional Array Languages*"
AUTHORS = "Tom Smeding, Mikołaj Konarski, Simon Peyton Jones and Andrew Fitzgibbon"
LINK = "[arXiv:2507.12640](https://arxiv.org/abs/2507.12640)"


def _unwrapped(path: pathlib.Path) -> str:
    """The text with its line breaks read as spaces (prose is wrapped)."""
    return " ".join(path.read_text().split())


def test_the_paper_is_cited_with_its_authors_and_link() -> None:
    """The README, the book's front page and the first chapter name the paper, its four
    authors and its arXiv page."""
    for page in ("README.md", "book/index.md", "notebooks/md/00-quick-tour.md"):
        text = _unwrapped(ROOT / page)
        assert PAPER in text and LINK in text, page
        assert AUTHORS in text or AUTHORS.replace(" and ", ", ") in text, page
    assert "Vákár" not in README.read_text()


def test_the_learner_install_is_measured_and_lighter() -> None:
    """The lab installs the learner's extras only (vml by one switch), and the README
    says the measured size and time."""
    lab = (ROOT / ".ci" / "lab").read_text()
    assert 'DUALARR_EXTRAS="${DUALARR_EXTRAS:-widgets,symbolic}"' in lab
    assert "DUALARR_VML=1" in lab and "DUALARR_VML" in (ROOT / ".ci" / "setup.sh").read_text()
    quick_start = _unwrapped(README).split("## Quick start", 1)[1].split("## ", 1)[0]
    assert re.search(r"\d+ MB in `\.venv`, installed in \d+ s", quick_start)
    assert "DUALARR_VML=1 bash .ci/lab" in quick_start
