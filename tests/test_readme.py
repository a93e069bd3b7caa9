"""README.md: the example runs and the two setup commands are the ones CI runs."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


class TestReadme:
    def test_example_runs(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The Python example streams the scripted reply through the composite."""
        (example,) = _blocks("python")
        script = tmp_path / "example.py"
        script.write_text(example, encoding="utf-8")
        runpy.run_path(str(script), run_name="__main__")
        out = capsys.readouterr().out
        assert out.startswith("Hello from the scripted model.")
        assert "stop complete" in out

    def test_commands_are_what_ci_runs(self) -> None:
        """The README gives the demo and exactly the test command .ci/run runs."""
        demo, suite = _blocks("bash")[:2]
        assert demo.strip().endswith("langhooks demo")
        test_command = suite.strip().split("&&")[-1].strip()
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert test_command in ci.splitlines()


class TestExtras:
    def test_all_means_every_extra_and_the_table_lists_them(self) -> None:
        """``langhooks[all]`` installs every extra but dev, bench and the two whose
        pins conflict with the others', and getting-started's table lists every
        extra."""
        import tomllib

        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        extras = set(project["optional-dependencies"]) - {"all", "dev", "bench"}
        included = set()
        for requirement in project["optional-dependencies"]["all"]:
            names = re.fullmatch(r"langhooks\[([a-z,-]+)\]", requirement)
            assert names, requirement
            included |= set(names.group(1).split(","))
        # Google ADK's and Strands' pins conflict with other extras' (pyproject.toml
        # says which): pip could not install `all` with them.
        assert included == extras - {"google-adk", "strands"}
        page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
        listed = set(re.findall(r"^\| `langhooks\[([\w-]+)\]`", page, re.M))
        assert listed == extras | {"all"}


class TestNamesEverything:
    """The README is the first page a newcomer reads: it names every provider model
    and links every guide, so one added later cannot be left out of it."""

    def test_every_model_class_is_named(self) -> None:
        """Each model class of ``langhooks.models`` (the ``ChatModel`` protocol
        aside) appears in the README as code."""
        from langhooks import models

        classes = [
            name
            for name in models.__all__
            if name.endswith("Model")
            and isinstance(getattr(models, name), type)
            and name != "ChatModel"
        ]
        assert "BedrockChatModel" in classes  # the enumeration finds them
        missing = [name for name in classes if f"`{name}`" not in README]
        assert missing == []

    def test_every_guide_is_linked(self) -> None:
        """Each page of ``docs/guide/`` is linked from the README."""
        pages = sorted((ROOT / "docs" / "guide").glob("*.md"))
        assert len(pages) >= 10  # the enumeration finds them
        missing = [p.name for p in pages if f"(docs/guide/{p.name})" not in README]
        assert missing == []
