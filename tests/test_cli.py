"""The ``langhooks`` command line: the version option."""

from __future__ import annotations

import subprocess
import sys

import pytest

import langhooks
from langhooks.cli import main


class TestVersion:
    def test_version_option(self, capsys: pytest.CaptureFixture[str]) -> None:
        """langhooks --version prints the version and exits 0."""
        with pytest.raises(SystemExit) as exited:
            main(["--version"])
        assert exited.value.code == 0
        assert capsys.readouterr().out.strip() == langhooks.__version__

    def test_python_dash_m(self) -> None:
        """python -m langhooks --version works the same way."""
        completed = subprocess.run(
            [sys.executable, "-m", "langhooks", "--version"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0
        assert completed.stdout.strip() == langhooks.__version__


class TestBareCommand:
    def test_lists_the_commands(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Bare ``langhooks`` lists its commands with what each does; exit 0."""
        assert main([]) == 0
        out = capsys.readouterr().out
        assert "demo " in out
        assert "replay " in out
        assert "show the handler events a recorded provider stream produces" in out
