"""``python -m dualarr.teach.classroom build COURSE [ASSIGNMENT ...]``: write (or
refresh) an nbgrader course folder from the kit's sources; then use nbgrader's own
commands in that folder (see the README's "For instructors")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import assignments, build_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dualarr.teach.classroom",
                                     description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    build = verbs.add_parser("build", help="write the course's nbgrader sources")
    build.add_argument("course", type=Path)
    build.add_argument("assignments", nargs="*")
    verbs.add_parser("list", help="the assignments")
    args = parser.parse_args(argv)
    if args.verb == "list":
        for a in assignments():
            print(f"{a.name:32} {', '.join(s.stem for s in a.sources)}")
        return 0
    known = {a.name for a in assignments()}
    unknown = [n for n in args.assignments if n not in known]
    if unknown:
        parser.error(f"no assignment {', '.join(unknown)}: see `list`")
    for path in build_course(args.course, args.assignments or None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
