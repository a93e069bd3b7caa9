"""Count the sync/async twins kept by hand in the package (not a benchmark of
speed: a count to compare trees, as in the closing notes of #22).

Run by hand (not a test)::

    python bench/twins.py [ROOT] [--list]

ROOT is a checkout (the current one by default); its ``langhooks/`` is read, not
imported. A *pair* is two definitions in the same scope (a module, or a class
body) where one is the async twin of the other:

- ``async def aX`` / ``async def _aX`` / ``async def async_X`` beside ``def X``;
- ``async def X_async`` beside ``def X_sync`` or ``def X``;
- ``class AsyncX`` beside ``class X``;

or the same at module level across the modules ``m.py`` and ``m_async.py``.
Pairs inside a paired class are not counted again. A module whose first line says
it is generated is skipped: its lines are written by a script, not kept by hand.
The count is the pairs and the lines of both definitions (decorators included).
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final, TypeAlias

_GENERATED: Final = re.compile(r"^#.*\bgenerated\b", re.IGNORECASE)

Definition: TypeAlias = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def sync_name(node: Definition) -> str | None:
    """The name of the sync twin ``node`` would have if it is an async one."""
    name = node.name
    bare = name.lstrip("_")
    under = name[: len(name) - len(bare)]
    if isinstance(node, ast.ClassDef):
        if bare.startswith("Async") and bare[5:6].isupper():
            return under + bare[5:]
        return None
    if not isinstance(node, ast.AsyncFunctionDef):
        return None
    if bare.startswith("async_"):
        return under + bare[6:]
    if name.endswith("_async"):
        return name[: -len("_async")]
    if bare.startswith("a") and len(bare) > 1 and bare[1].islower():
        return under + bare[1:]
    return None


def _lines(node: Definition) -> int:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    return node.end_lineno - first + 1


def _definitions(body: Sequence[ast.stmt]) -> dict[str, Definition]:
    return {
        node.name: node
        for node in body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def pairs_in(
    async_scope: dict[str, Definition], sync_scope: dict[str, Definition], where: str
) -> Iterator[tuple[str, str, int]]:
    """The pairs between two scopes (the same one twice for a module or class):
    (where, "async_name/sync_name", lines of both)."""
    paired: set[str] = set()
    for name, node in async_scope.items():
        wanted = sync_name(node)
        if wanted is None:
            continue
        twin = sync_scope.get(wanted) or sync_scope.get(f"{wanted}_sync")
        if twin is None or twin is node:
            continue
        paired.update((name, twin.name))
        yield where, f"{name}/{twin.name}", _lines(node) + _lines(twin)
    if async_scope is not sync_scope:
        return
    for name, node in async_scope.items():
        if name not in paired and isinstance(node, ast.ClassDef):
            inner = _definitions(node.body)
            yield from pairs_in(inner, inner, f"{where}:{name}")


def _tree(path: Path) -> ast.Module | None:
    text = path.read_text(encoding="utf-8")
    if _GENERATED.match(text):
        return None
    return ast.parse(text)


def count(root: Path) -> list[tuple[str, str, int]]:
    """Every hand-kept pair under ``root/langhooks``."""
    package = root / "langhooks"
    found: list[tuple[str, str, int]] = []
    for path in sorted(package.rglob("*.py")):
        tree = _tree(path)
        if tree is None:
            continue
        where = str(path.relative_to(root))
        scope = _definitions(tree.body)
        found.extend(pairs_in(scope, scope, where))
        if path.stem.endswith("_async"):
            sync_path = path.with_name(path.stem[: -len("_async")] + ".py")
            sync_tree = _tree(sync_path) if sync_path.exists() else None
            if sync_tree is not None:
                found.extend(
                    pairs_in(scope, _definitions(sync_tree.body), f"{where}+sync")
                )
    return found


def main() -> None:
    """Print the pairs' count and lines (each pair too with ``--list``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path.cwd())
    parser.add_argument("--list", action="store_true", help="print every pair")
    args = parser.parse_args()
    found = count(args.root)
    if args.list:
        for where, names, lines in sorted(found, key=lambda pair: -pair[2]):
            print(f"{lines:5d}  {where}  {names}")
    print(f"{len(found)} pairs, {sum(lines for *_, lines in found)} lines")


if __name__ == "__main__":
    main()
