"""Shared fixtures: where the shared data is, and tshark as an oracle."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent

# No hypothesis deadline for any test: an example takes well under a ms, but the default of
# 200 ms failed a test (FlakyFailure, "Unreliable test timings") whenever the process was held
# off a core for 0.25 s during one, as on a loaded CI runner (test_units' three tests, the ones
# without `deadline=None` of their own). Loaded here, before the test modules make their settings.
settings.register_profile("burstcore", deadline=None)
settings.load_profile("burstcore")

# A shell's background job (`bash .ci/run &`, a CI runner's step at times) starts with SIGINT
# ignored, and Python keeps it so: `_thread.interrupt_main` then does nothing, and the children
# the Ctrl-C tests start inherit it, where a SIGINT raised nothing but inside polars' own code
# (in such a run 9 in-process tests "did not raise", and a child lost SIGINTs for 30 s each).
# The tests run as in a terminal: Python's own handler, set before polars is imported and
# installs its handler over it, as it does in a foreground process.
if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def use_as_many_threads_as_asked() -> Iterator[None]:
    """Scans and reads use as many threads as the tests ask, whatever the sizes and cores.

    By default a file is cut into no more time chunks than cores, and none under 8 MiB
    (rust/core/src/chunked.rs, MIN_CHUNK_BYTES), read_packets reads no more ranges than cores,
    none under 4 MiB (rust/core/src/table/split.rs, MIN_RANGE_BYTES), and a scan's metrics are
    shared out among no more threads than cores: the tests' captures of a few kB to MB would be
    scanned and read whole, and their comparisons of threads=2, 3, 4 with threads=1 would no
    longer reach the cuts, merges and shares on a machine of two cores. The results are the same
    either way; a test of the default plan turns this off for itself (tests/test_threads.py,
    tests/test_read_threads.py).
    """
    import burstcore

    burstcore._burstcore._use_as_many_threads_as_asked(True)
    yield
    burstcore._burstcore._use_as_many_threads_as_asked(False)


def shared_dir() -> Path | None:
    """The shared data folder: $BURSTCORE_SHARED, else `shared` beside the checkout."""
    env = os.environ.get("BURSTCORE_SHARED")
    if env:
        return Path(env)
    p = REPO.parent / "shared"
    return p if p.is_dir() else None


def shared_file(rel: str) -> Path:
    """A file of the shared data. Missing: a failure when BURSTCORE_SHARED is set (CI), else a skip."""
    base = shared_dir()
    if base is None:
        pytest.skip("shared data not available (set BURSTCORE_SHARED)")
    p = base / rel
    if not p.exists():
        if os.environ.get("BURSTCORE_SHARED"):
            pytest.fail(f"BURSTCORE_SHARED is set but {p} is missing")
        pytest.skip(f"{p} not available")
    return p


def tshark_fields(path: Path | str, fields: list[str], extra: list[str] | None = None) -> list[list[str]]:
    """tshark's reading of a capture, one list of field strings per frame."""
    if shutil.which("tshark") is None:
        pytest.fail("tshark is not installed (bash .ci/setup installs it)")
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=f", "-E", "separator=\t"]
    for f in fields:
        cmd += ["-e", f]
    cmd += extra or []
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0 and not out.stdout:
        raise RuntimeError(f"tshark failed on {path}: {out.stderr.strip()}")
    return [line.split("\t") for line in out.stdout.splitlines()]


def epoch_ns(text: str) -> int:
    """tshark's decimal epoch seconds, exactly, as integer ns."""
    return int(Decimal(text) * 1_000_000_000)
