"""The grading kernel: IPython's kernel with its address space capped
(``$DUALARR_GRADING_MEMORY`` bytes, default 4 GiB), so that a submission that allocates
without bound fails in its own cell instead of taking the grader's machine."""

from __future__ import annotations

import os
import resource

DEFAULT_LIMIT = 4 * 2**30


def main() -> None:
    limit = int(os.environ.get("DUALARR_GRADING_MEMORY", DEFAULT_LIMIT))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
