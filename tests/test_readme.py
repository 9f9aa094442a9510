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
