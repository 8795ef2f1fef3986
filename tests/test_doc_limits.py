"""docs/limits.md's table of limits names every limit with the default the code takes.

The capture's structural limits are the fields of the Rust `capture::Limits` (its `Default`),
and the result limits the `max_*` parameters of the Python functions: each has a row whose
default is the code's, so that a limit added or changed cannot be missing from the page.
"""

from __future__ import annotations

import inspect
import re

import pytest

import burstcore

from .conftest import REPO

LIMITS_MD = REPO / "docs" / "limits.md"
LIMITS_RS = REPO / "rust" / "core" / "src" / "capture" / "mod.rs"


def _rows() -> list[list[str]]:
    """The cells of the first table of docs/limits.md ("| limit | default | ...")."""
    text = LIMITS_MD.read_text()
    table = text[text.index("| limit | default |") :].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in table.splitlines()[2:]]


def _figure(n: int) -> str:
    """A default as the page writes it: 64 MiB, 65,536."""
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,}"


def _rust_limits() -> dict[str, int]:
    """The fields of `impl Default for Limits` and their values (`64 << 20`, `65_536`)."""
    text = LIMITS_RS.read_text()
    body = text[text.index("impl Default for Limits") :].split("}\n}", 1)[0]
    found = {}
    for name, value in re.findall(r"(max_\w+): ([0-9_ <]+),", body):
        base, _, shift = value.replace("_", "").partition("<<")
        found[name] = int(base) << int(shift or 0)
    return found


def test_every_field_of_the_capture_limits_has_its_row_and_default() -> None:
    limits = _rust_limits()
    assert len(limits) >= 4, limits  # max_block_len, max_interfaces, max_sections, max_options
    rows = {r[0]: r for r in _rows()}
    for name, value in limits.items():
        assert f"`{name}`" in rows, f"docs/limits.md has no row for Limits::{name}"
        assert rows[f"`{name}`"][1] == _figure(value), rows[f"`{name}`"]
    fields = "first " + ["three", "four", "five", "six"][len(limits) - 3]
    assert f"The {fields} are fields of `burstcore::capture::Limits`" in LIMITS_MD.read_text()


RESULT_LIMITS = [
    (name, param, p.default)
    for name in burstcore.__all__
    if inspect.isfunction(fn := getattr(burstcore, name))
    for param, p in inspect.signature(fn).parameters.items()
    if param in ("max_groups", "max_flows", "max_pairs")
]


def test_result_limits_found() -> None:
    assert {n for n, _, _ in RESULT_LIMITS} >= {"scan", "superpose", "bursts", "sizes", "gaps", "flows"}


@pytest.mark.parametrize(("function", "param", "default"), RESULT_LIMITS)
def test_every_result_limit_has_its_row_and_default(function: str, param: str, default: int) -> None:
    """A row names the parameter and the function (`max_groups` of `bursts`, or the Python call
    in the default's cell), and gives the function's default."""
    rows = [r for r in _rows() if f"`{param}`" in r[0] and f"`{function}" in r[0] + r[1]]
    assert rows, f"docs/limits.md has no row for {function}({param}=)"
    assert all(r[1].split(" (")[0] == _figure(default) for r in rows), (rows, default)
