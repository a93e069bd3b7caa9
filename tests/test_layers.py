"""The package's folders are its layers: imports point down, never in a circle.

Layers, lowest first: ``_version``; ``_core`` (the handler contract); ``_wrap``
(wrappers); ``models``; ``chain`` (the runtime); ``_persist`` (codec, records,
events); ``integrations``; ``cli``; then ``_testing`` and the public modules, which
only re-export. Every import counts: at module level, under ``if TYPE_CHECKING:``
and inside functions, and ``import_module``/``__import__`` of a langhooks module
named by a literal or a module-level constant (a hidden edge is an edge). The
sources are parsed, not imported.

The edges still pointing the wrong way are listed in ``KNOWN_VIOLATIONS`` with the
reason each is left; the list may only shrink (an edge that no longer exists fails
the test until it is taken off). Modules over ``MAX_LINES`` are listed the same way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parent.parent / "langhooks"

#: The layer folders, lowest first.
LAYERS: Final = ("_core", "_wrap", "models", "chain", "_persist", "integrations", "cli")

#: The private modules that stay at the package root.
ROOT_PRIVATE: Final = frozenset({"_version", "_testing", "__main__"})

#: The longest a module may be.
MAX_LINES: Final = 700

#: Imports that point up or close a circle, each naming the importer and the
#: imported module with the reason it is left. Empty: keep it so.
KNOWN_VIOLATIONS: Final[Mapping[tuple[str, str], str]] = {}

#: Modules over MAX_LINES, with their current length: they may only get shorter.
#: Empty: keep it so.
KNOWN_LONG: Final[Mapping[str, int]] = {}

_GENERATED: Final = re.compile(r"^#.*\bgenerated\b", re.IGNORECASE | re.MULTILINE)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Final = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """The rank of ``module``'s layer: a module may import only ranks up to its own."""
    parts = module.split(".")
    if module == "langhooks._version":
        return 0
    if len(parts) > 1 and parts[1] in LAYERS:
        return 1 + LAYERS.index(parts[1])
    if module == "langhooks._testing":
        return len(LAYERS) + 1
    return len(LAYERS) + 2  # the public modules, __main__


_DYNAMIC: Final = frozenset({"import_module", "__import__"})


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module-level names bound to a str literal (``NAME = "a.b"``)."""
    found: dict[str, str] = {}
    for node in tree.body:
        value: ast.expr | None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = value.value
    return found


def _dynamic(call: ast.Call, constants: Mapping[str, str]) -> str | None:
    """The module ``call`` imports when it is ``import_module(X)`` or
    ``__import__(X)`` with ``X`` a literal or a module-level constant."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else None
    if isinstance(function, ast.Name):
        name = function.id
    if name not in _DYNAMIC or not call.args:
        return None
    argument = call.args[0]
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.Name):
        return constants.get(argument.id)
    return None


def _imported(
    module: str, source: str, *, package: bool = False
) -> Iterator[tuple[str, int]]:
    """The langhooks modules ``module`` (whose text is ``source``; ``package``: an
    ``__init__.py``) imports anywhere in it, with the line."""
    tree = ast.parse(source)
    constants = _constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _dynamic(node, constants)
            if target is not None:
                yield target, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield (submodule if submodule in MODULES else source), node.lineno


def import_graph() -> dict[tuple[str, str], int]:
    """Every import between two langhooks modules, as (importer, imported) -> line."""
    edges: dict[tuple[str, str], int] = {}
    for module, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        package = path.name == "__init__.py"
        for target, line in _imported(module, source, package=package):
            if target.split(".")[0] == "langhooks" and target != module:
                edges.setdefault((module, target), line)
    return edges


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for importer, imported in sorted(edges):
        graph.setdefault(importer, []).append(imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, []):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


class TestImportGraph:
    def test_every_module_is_in_a_layer(self) -> None:
        """A private module lives in a layer folder; the root holds only the public
        modules, ``_version``, ``_testing`` and ``__main__``."""
        for module, path in MODULES.items():
            parts = module.split(".")
            if len(parts) == 1 or (len(parts) == 2 and path.name != "__init__.py"):
                assert not parts[-1].startswith("_") or parts[-1] in ROOT_PRIVATE, (
                    f"{module}: move it into one of the layer folders {LAYERS}"
                )
            else:
                assert parts[1] in LAYERS, f"{module}: {parts[1]} is not a layer"

    def test_finds_imports_in_functions_and_under_type_checking(self) -> None:
        """The parser sees an import inside a method and one under TYPE_CHECKING."""
        source = (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from ..chain import LLMChain\n"
            "class C:\n"
            "    def save(self) -> None:\n"
            "        from .._persist._codec import encode_state\n"
        )
        found = dict(_imported("langhooks._core._x", source))
        assert found["langhooks.chain"] == 3
        assert found["langhooks._persist._codec"] == 6

    def test_finds_a_module_imported_by_name(self) -> None:
        """``import_module`` or ``__import__`` of a literal or of a module-level
        constant is an edge too; a name computed at run time is not knowable."""
        source = (
            "import importlib\n"
            "from importlib import import_module\n"
            'CODEC: Final = "langhooks._persist._state"\n'
            'OTHER = "langhooks.integrations.redis"\n'
            "def load(name: str) -> None:\n"
            "    import_module(CODEC)\n"
            '    importlib.import_module("langhooks.cli.runs")\n'
            "    __import__(OTHER)\n"
            "    import_module(name)\n"
            "    import_module()\n"
            "    print(CODEC)\n"
        )
        found = dict(_imported("langhooks.chain._x", source))
        assert found["langhooks._persist._state"] == 6
        assert found["langhooks.cli.runs"] == 7
        assert found["langhooks.integrations.redis"] == 8
        assert len([m for m in found if m.startswith("langhooks.")]) == 3

    def test_imports_point_down(self) -> None:
        """No module imports one of a higher layer, but the known ones."""
        upward = {
            f"{importer} -> {imported} (line {line})"
            for (importer, imported), line in import_graph().items()
            if layer(imported) > layer(importer)
            and (importer, imported) not in KNOWN_VIOLATIONS
        }
        assert not upward, "imports pointing up the layers:\n" + "\n".join(
            sorted(upward)
        )

    def test_no_import_circle(self) -> None:
        """Without the known edges, no group of modules imports itself round."""
        edges = set(import_graph()) - set(KNOWN_VIOLATIONS)
        assert circles(edges) == []

    def test_known_edges_still_exist(self) -> None:
        """Every allowlisted edge is still there: a fixed one leaves the list."""
        gone = set(KNOWN_VIOLATIONS) - set(import_graph())
        assert not gone, f"take these off KNOWN_VIOLATIONS: {sorted(gone)}"

    def test_layers_rank_in_order(self) -> None:
        """The core ranks lowest and the command line highest of the folders."""
        ranks = [layer(f"langhooks.{folder}._x") for folder in LAYERS]
        assert ranks == sorted(ranks)
        assert layer("langhooks._version") < ranks[0]
        assert layer("langhooks._testing") > ranks[-1]
        assert layer("langhooks.events") > layer("langhooks._testing")

    def test_circle_finder_finds_a_circle(self) -> None:
        """The circle check fails on a circle: it is not vacuously empty."""
        assert circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [
            ["a", "b", "c"]
        ]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


class TestModuleSize:
    @pytest.mark.parametrize(
        "module",
        [
            module
            for module, path in MODULES.items()
            if module != "langhooks._version"
            and not _GENERATED.search("\n".join(path.read_text().splitlines()[:5]))
        ],
    )
    def test_module_is_at_most_700_lines(self, module: str) -> None:
        """A module is at most MAX_LINES long, or no longer than its known length."""
        limit = KNOWN_LONG.get(module, MAX_LINES)
        assert _lines(MODULES[module]) <= limit

    def test_known_long_modules_are_still_long(self) -> None:
        """A module that got under the limit (or went away) leaves KNOWN_LONG."""
        fixed = {
            module
            for module in KNOWN_LONG
            if module not in MODULES or _lines(MODULES[module]) <= MAX_LINES
        }
        assert not fixed, f"take these off KNOWN_LONG: {sorted(fixed)}"
