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

A block whose first line is a comment naming a file (``# agent.py``) is that file of
a program spread over several blocks: the page's other blocks may import it.

A run example followed (after at most one line of prose) by a ```` ```text ````
block marked ``<!-- output -->`` prints exactly that text.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(
    r"(?:^<!-- (?P<mark>[a-z-]+) -->\n)?^```python\n(?P<code>.*?)^```", re.M | re.S
)
MARKS = frozenset({"fragment", "no-run", "continued"})
HINT = (
    "\n(A block that is not a complete program can be marked: see the docstring of "
    "tests/test_docs_examples.py.)"
)
# A block that starts with "# agent.py" is that file of a larger program.
FILE = re.compile(r"# (\w+\.py)\b")
# The output shown after a block: at most one line of prose, then the marked block.
OUTPUT = re.compile(
    r"\n+(?:[^\n`<]+\n+)?<!-- output -->\n```text\n(.*?)^```", re.M | re.S
)


def _pages() -> list[Path]:
    docs = ROOT / "docs"
    pages = sorted(
        path
        for path in docs.rglob("*.md")
        if "_build" not in path.relative_to(docs).parts
    )
    return [ROOT / "README.md", *pages]


class Example(NamedTuple):
    """One example: a block, or blocks joined by ``<!-- continued -->``."""

    name: str  # page:line
    page: str
    mark: str
    code: str
    file: str | None  # "agent.py" for a block that starts with "# agent.py"
    output: str | None = None  # what it prints, when the page shows it


def _examples() -> list[Example]:
    """Every python block, in page order."""
    found: list[Example] = []
    for path in _pages():
        page = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            mark, code = match.group("mark") or "", match.group("code")
            if mark == "continued" and found and found[-1].page == page:
                before = found.pop()
                found.append(before._replace(code=f"{before.code}\n{code}"))
                continue
            named = FILE.match(code)
            file = named.group(1) if named else None
            shown = OUTPUT.match(text, match.end())
            output = shown.group(1) if shown else None
            found.append(Example(f"{page}:{line}", page, mark, code, file, output))
    return found


EXAMPLES = _examples()
CHECKED = [example for example in EXAMPLES if example.mark != "fragment"]
RUN = [example for example in EXAMPLES if example.mark == ""]


def _files(page: str) -> dict[str, str]:
    """The page's examples that are files, which its other examples may import."""
    return {e.file: e.code for e in CHECKED if e.page == page and e.file}


def _script(example: Example) -> str:
    return example.file or "example_" + re.sub(r"\W", "_", example.name) + ".py"


def _mypy(directory: Path, examples: list[Example]) -> str:
    """mypy --strict over ``examples`` written into ``directory``: its report,
    with each script named by its page and line ("" when clean)."""
    directory.mkdir()
    for example in examples:
        (directory / _script(example)).write_text(example.code, encoding="utf-8")
    out, err, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--config-file=",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "examples"),
            *(str(directory / _script(example)) for example in examples),
        ]
    )
    for example in examples:
        out = out.replace(str(directory / _script(example)), example.name)
    return "" if status == 0 else out + err


class TestExamples:
    def test_marks_are_known(self) -> None:
        """A block is marked only as a fragment, not run, or continued (and a
        continued block follows a block of its own page)."""
        assert {example.mark for example in EXAMPLES} <= MARKS - {"continued"} | {""}

    def test_examples_found_on_every_page_with_python(self) -> None:
        """The extraction finds the README's example and the guides' blocks."""
        pages = {example.page for example in EXAMPLES}
        assert "README.md" in pages
        assert len(pages) > 3

    def test_every_complete_example_passes_mypy_strict(self, tmp_path: Path) -> None:
        """The complete examples type-check under mypy --strict, as users' code.

        A page whose examples are files of one program (``# agent.py``, then
        ``from agent import ...``) is checked on its own, so that its files import
        each other and module names of different pages do not collide.
        """
        pages = {example.page for example in CHECKED if example.file}
        reports = [
            _mypy(tmp_path / "pages", [e for e in CHECKED if e.page not in pages]),
            *(
                _mypy(tmp_path / f"page{i}", [e for e in CHECKED if e.page == page])
                for i, page in enumerate(sorted(pages))
            ),
        ]
        assert not "".join(reports), "".join(reports) + HINT

    @pytest.mark.parametrize("example", RUN, ids=[example.name for example in RUN])
    def test_example_runs(self, example: Example, tmp_path: Path) -> None:
        """A complete example runs as written, as a script of its own (global
        state it sets, such as OpenTelemetry's providers, stays in its process),
        beside the files of its page it may import."""
        for file, code in _files(example.page).items():
            (tmp_path / file).write_text(code, encoding="utf-8")
        script = tmp_path / _script(example)
        script.write_text(example.code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (
            f"{example.name}:\n{done.stdout}\n{done.stderr}{HINT}"
        )
        if example.output is not None:
            assert done.stdout == example.output, f"{example.name} printed otherwise"

    def test_getting_started_shows_what_each_example_prints(self) -> None:
        """Every example getting-started runs shows its output below it, and none
        needs more than the base install (no pytest, no extra)."""
        page = [e for e in RUN if e.page == "docs/getting-started.md"]
        assert len(page) >= 4
        for example in page:
            assert example.output, f"{example.name} shows no output"
            imported = re.findall(r"^(?:from|import) (\w+)", example.code, re.M)
            assert set(imported) <= {
                "collections",
                "typing",
                "typing_extensions",
                "langhooks",
                "__future__",
            }, example.name


class TestTables:
    def test_every_table_row_has_the_headers_cells(self) -> None:
        """A table's rows have as many cells as its header, and a table ends at a
        blank line (a sentence glued to the last row would become bogus rows)."""
        wrong: list[str] = []
        for path in _pages():
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines):
                if not re.fullmatch(r"\|( *-+ *\|)+", line.strip()):
                    continue
                columns = line.count("|") - 1
                for row in range(number + 1, len(lines)):
                    text = lines[row].strip()
                    if not text:
                        break
                    cells = len(re.split(r"(?<!\\)\|", text.replace("`|`", ""))) - 2
                    if not (text.startswith("|") and text.endswith("|")) or (
                        cells != columns
                    ):
                        wrong.append(f"{path.name}:{row + 1}: {text[:60]}")
        assert wrong == []
