"""The FILEs: checked before a long read (a missing one told with what it likely is), named in
messages and on the terminal, read (stdin and pipes into memory once) with a progress bar, and
the read options as the API's keywords."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import select
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from .._units import printable
from .errors import UsageError, _reading_now
from .messages import Told, _recorded_warnings
from .values import _horizon


@contextlib.contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Any]:
    from .._progress import ProgressBar

    bar = ProgressBar(label, enabled=ProgressBar.wanted(quiet))
    try:
        yield bar
    finally:
        bar.close()


@dataclasses.dataclass(frozen=True)
class _Typed:
    """The command and the words typed after it, the action of each of its options taking a
    value and the names of those taking none: a word that is no file may be the second word of an
    option's value, or one given to an option that takes none (`_stray_value`).
    Kept with the parse's namespace (`main`), not in the module: two command lines run in one
    process (threads, a program calling main()) each see their own."""

    command: str = ""
    words: Sequence[str] = ()
    valued: Mapping[str, argparse.Action] = dataclasses.field(default_factory=dict)
    flags: Collection[str] = ()


def _check_streams(files: Sequence[str]) -> None:
    """A named pipe given twice is a usage error, as '-' twice is (`refuse_a_stream_twice`)."""
    from .._sources import refuse_a_stream_twice

    try:
        refuse_a_stream_twice(list(files))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _check_inputs(files: Sequence[str], typed: _Typed) -> None:
    if list(files).count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    _check_streams(files)
    if "-" in files and sys.stdin is None:
        raise UsageError("'-' reads a capture from stdin, which is closed: pipe one in (e.g. dumpcap -w - | ...)")
    if "-" in files and sys.stdin.isatty():
        # It would wait, silently, for a capture typed at the keyboard.
        raise UsageError("'-' reads a capture from stdin, which is a terminal: pipe one in (e.g. dumpcap -w - | ...)")
    from .._sources import check_path

    for f in files:
        if f == "-":
            continue
        try:
            check_path(f)
        except FileNotFoundError as e:
            stray = _stray_value(f, typed)
            if stray is None:
                raise
            raise FileNotFoundError(e.errno, f"{e.strerror}: {f!r}; {stray}", f) from None


# Endings of what is meant as a capture file, not as a word of a filter.
_CAPTURE_ENDINGS = (".pcap", ".pcapng", ".cap", ".gz", ".zst", ".zstd")


def _stray_value(word: str, typed: _Typed) -> str | None:
    """What a missing file typed right after an option's value likely is, and how to write it:
    files and options mix in any order (`_parse`), so '--windows 1ms 2ms', '--filter tcp port
    80' or '-o my results.csv' leave '2ms', 'port' or 'results.csv' to be read as a file. Only a
    word that reads as part of the value (an item of the list, a word of a filter or of an
    output's name rather than a capture) is told so."""
    import shlex

    words, valued = typed.words, typed.valued
    for at, here in enumerate(words):
        if here != word or at == 0:
            continue
        before = words[at - 1]
        # One of the command's own flags: not '--', a negative number or '-ox.csv' (-o x.csv).
        if before in typed.flags and word[:1].isdecimal() and not word.lower().endswith(_CAPTURE_ENDINGS):
            # A value given to a flag: 'superpose a b --random-offsets 5ms' read 5ms as a capture.
            bound = f" (the largest is --max-offset {word})" if before == "--random-offsets" else ""
            return f"it follows {before}, which takes no value{bound}"
        option, value = before.split("=", 1) if before.startswith("--") and "=" in before else ("", before)
        if not option and at >= 2 and words[at - 2] in valued:
            option = words[at - 2]
        action = valued.get(option)
        if action is None:
            continue
        # The words of the value typed apart: this one and those after it that are no files either.
        rest = [word]
        for more in words[at + 1 :]:
            if more.startswith("-") or os.path.exists(more):
                break
            rest.append(more)
        if action.metavar == "LIST" and callable(action.type) and _reads_as(action.type, word):
            joined = ",".join([value, *rest])
            return f"it follows {option} {value}: a list is one word, comma-separated ({option} {joined})"
        if option == "--filter" and "/" not in word and not word.lower().endswith(_CAPTURE_ENDINGS):
            quoted = shlex.quote(" ".join([value, *rest]))
            return f"it follows --filter {value}: quote an expression of several words (--filter {quoted})"
        if action.dest == "output" and not word.lower().endswith(_CAPTURE_ENDINGS):
            if value.lower().endswith(_CAPTURE_ENDINGS):
                # 'scan -o a.pcap out.csv': the capture given as the output, the output as a capture.
                swapped = shlex.join(["burstcore", typed.command, value, option, word])
                return (
                    f"it follows {option} {value}, which names the file to write: give the capture without it "
                    f"({swapped})"
                )
            quoted = shlex.quote(" ".join([value, *rest]))
            return (
                f"it follows {option} {value}: {option} takes one path; quote a name of several words "
                f"({option} {quoted})"
            )
    return None


def _reads_as(parse: Callable[[str], Any], word: str) -> bool:
    try:
        parse(word)
    except (argparse.ArgumentTypeError, ValueError):
        return False
    return True


def _label(f: str) -> str:
    """A file as the terminal, a figure or a report names it: its base name, shown safely (a name
    holding an ESC would drive the terminal it is printed to)."""
    return "stdin" if f == "-" else printable(_shown(os.path.basename(f)))


def _named(path: str) -> str:
    """A file as warnings and errors name it: its path as given ('stdin' for '-'), escaped when
    it is told (`_told`)."""
    return "stdin" if path == "-" else path


def _shown(path: str) -> str:
    """A file name as text: bytes that are no UTF-8 (kept by Python as lone surrogates, which
    open() takes but polars and an HTML file refuse) become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _rereadable(files: Sequence[str]) -> list[Any]:
    """Sources that can be read several times (info, scan, iterations): stdin, a named pipe or a
    shell's ``<(...)`` is read into memory once; a regular file is left to be opened each time."""
    from .._sources import is_rereadable

    def once(f: str) -> Any:
        if f == "-":
            return _read_whole(sys.stdin.buffer)
        if is_rereadable(f):
            return f
        with open(f, "rb") as stream:
            return _read_whole(stream)

    return [once(f) for f in files]


def _read_whole(stream: Any) -> bytes:
    """All of a stream that cannot be read twice, a chunk at a time, once its first bytes show
    a capture: what starts otherwise (/dev/zero, a text) is handed on as those bytes alone, for
    the reader to say what it is, instead of being read into memory without end."""
    from .. import _burstcore as _core

    head = _read_some(stream)
    while head and len(head) < 4 and (more := _read_some(stream)):
        head += more
    if not _core.starts_like_capture(head):
        return head
    chunks = [head]
    while chunk := _read_some(stream):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_some(stream: Any) -> bytes:
    """The next bytes of a stream (empty at its end), after waiting for them in poll().

    Importing polars installs a SIGINT handler that restarts an interrupted read(), so a Ctrl-C
    would wait for the writer. poll() is never restarted, whatever the handler's flags, so the
    wait returns and Python raises KeyboardInterrupt; changing the flag instead
    (signal.siginterrupt) would outlive the command in a program that calls main(). read1 of
    more than the buffer reads the descriptor directly, so nothing waits in the buffer while
    poll() waits on the descriptor."""
    if not hasattr(stream, "read1"):
        return bytes(stream.read(1 << 20))
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no descriptor, or no poll()
        fd = stream.fileno()
        waiting = select.poll()
        waiting.register(fd, select.POLLIN | select.POLLPRI)
        waiting.poll()
    return bytes(stream.read1(1 << 20))


def _read_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The API's keywords for the read options (`_read_options`)."""
    return {
        "reorder_horizon": args.reorder_horizon,
        "on_late": args.on_late,
        "strict": args.strict,
        "mmap": args.mmap,
        "start": args.start,
        "end": args.end,
        "filter": args.filter,
    }


def _read_kwargs_asked(args: argparse.Namespace) -> dict[str, Any]:
    """`_read_kwargs` without the options left at their defaults: a call with none asked for
    stays the plain public one."""
    from .._scan import DEFAULT_HORIZON

    defaults = {"reorder_horizon": _horizon(DEFAULT_HORIZON), "on_late": "error", "strict": False}
    return {k: v for k, v in _read_kwargs(args).items() if v != defaults.get(k)}


def _scan_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "windows": args.windows,
        "rates": args.rates,
        "bins": args.bins,
        "bin_origin": args.bin_origin,
        "by": args.by,
        "size": args.size,
        "fcs": args.fcs,
        "closed": args.closed,
        "threads": args.threads,
        "max_groups": args.max_groups,
        **_read_kwargs(args),
    }


def _read_merged(args: argparse.Namespace, analyse: Callable[..., Any], **kwargs: Any) -> tuple[Any, Told]:
    """`analyse` (scan or an analysis) of args.files, several merged in timestamp order as the API
    merges a list of paths, with a progress bar; its result and the capture warnings it gave."""
    files = args.files
    src: Any = files[0] if len(files) == 1 else list(files)
    _reading_now(*files)
    label = files[0] if len(files) == 1 else f"{len(files)} files merged"
    with _progress(_label(label), args.quiet) as bar, _recorded_warnings() as told:
        result = analyse(src, progress=bar, **kwargs)
    return result, told
