"""nbgrader configuration of a dualarr course (written by
``python -m dualarr.teach.classroom build``; edit freely: it is not rewritten)."""

import os
from pathlib import Path

COURSE = Path(__file__).resolve().parent

c = get_config()  # type: ignore[name-defined]  # noqa: F821 (nbgrader's config loader)

c.CourseDirectory.course_id = "dualarr"
c.CourseDirectory.root = str(COURSE)
c.CourseDirectory.db_url = f"sqlite:///{COURSE / 'gradebook.db'}"
# The exchange (release, fetch, submit, collect) inside the course folder; on a shared
# server point it at a folder every student can write, e.g. /srv/nbgrader/exchange.
c.Exchange.root = os.environ.get("DUALARR_EXCHANGE", str(COURSE / "exchange"))

# Stubs exactly as the kit's student notebooks have them.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Autograding: each cell may run 120 s (an endless loop is interrupted and scores 0 for
# that cell, the batch goes on), in a kernel whose address space is capped (an
# allocation without bound fails with MemoryError in that cell).
c.Execute.timeout = int(os.environ.get("DUALARR_GRADING_TIMEOUT", "120"))
c.Execute.interrupt_on_timeout = True
c.Execute.kernel_name = "dualarr-grading"
os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(COURSE), *filter(None, [os.environ.get("JUPYTER_PATH")])]
)
