"""The package's imports form no cycle: every module imports only modules below it
(imports inside functions count too), so the pipeline reads bottom-up.  Printing and
drawing install themselves into the term types (``core.install_views``) and the
language functions into the traced value (``tensor.install_array_methods``) instead of
being imported by them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dualarr"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The dualarr modules ``path`` imports, anywhere in the file."""
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.startswith("dualarr"):
                found.add(target)  # graph() keeps the names that are modules:
                found.update(f"{target}.{alias.name}" for alias in node.names)  # from . import x
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dualarr"))
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = {name: {t for t in imports_of(path) if t in modules and t != name} for name, path in modules.items()}  # noqa: E501
    # the package's face re-exports everything: it is the top, not part of the layers
    edges.pop("dualarr", None)
    for targets in edges.values():
        targets.discard("dualarr")
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_import_graph_is_read() -> None:
    edges = graph()
    assert "dualarr.lang.terms" in edges["dualarr.api"]
    assert "dualarr.lang.primitives" in edges["dualarr.lang.terms"]
    assert "dualarr.lang.functions" in edges["dualarr.api"]  # an import inside a function counts
    assert len(edges) > 30
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_itself_back() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


LAYERS = (
    "lang", "numpy", "interp", "vectorise", "ad", "codegen", "show", "constructs", "linalg",
    "top", "teach", "main"
)
"""The pipeline's layers, bottom first: the language and tracing; NumPy's interface
lowered to it (``dualarr.numpy``); its interpretations
(algebras); the bot; differentiation; code generation; printing and drawing; the
constructs of their own modules (each registers its rules in every stage's table);
``dualarr.numpy.linalg``, NumPy's interface to the linear-algebra constructs; the
transformations (``api``, ``pipeline``); the teaching and cross-checking tools; the
demo.  A subpackage is a layer; the top-level modules are ``top`` and ``main``."""

TOP_LEVEL = {
    "dualarr.api": "top",
    "dualarr.pipeline": "top",
    "dualarr.check": "top",
    "dualarr.sympy_reference": "top",
    "dualarr.__main__": "main",
}


def layer_of(module: str) -> str:
    if module.startswith("dualarr.numpy.linalg"):
        return "linalg"
    return TOP_LEVEL.get(module) or module.split(".")[1]


def test_every_module_is_in_a_layer_and_imports_only_its_own_or_lower_ones() -> None:
    edges = graph()
    layers = {module: layer_of(module) for module in edges}
    assert set(layers.values()) <= set(LAYERS), sorted(set(layers.values()) - set(LAYERS))
    assert set(LAYERS) - {"top", "main"} <= set(layers.values())
    rank = {name: k for k, name in enumerate(LAYERS)}
    upward = [
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if rank[layers[target]] > rank[layers[source]]
    ]
    assert not upward, "imports from a higher layer: " + ", ".join(sorted(upward))


def test_the_bottom_layers_import_nothing_above_them() -> None:
    edges = graph()
    assert edges["dualarr.lang.errors"] == set()
    assert edges["dualarr.lang.primitives"] <= {"dualarr.lang.errors"}
    assert edges["dualarr.lang.structure"] == set()
    assert edges["dualarr.lang.terms"] <= {
        "dualarr.lang.errors", "dualarr.lang.primitives", "dualarr.lang.structure"
    }
    for low in ("dualarr.lang.terms", "dualarr.ad.delta", "dualarr.lang.tensor"):
        for view in ("dualarr.show.printer", "dualarr.show.drawing", "dualarr.lang.functions"):
            assert view not in edges[low], f"{low} imports {view}"


def test_each_subpackage_says_its_stage() -> None:
    for package in LAYERS:
        init = PACKAGE / package / "__init__.py"
        if package in ("top", "main", "linalg"):  # linalg: a subpackage of numpy
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and ("§" in doc or "App." in doc), f"{package}: no stage or section"


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_own_private_module(path: Path, node: ast.ImportFrom, name: str) -> bool:
    """``from . import _shape`` in a module of the package that holds ``_shape``."""
    folder = path.parent
    return (
        node.level == 1
        and node.module is None
        and ((folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists())
    )


def private_imports(path: Path) -> list[str]:
    """The underscore-private names ``path`` imports from another module (private
    modules of its own package excepted), as ``line: from module import name``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.extend(
                f"{node.lineno}: from {module} import {alias.name}"
                for alias in node.names
                if is_private(alias.name) and not is_own_private_module(path, node, alias.name)
            )
    return found


def test_the_private_import_check_sees_names_and_spares_own_private_modules() -> None:
    def imports(source: str, path: Path) -> list[str]:
        node = ast.parse(source).body[0]
        assert isinstance(node, ast.ImportFrom)
        return [a.name for a in node.names if is_private(a.name)
                and not is_own_private_module(path, node, a.name)]

    numpy_init = PACKAGE / "numpy" / "__init__.py"
    assert (PACKAGE / "numpy" / "_shape.py").exists()
    assert imports("from . import _shape", numpy_init) == []
    assert imports("from .feedback import _ok, passed", numpy_init) == ["_ok"]
    assert imports("from .. import _shape", PACKAGE / "teach" / "check.py") == ["_shape"]
    assert imports("from . import __version__", numpy_init) == []


def test_no_module_imports_a_private_name_of_another_module() -> None:
    """What one module needs of another is that module's public, documented API: an
    underscore name stays inside its module (a private module of a package may be
    imported by its package's own modules)."""
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in private_imports(path)
    ]
    assert not offending, "imports of private names:\n" + "\n".join(offending)
