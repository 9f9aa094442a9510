"""``python -m dualarr.teach.scratch``: grade saved work, or regenerate the notebooks.

    python -m dualarr.teach.scratch check [a b ...] [--dir FOLDER] [--solutions]
    python -m dualarr.teach.scratch generate [--check]
    python -m dualarr.teach.scratch lines
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .grading import STAGES, run_task, tasks_of
from .notebooks import REPOSITORY_ROOT, StageLoadError, generate, learner_lines, stage


def _check(stages: list[str], folder: Path | None, solutions: bool) -> int:
    if folder is not None:
        os.environ["DUALARR_SCRATCH_DIR"] = str(folder.resolve())
    failed = 0
    total = 0
    for name in stages:
        tasks = tasks_of(name)
        total += len(tasks)
        try:
            module = stage(name, "reference" if solutions else "mine")
        except StageLoadError as error:
            print(f"stage {name}: 0/{len(tasks)} tasks pass\n    {error}")
            failed += len(tasks)
            continue
        outcomes = [run_task(t, vars(module)) for t in tasks]
        passed = sum(o.passed for o in outcomes)
        failed += len(outcomes) - passed
        print(f"stage {name} ({STAGES[name]}): {passed}/{len(outcomes)} tasks pass")
        for outcome in outcomes:
            print("  " + outcome.report(detail=not outcome.passed).replace("\n", "\n  "))
    print(f"{total - failed}/{total} tasks pass")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dualarr.teach.scratch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    check = verbs.add_parser("check", help="grade the saved notebooks, task by task")
    check.add_argument("stages", nargs="*", help=f"stages to grade ({' '.join(STAGES)}; all)")
    check.add_argument("--dir", type=Path, help="a folder of saved notebooks")
    check.add_argument("--solutions", action="store_true", help="grade the reference solutions")
    gen = verbs.add_parser("generate", help="write the student and solution notebooks")
    gen.add_argument("--check", action="store_true", help="only say whether they are stale")
    verbs.add_parser("lines", help="the lines a learner writes, per stage")
    args = parser.parse_args(argv)
    if args.verb == "check":
        unknown = [s for s in args.stages if s not in STAGES]
        if unknown:
            parser.error(f"no stage {', '.join(unknown)}: the stages are {' '.join(STAGES)}")
        return _check(args.stages or list(STAGES), args.dir, args.solutions)
    if args.verb == "generate":
        changed = generate(check_only=args.check)
        for path in changed:
            print(("stale: " if args.check else "wrote: ") + str(path.relative_to(REPOSITORY_ROOT)))
        return 1 if (args.check and changed) else 0
    source = REPOSITORY_ROOT / "notebooks" / "from-scratch" / "source"
    for name, stem in STAGES.items():
        path = source / f"{stem}.md"
        if path.exists():
            print(f"{name}  {stem:32} {learner_lines(path):4} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
