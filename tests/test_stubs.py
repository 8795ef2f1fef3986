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


def test_a_users_typed_script_is_checked(tmp_path):
    # What a typed caller gets from the annotations: the documented calls pass mypy --strict
    # (a tqdm-like callback returning a value among them), a grouping misspelt does not.
    good = tmp_path / "good.py"
    good.write_text(
        "import burstcore\n"
        "def bar(done: int, total: int | None) -> bool | None:\n"
        "    return None\n"
        "r = burstcore.scan('t.pcapng', windows=['5ms'], by=['src', 'pair'], progress=bar, start=0)\n"
        "s = burstcore.sizes('t.pcapng', by='pair')\n"
        "m = burstcore.traffic_matrix('t.pcapng', max_pairs=10)\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text("import burstcore\nburstcore.scan('t.pcapng', by='pairs')\n")
    run = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "c")]
    ok = subprocess.run([*run, str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    no = subprocess.run([*run, str(bad)], capture_output=True, text=True)
    assert no.returncode == 1 and 'Argument "by" to "scan" has incompatible type' in no.stdout, no.stdout
