"""What the tests need is what the ``test`` extra installs: a package a test (or the benchmark
harness it runs, benches/run.py) imports but no extra declares fails the test in a clean
``pip install .[test]``, where it cannot be told from a defect of burstcore's."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"burstcore", "tests"}


def _imported(paths: list[Path]) -> dict[str, set[str]]:
    """The third-party top-level modules `paths` import (at any depth), each with the files."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                    found.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return found


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_package_the_tests_import_is_in_the_test_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _names(project["dependencies"]) | _names(project["optional-dependencies"]["test"])
    # Every module here is installed under its own name.
    used = _imported([*ROOT.joinpath("tests").glob("*.py"), ROOT / "benches" / "run.py"])
    assert {"numpy", "pytest", "dpkt"} <= used.keys(), sorted(used)  # the search finds them
    missing = {m: sorted(files) for m, files in used.items() if m.lower() not in declared}
    assert not missing, f"imported by the tests but not in pyproject's test extra: {missing}"
