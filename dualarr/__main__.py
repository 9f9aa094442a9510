"""Terminal demo: ``python -m dualarr demo [n]`` prints the stages of the Fig. 18 example."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .ad.reverse import ReverseStats, reverse
from .api import dual_run
from .interp.evaluate import NumpyAlgebra
from .pipeline import pipeline
from .show.printer import print_delta
from .teach.examples import fig18


def demo(n: int) -> str:
    """The stages of paper Fig. 18 for an input of length ``n``, as text."""
    x = np.arange(1.0, n + 1.0)
    stages = pipeline(fig18, x)
    program = stages.source
    lines = [
        "dualarr demo: paper Fig. 18, sum(build1 n (\\i. x[i] * x[n-1-i]))",
        f"x = {x.tolist()}",
        "",
        f"== source  {program.signature()}",
        str(program),
        "",
        f"== bot_steps  (the bulk-operation transform, §5: {len(stages.bot_steps)} rules)",
    ]
    for step in stages.bot_steps:
        lines += [f"{step.number}. {step.rule} ({step.figure})", f"   {step.before}",
                  f"   ==> {step.after}"]
    lines += [
        "",
        "== vectorised  (after the bot and simplification; no build1 is left)",
        str(stages.vectorised),
        "",
        f"value = {float(program(x))!r}   (vectorised: {float(stages.vectorised(x))!r}, "
        f"NumPy: {float(np.dot(x, x[::-1]))!r})",
    ]
    run = dual_run(stages.vectorised, (x,), (0,))
    stats = ReverseStats()
    gradient = reverse(NumpyAlgebra(), run.deltas[0], np.ones(()), stats)[0]
    lines += [
        "",
        "== dual arrays  (§6: the forward pass builds this Delta term, Share ids increasing)",
        print_delta(run.deltas[0]),
        "",
        f"reverse pass (Fig. 17): Share ids evaluated {stats.share_order} (largest first)",
        f"gradient = {np.asarray(gradient).tolist()}   (by hand, 2 * reversed x: "
        f"{(2 * x[::-1]).tolist()})",
    ]
    value, (compiled_gradient,) = stages(x)
    lines += [
        "",
        "== forward  (§7, App. D: the same rules on terms: primal term and symbolic Delta)",
        str(stages.forward),
        "",
        "== delta  (Eq. 6: primal bindings, then a Delta that mentions only variables)",
        str(stages.delta),
        "",
        "== shared  (Fig. 19: the symbolic reverse pass; duplicated cotangents are shared)",
        str(stages.shared),
        "",
        "== gradient  (Figs. 20-21: share -> let, the wrapper, simplified)",
        str(stages.gradient),
        "",
        "== python  (§7.5: the generated code, compiled once)",
        stages.python.rstrip("\n"),
        "",
        f"compiled: value = {float(value)!r}, gradient = {compiled_gradient.tolist()}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dualarr",
        description="dualarr: dual-numbers reverse AD for functional array languages. "
        "'python -m dualarr demo [n]' prints every stage of the paper's Fig. 18 example.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    demo_parser = sub.add_parser(
        "demo",
        help="print the stages of the paper's Fig. 18 example",
        description="Print every stage of the paper's Fig. 18 example, sum over i of "
        "x[i] * x[n - 1 - i], for x = 1..n: source, bot rules, vectorised program, "
        "Delta, gradient program and generated Python.",
    )
    demo_parser.add_argument("n", nargs="?", type=int, default=5, help="length of x (default 5)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        if args.n < 1:
            parser.error("n must be >= 1")
        print(demo(args.n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
