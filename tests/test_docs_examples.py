"""Examples are code: every complete Python block of the docs and the README passes
``mypy --strict`` and runs.

Every ```` ```python ```` block of every page under ``docs/`` (found anew on each
run, so a new page is covered without touching this file) and of ``README.md`` is
an example, unless the line right before it marks it otherwise:

- ``<!-- fragment -->``: a piece of a larger program (it uses names defined
  elsewhere), neither type-checked nor run;
- ``<!-- no-run -->``: a complete program type-checked but not run, because it needs
  something the test suite does not have (a provider's API key, a server);
- ``<!-- continued -->``: the next part of the example before it on the page (a
  page that builds one program step by step): the parts are checked and run as
  one program.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(
    r"(?:^<!-- (?P<mark>[a-z-]+) -->\n)?^```python\n(?P<code>.*?)^```", re.M | re.S
)
MARKS = frozenset({"fragment", "no-run", "continued"})


def _pages() -> list[Path]:
    docs = ROOT / "docs"
    pages = sorted(
        path
        for path in docs.rglob("*.md")
        if "_build" not in path.relative_to(docs).parts
    )
    return [ROOT / "README.md", *pages]


def _examples() -> list[tuple[str, str, str]]:
    """(id, mark, code) for every python block, in page order."""
    found: list[tuple[str, str, str]] = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            name = f"{page.relative_to(ROOT)}:{line}"
            mark, code = match.group("mark") or "", match.group("code")
            if (
                mark == "continued"
                and found
                and found[-1][0].startswith(f"{page.relative_to(ROOT)}:")
            ):
                first, first_mark, before = found.pop()
                found.append((first, first_mark, f"{before}\n{code}"))
            else:
                found.append((name, mark, code))
    return found


EXAMPLES = _examples()
CHECKED = [(name, code) for name, mark, code in EXAMPLES if mark != "fragment"]
RUN = [(name, code) for name, mark, code in EXAMPLES if mark == ""]


def _module_name(name: str) -> str:
    return "example_" + re.sub(r"\W", "_", name)


class TestExamples:
    def test_marks_are_known(self) -> None:
        """A block is marked only as a fragment, not run, or continued (and a
        continued block follows a block of its own page)."""
        assert {mark for _, mark, _ in EXAMPLES} <= MARKS - {"continued"} | {""}

    def test_examples_found_on_every_page_with_python(self) -> None:
        """The extraction finds the README's example and the guides' blocks."""
        pages = {name.split(":")[0] for name, _, _ in EXAMPLES}
        assert "README.md" in pages
        assert len(pages) > 3

    def test_every_complete_example_passes_mypy_strict(self, tmp_path: Path) -> None:
        """The complete examples type-check under mypy --strict, as users' code."""
        files = []
        for name, code in CHECKED:
            path = tmp_path / f"{_module_name(name)}.py"
            path.write_text(code, encoding="utf-8")
            files.append(str(path))
        out, err, status = mypy_api.run(
            [
                "--strict",
                "--no-error-summary",
                "--config-file=",
                "--cache-dir",
                str(ROOT / ".mypy_cache" / "examples"),
                *files,
            ]
        )
        for name, _ in CHECKED:
            out = out.replace(f"{tmp_path}{os.sep}{_module_name(name)}.py", name)
        assert status == 0, out + err

    @pytest.mark.parametrize(("name", "code"), RUN, ids=[name for name, _ in RUN])
    def test_example_runs(self, name: str, code: str, tmp_path: Path) -> None:
        """A complete example runs as written, as a script of its own (global
        state it sets, such as OpenTelemetry's providers, stays in its process)."""
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
