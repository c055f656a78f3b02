"""Issue 16, items 5 and 6: what a new user installs, and under which name."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Where users read install instructions: docs, editor extensions and their messages, code.
TEXT_GLOBS = ("*.md", "docs/**/*.md", "editors/**/*.md", "editors/vscode/src/*.ts", "editors/**/*.lua", "engine/**/*.py", "infill_lsp/**/*.py", "grammars/**/*.py", "Makefile", "scripts/*.sh")


def _texts():
    for pattern in TEXT_GLOBS:
        for path in REPO.glob(pattern):
            if "node_modules" not in path.parts:
                yield path, path.read_text(encoding="utf-8", errors="replace")


def test_the_distribution_is_not_named_like_someone_elses_pypi_package():
    # `infill` on PyPI is an unrelated project: installing it by that name gets its code.
    name = re.search(r'^name = "([^"]+)"', (REPO / "pyproject.toml").read_text(), flags=re.M).group(1)
    assert name != "infill"
    offenders = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path, text in _texts()
        for match in re.finditer(r"pip install (-U |--upgrade )?['\"]?infill\b(?![-_/\w])", text)
    ]
    assert offenders == [], offenders


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_the_demo_installs_only_what_running_needs(tmp_path):
    # A dry run in a copy without .venv: which pip commands would `make demo` / `make test` run?
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)

    def plan(target: str) -> str:
        return subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    demo, test = plan("demo"), plan("test")
    installs = [line for line in demo.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line and "[" not in line.split("install", 1)[1] for line in installs)
    assert "-e ." in installs[0]
    assert any("pip install" in line and ".[test]" in line for line in test.splitlines())
