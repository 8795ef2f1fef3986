"""The type stubs describe the compiled extension exactly (mypy.stubtest), and the package type-checks."""

import subprocess
import sys


def test_stubs_match_the_extension():
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "burstcore._burstcore", "--ignore-missing-stub"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
