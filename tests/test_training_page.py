"""docs/training-traffic.md is generated (docs/make_training_page.py) and committed: a change of an
analysis that moves one of its figures must regenerate it. The page of capture d alone (the small
one, a few seconds; the whole page takes about a minute) is regenerated here, and each of its
lines must be the committed page's, in order: d's rows of every table, the notes and prose the
script writes. Only the line that lists every capture's ACK:data ratio differs by design; d's
ratio in it is checked."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, shared_file

D = "d_ring2_resnetsmall_noshape_bridge"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("make_training_page", REPO / "docs" / "make_training_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_training_page_is_what_the_script_makes_of_capture_d(tmp_path: Path) -> None:
    capture = shared_file(f"captures/{D}.pcapng")
    # The script reads the ground truth beside it: missing, the suite's failure (or skip), not
    # a FileNotFoundError from inside the script.
    shared_file(f"captures/{D}.meta.json")
    script = _script()
    caps = [c for c in script.CAPS if c[0] == D]
    assert len(caps) == 1
    with warnings.catch_warnings():
        # The stretches too short to bear a period out say so: the page's business, not this test's.
        warnings.simplefilter("ignore")
        script.main(out_dir=tmp_path, shared=capture.parent.parent, caps=caps)
    made = (tmp_path / "training-traffic.md").read_text().split("\n")
    committed = (REPO / "docs" / "training-traffic.md").read_text().split("\n")
    assert any(line.startswith(f"| {caps[0][2]} |") for line in made), made

    acks = [i for i, line in enumerate(made) if line.startswith("the ACK:data frame ratio")]
    assert len(acks) == 1, made
    ratio = re.search(r"\(d: \d+\.\d\d\)", made[acks[0]])
    assert ratio is not None, made[acks[0]]
    committed_acks = [line for line in committed if line.startswith("the ACK:data frame ratio")]
    assert len(committed_acks) == 1 and f", {ratio.group()[1:]}" in committed_acks[0], (ratio, committed_acks)

    # Each line in the committed page, in the same order (a subsequence of it).
    at = 0
    for i, line in enumerate(made):
        if i == acks[0]:
            continue
        try:
            at = committed.index(line, at) + 1
        except ValueError:
            pytest.fail(
                f"line {i + 1} of the page regenerated for d is not in docs/training-traffic.md (after its line "
                f"{at}): {line!r}; regenerate the page (docs/make_training_page.py) with the change that moved it"
            )
