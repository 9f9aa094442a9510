"""The source stage as the user wrote it with ``dualarr.numpy``, beside its lowering."""

from __future__ import annotations

from typing import Any

import numpy as np

import dualarr as da
import dualarr.numpy as dnp


def _program(x: Any) -> Any:
    y = dnp.roll(x, 2)
    return dnp.sum(y * y) + dnp.mean(x)


def test_each_numpy_call_is_a_let_with_its_lowering_and_the_call_as_written() -> None:
    program = da.trace(_program, np.arange(5.0))
    assert [call.name for call in program.numpy_calls] == ["roll", "sum", "mean"]
    lines = program.numpy_source().splitlines()
    assert lines[0] == "\\x."
    assert lines[1].startswith("let roll = gather [5] x") and lines[1].endswith(
        "# dnp.roll(x, 2)"
    )
    assert lines[2].startswith("let sum = sumOuter (roll * roll) in")
    assert lines[2].endswith("# dnp.sum(roll * roll)")
    assert lines[3].startswith("let mean = sumOuter x / 5.0 in")
    assert lines[4] == "sum + mean"


def test_calls_inside_dualarr_numpy_are_not_listed() -> None:
    program = da.trace(lambda x: dnp.std(x), np.arange(4.0))  # std calls mean inside
    assert [call.name for call in program.numpy_calls] == ["std"]


def test_numpy_functions_called_on_traced_values_are_listed_by_their_names() -> None:
    program = da.trace(lambda x: np.sum(np.square(x)), np.arange(3.0))
    assert [call.name for call in program.numpy_calls] == ["square", "sum"]
    assert "# dnp.sum(square)" in program.numpy_source()


def test_a_program_without_numpy_calls_prints_as_itself() -> None:
    program = da.trace(lambda x: da.sum(x * 2.0), np.arange(3.0))
    assert program.numpy_calls == ()
    assert program.numpy_source() == str(program)


def test_the_listing_evaluates_like_the_program() -> None:
    x = np.arange(5.0)
    assert da.trace(_program, x)(x) == np.sum(np.roll(x, 2) ** 2) + np.mean(x)


def test_the_drawing_boxes_each_calls_lowering_with_the_call_as_written() -> None:
    program = da.trace(_program, np.arange(5.0))
    source = program.numpy_graph().source
    labels = [line.split('label="', 1)[1].split('"')[0] for line in source.splitlines()
              if "subgraph cluster" in line or 'label="dnp.' in line if 'label="' in line]
    assert labels == ["dnp.roll(x, 2)", "dnp.sum(roll * roll)", "dnp.mean(x)"]
    roll_box = source.split("subgraph cluster_0 {", 1)[1].split("}", 1)[0]
    assert "gather [5]" in roll_box and "sumOuter" not in roll_box
    assert source.count("subgraph cluster_") == 3
