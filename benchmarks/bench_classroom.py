"""Autograding time for a class: 30 submissions of one assignment through nbgrader.

Builds a course folder from the kit's sources (``python -m dualarr.teach.classroom
build``), generates the assignment, puts 30 synthetic submissions in ``submitted/`` (a
third the solutions, a third the stubs, a third with the first answer solved) and times
``nbgrader autograde`` over all of them, ``--repeat`` times (each a fresh gradebook), in
seconds and seconds per submission.  Needs the ``classroom`` extra (nbgrader).

    python benchmarks/bench_classroom.py [--assignment 06-transposition-rules] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dualarr.teach.classroom import build_course

BIN = Path(sys.executable).parent
STUDENTS = 30


def nbgrader(course: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env, check=True,
                   capture_output=True, text=True)


def submissions(course: Path, assignment: str) -> None:
    released = course / "release" / assignment
    source = course / "source" / assignment
    for k in range(STUDENTS):
        folder = course / "submitted" / f"student{k:02d}" / assignment
        folder.mkdir(parents=True)
        for path in sorted(released.glob("*.ipynb")):
            notebook = json.loads(path.read_text())
            if k % 3 == 0:
                notebook = json.loads((source / path.name).read_text())
            elif k % 3 == 2:
                solved = json.loads((source / path.name).read_text())["cells"]
                for cell, answer in zip(notebook["cells"], solved, strict=True):
                    if cell["metadata"].get("nbgrader", {}).get("solution"):
                        cell["source"] = answer["source"]
                        break
            (folder / path.name).write_text(json.dumps(notebook))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="06-transposition-rules")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            course = Path(tmp) / "course"
            build_course(course, [args.assignment])
            nbgrader(course, "generate_assignment", args.assignment, "--force")
            submissions(course, args.assignment)
            start = time.perf_counter()
            nbgrader(course, "autograde", args.assignment, "--create", "--force")
            times.append(time.perf_counter() - start)
            shutil.rmtree(course)
    print(f"# bench_classroom.py: nbgrader autograde of {STUDENTS} submissions of "
          f"{args.assignment}, {os.cpu_count()} CPUs")
    for t in times:
        print(f"{t:8.1f} s   {t / STUDENTS:6.2f} s per submission")
    print(f"range: {min(times):.1f}-{max(times):.1f} s over {len(times)} runs")


if __name__ == "__main__":
    main()
