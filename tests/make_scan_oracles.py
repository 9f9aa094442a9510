"""Store JAX's ``lax.scan`` values and gradients for seeded random loop programs.

Run ``python tests/make_scan_oracles.py`` (needs the ``bench`` extra's JAX) to rewrite
``tests/data/scan_oracles.json``; ``tests/test_loops_ad.py`` compares dualarr's loops
with it, so the test suite itself needs no JAX.  Cases come from
:func:`loop_programs.draw_case` with ``random.Random(seed)`` choosing.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from loop_programs import draw_case, inputs, program

CASES = 32
OUT = Path(__file__).parent / "data" / "scan_oracles.json"


def main() -> None:
    jax: Any = importlib.import_module("jax")  # the bench extra's; CI does not install it
    jnp: Any = importlib.import_module("jax.numpy")

    jax.config.update("jax_enable_x64", True)
    records: list[dict[str, Any]] = []
    for seed in range(CASES):
        case = draw_case(random.Random(seed).choice)
        args = inputs(case, seed)
        f = program(case, jnp, jax.lax.scan)
        value, grads = jax.value_and_grad(f, argnums=tuple(range(len(args))))(*args)
        records.append({
            "seed": seed,
            "case": case.to_json(),
            "value": float(value),
            "grads": [[float(v) for v in jnp.ravel(g)] for g in grads],
        })  # fmt: skip
    lines = ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in records)
    OUT.write_text(f'{{"jax": "{jax.__version__}", "cases": [\n{lines}\n]}}\n')
    print(f"wrote {len(records)} cases to {OUT}")


if __name__ == "__main__":
    main()
