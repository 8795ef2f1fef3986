"""Operating-system errors of a read, as Python's own: the subclass `except` expects, ``errno``,
``strerror`` (burstcore's message: what failed and what to do) and ``filename``, which Python
shows after it, so ``str()`` names the file once.

Each case is provoked for real (a file without permission, /proc/self/mem, a path through a
file) and compared with what Python's own ``open()`` raises for the same path: the oracle for
the errno and the subclass.
"""

from __future__ import annotations

import errno
import os
import pickle
import select
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import burstcore
from tests import oracles

linux = pytest.mark.skipif(sys.platform != "linux", reason="Linux files (/proc, /dev/full)")
NOBODY = 65534


def _raised(read: Callable[[], object]) -> dict[str, Any]:
    """What `read` raised, in words and numbers (to cross a pipe from another process)."""
    try:
        read()
    except BaseException as e:  # reported, whatever it is
        return {
            "type": type(e).__name__,
            "oserror": isinstance(e, OSError),
            "errno": getattr(e, "errno", None),
            "strerror": getattr(e, "strerror", None),
            "filename": getattr(e, "filename", None),
            "str": str(e),
        }
    return {"type": None}


def _as_nobody(read: Callable[[], object]) -> dict[str, Any]:
    """`_raised(read)` in a forked child that runs as nobody: root reads any file, so a file it
    may not read needs another user (running as one, the test needs no child)."""
    if os.geteuid() != 0:
        return _raised(read)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(w, pickle.dumps(_raised(read)))
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 60)
        assert ready, "the child did not answer within 60 s"
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return pickle.loads(data)  # our own child's


def _python_open(path: str) -> Callable[[], object]:
    def read() -> object:
        with open(path, "rb") as f:
            return f.read(4)

    return read


@linux
def test_a_file_without_permission_is_a_permission_error() -> None:
    # A folder nobody may look into (so stat fails too), and a readable folder with a file
    # nobody may read: each once the same as Python's own open(). In /tmp itself: pytest's
    # own folders are closed to other users.
    with tempfile.TemporaryDirectory() as top:
        _check_permission(Path(top))


def _check_permission(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "a.pcap").write_bytes(oracles.capture([0], [100]))
    tmp_path.chmod(0o711)
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o711)
    (open_dir / "b.pcap").write_bytes(oracles.capture([0], [100]))
    (open_dir / "b.pcap").chmod(0o600)
    for path in [str(closed / "a.pcap"), str(open_dir / "b.pcap")]:
        want = _as_nobody(_python_open(path))
        assert (want["type"], want["errno"]) == ("PermissionError", errno.EACCES), want
        for call in [lambda p=path: burstcore.info(p), lambda p=path: burstcore.scan(p, windows=["1ms"])]:
            got = _as_nobody(call)
            # Not "no such capture file": the file is there, it may not be read.
            assert (got["type"], got["errno"], got["filename"]) == ("PermissionError", errno.EACCES, path), got
            assert "permission denied" in got["strerror"], got
            assert got["str"].count(path) == 1, got


@linux
def test_an_io_error_of_a_read_has_its_errno_and_file() -> None:
    # Reading /proc/self/mem from its start (no page is mapped at address 0) fails with EIO.
    path = "/proc/self/mem"
    want = _raised(_python_open(path))
    assert (want["type"], want["errno"]) == ("OSError", errno.EIO), want
    got = _raised(lambda: burstcore.info(path))
    assert (got["type"], got["errno"], got["filename"]) == ("OSError", errno.EIO, path), got
    assert got["strerror"].startswith("read failed: "), got
    with pytest.raises(OSError) as e:
        burstcore.read_packets(path)
    assert e.value.errno == errno.EIO and e.value.kind == "io" and e.value.offset is None


def test_a_path_through_a_file_is_not_called_missing(tmp_path: Path) -> None:
    cap = tmp_path / "a.pcap"
    cap.write_bytes(oracles.capture([0], [100]))
    path = str(cap / "x.pcap")
    want = _raised(_python_open(path))
    assert (want["type"], want["errno"]) == ("NotADirectoryError", errno.ENOTDIR), want
    got = _raised(lambda: burstcore.info(path))
    assert (got["type"], got["errno"], got["filename"]) == ("NotADirectoryError", errno.ENOTDIR, path), got
    assert got["str"].count(path) == 1, got


def test_a_missing_path_and_a_folder_keep_their_errors(tmp_path: Path) -> None:
    for path, kind, code in [
        (str(tmp_path / "none.pcap"), FileNotFoundError, errno.ENOENT),
        (str(tmp_path), IsADirectoryError, errno.EISDIR),
    ]:
        with pytest.raises(kind) as e:
            burstcore.info(path)
        assert (e.value.errno, e.value.filename) == (code, path)
        # "[Errno 2] no such capture file (check the path): '…/none.pcap'": the path once.
        assert str(e.value).count(path) == 1, str(e.value)
        assert _raised(_python_open(path))["errno"] == code


def test_a_file_objects_own_oserror_is_raised_as_it_was() -> None:
    class Failing:
        def read(self, n: int = -1) -> bytes:
            raise OSError(errno.EIO, "the disk under the file object")

    with pytest.raises(OSError) as e:
        burstcore.info(Failing())
    assert (e.value.errno, e.value.strerror) == (errno.EIO, "the disk under the file object")
    assert any("burstcore: read failed" in n for n in getattr(e.value, "__notes__", []))


def test_the_command_line_names_a_missing_or_unreadable_file_once(tmp_path: Path) -> None:
    import subprocess

    cap = tmp_path / "a.pcap"
    cap.write_bytes(oracles.capture([0], [100]))
    for path in [str(tmp_path / "none.pcap"), str(tmp_path), str(cap / "x.pcap")]:
        p = subprocess.run(
            [sys.executable, "-m", "burstcore", "info", path], capture_output=True, text=True, timeout=120
        )
        assert p.returncode != 0 and p.stderr.count(path) == 1, p.stderr
