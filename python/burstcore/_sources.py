"""What a caller may pass as a capture, normalised for the Rust side."""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import Any

from . import _burstcore as _core


def normalize(source: Any, listed: bool = False) -> Any:
    """A path (str or PathLike; '-' is stdin), bytes, or a binary file object (`listed`: one item
    of a list of captures, which the error for a list in it says).

    A missing path raises FileNotFoundError naming it, before any Rust code runs.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        _refuse_a_path(source)
        return source
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not isinstance(path, str):
            path = os.fsdecode(path)
        if path == "-":
            buf = getattr(sys.stdin, "buffer", None)
            return buf if buf is not None and not _is_real_stdin(buf) else "-"
        check_path(path)
        return path
    if hasattr(source, "read"):
        if isinstance(getattr(source, "mode", "b"), str) and "b" not in getattr(source, "mode", "b"):
            raise ValueError("the file object is open in text mode: open the capture with 'rb'")
        return source
    columns = (
        "; for packets already in a pandas DataFrame, scan(pl.from_pandas(df)) measures its "
        "'timestamp' and 'size' columns"
        if type(source).__module__.startswith("pandas")
        # Columns: scan measures them, the other tools read the capture's headers.
        else "; only scan() measures packets already in columns ('timestamp' and 'size'); "
        "this one reads the capture, so pass the capture's path"
        if type(source).__module__.startswith("polars")
        or hasattr(source, "__arrow_c_stream__")
        or hasattr(source, "__arrow_c_array__")
        # An array of bytes (numpy's uint8): taken as a buffer, not as an array.
        else "; an array of the capture's bytes goes as memoryview(a) or a.tobytes()"
        if getattr(getattr(source, "dtype", None), "itemsize", None) == 1
        # A list where one capture goes (read_packets, info, scan_packets; or one inside the
        # list of several): "several captures go in a list" would send the user back to it.
        else (
            "; each item of the list is one capture (a list in it is not taken)"
            if listed
            else "; this reads one capture: give one, or call it once for each"
        )
        if isinstance(source, (list, tuple))
        # A generator, a set, a map of paths: read once and in no stated order, so not taken.
        else "; several captures go in a list or a tuple (list(...) of these)"
        if hasattr(source, "__iter__")
        else ""
    )
    raise TypeError(
        f"cannot read a capture from {type(source).__name__}: pass a path, '-' for stdin, bytes, "
        f"or a binary file object{columns}"
    )


# Names of capture files, as given to tools: bytes ending so are a path, not a capture.
_CAPTURE_SUFFIXES = (b".pcap", b".pcapng", b".cap", b".gz", b".zst", b".zstd")


def _refuse_a_path(data: bytes | bytearray | memoryview) -> None:
    """Bytes are a capture's contents, yet ``os`` takes bytes as paths too (``os.fsencode``,
    ``os.listdir(b".")``, ``sys.argv`` through ``os.fsencode``): bytes that are no capture but
    name a file, or a capture file's name, raise ``TypeError`` saying to give the path as a str,
    where the read would have called the path's own letters "not a pcap or pcapng file"."""
    if not 0 < len(data) <= 4096:
        return
    raw = bytes(data)
    if b"\0" in raw or b"\n" in raw or _core.starts_like_capture(raw[:64]):
        return
    try:
        named = os.path.exists(raw) or raw.lower().endswith(_CAPTURE_SUFFIXES)
    except (OSError, ValueError):
        return
    if named:
        raise TypeError(
            f"bytes are read as a capture's contents, and {raw!r} is a path: give the path as a str "
            f"or a pathlib.Path ({os.fsdecode(raw)!r}, os.fsdecode(path)), or the file's contents as bytes"
        )


def check_path(path: str) -> None:
    """A missing file or a folder given as a capture, told before any Rust code runs. Any other
    error of ``stat`` (no permission to look into the folder, a file in the path that is no
    folder) is left to the read, which raises it with its own errno (``PermissionError``, ...):
    ``os.path.exists`` is False for those too, and called the file missing."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, ValueError):  # ValueError: a NUL in the path, which no file has
        # Python adds the path: "[Errno 2] no such capture file (check the path): 'x.pcap'".
        raise FileNotFoundError(errno.ENOENT, "no such capture file (check the path)", path) from None
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a capture file", path)


def normalize_each(source: Any) -> list[Any]:
    """One capture or a list (or tuple) of them, each as ``normalize`` gives it; none is an error."""
    raw = list(source) if isinstance(source, (list, tuple)) else [source]
    if not raw:
        raise ValueError("no capture given: pass a path, a list of paths, bytes or a file object")
    refuse_a_stream_twice(raw)
    return [normalize(s, listed=isinstance(source, (list, tuple))) for s in raw]


def refuse_a_stream_twice(sources: list[Any]) -> None:
    """A named pipe (or a shell's ``<(...)``, or ``/dev/stdin`` beside '-'; a socket or a
    character device such as a terminal streams alike) given twice: each opening of it reads part
    of one stream, so the first got some of its blocks and the second started mid-block ("not a
    pcap or pcapng file"), or a second opening after the first had read it all waited for a writer
    forever. Told before anything is opened, as '-' twice is.

    Stdin named twice ('-' beside ``/dev/stdin``) is refused whatever it is, a redirected regular
    file too: '-' reads on from where fd 0 stands, ``/dev/stdin`` opens the file anew from its
    start, so the two could even differ, and one input given twice is a slip, as '-' twice is.
    A regular file's own path given twice is read twice (with a warning that its packets count
    once per copy): a name for it, not stdin."""
    seen: dict[tuple[int, int], int] = {}
    stdin_first: int | None = None
    dash_first: int | None = None
    for k, s in enumerate(sources):
        if not isinstance(s, (str, os.PathLike)):
            continue
        path = os.fspath(s)
        if path in ("-", b"-"):
            # Refused before any look at fd 0: it may be closed, or unknown to this process's
            # ``sys.stdin`` (a notebook's, a test runner's), and '-' twice reads it twice anyway.
            if dash_first is not None:
                raise ValueError("stdin ('-') can be read only once")
            dash_first = k
            if not _dash_reads_fd0():
                continue  # a Python object in sys.stdin: not what /dev/stdin opens
        try:
            # fd 0 itself, which the readers read, not ``sys.stdin.fileno()``: a notebook, IDLE or
            # a test runner puts an object there with no file number, and stdin named twice went
            # unseen.
            st = os.fstat(0) if path in ("-", b"-") else os.stat(path)
        except (OSError, ValueError):
            continue
        # A regular file (or a block device) can be opened again from its start.
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            if _names_stdin(path):
                if stdin_first is not None:
                    raise ValueError(
                        f"captures {stdin_first + 1} and {k + 1} ({_name(sources[stdin_first])} and {_name(s)}) "
                        "both name stdin, which is read once: give it once (to read a file twice, give its "
                        "path twice)"
                    )
                stdin_first = k
            continue
        first = seen.setdefault((st.st_dev, st.st_ino), k)
        if first != k:
            # A terminal or a socket streams as a pipe does; called a pipe, /dev/null twice misled.
            kind = "pipe" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else "device"
            raise ValueError(
                f"captures {first + 1} and {k + 1} ({_name(sources[first])} and {_name(s)}) are the "
                f"same {kind}, which reads once: give it once, or save the capture to a file to read it twice"
            )


# Names of fd 0 on Linux and macOS, beside '-': each opens whatever stdin is.
_STDIN_NAMES = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def _names_stdin(path: str | bytes) -> bool:
    """Whether ``path`` is '-' or one of stdin's names that stands for stdin now."""
    if path in ("-", b"-"):
        return True
    if os.fsdecode(path) not in _STDIN_NAMES:
        return False
    try:
        return os.path.samestat(os.stat(path), os.fstat(0))
    except (OSError, ValueError):
        return False


def _name(source: Any) -> str:
    path = os.fspath(source)
    return "stdin" if path in ("-", b"-") else repr(path if isinstance(path, str) else os.fsdecode(path))


def _dash_reads_fd0() -> bool:
    """Whether '-' reads fd 0 (as `normalize` sends it), not a Python object put in sys.stdin."""
    buf = getattr(sys.stdin, "buffer", None)
    return buf is None or _is_real_stdin(buf)


def _is_real_stdin(buf: Any) -> bool:
    """True when sys.stdin is the process's own fd 0, which Rust reads directly (faster)."""
    try:
        return bool(buf.fileno() == 0)
    except (AttributeError, OSError, ValueError):
        return False


def is_rereadable(source: Any) -> bool:
    """Bytes, or the path of a regular file: what a second pass (the mean rate's) can read again.
    A named pipe, a shell's ``<(...)`` or a device is read once; opening it again would wait
    for a writer that never comes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return True
    if not isinstance(source, str) or source == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(source).st_mode)
    except OSError:
        return False
