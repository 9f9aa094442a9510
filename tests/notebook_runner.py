"""Running a notebook in a fresh kernel for the tests of generated notebooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

KERNEL_START_TRIES = 3
"""jupyter_client picks a kernel's ports before the kernel binds them, so two kernels
started at once (two test workers) can race for a port ("Address already in use", then
"Kernel died before replying to kernel_info"): such a start is tried again."""


def run_notebook(path: Path) -> Any:
    """``path`` executed from its own folder (every cell, in order); a cell that raises
    is kept as an error output for the caller to assert on."""
    for attempt in range(KERNEL_START_TRIES):
        notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                                allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute()
        except RuntimeError as error:
            if "Kernel died before replying" not in str(error) or attempt + 1 == KERNEL_START_TRIES:
                raise
            continue
        return notebook
    raise AssertionError("unreachable")
