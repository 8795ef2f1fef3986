"""Exit codes, the errors the command line raises itself, and how any error is told: its exit
code and its message, naming the input being read."""

from __future__ import annotations

import contextvars

EXIT_OK = 0
EXIT_CAPTURE = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_OUTPUT = 4
EXIT_INTERNAL = 5
EXIT_PIPE = 141
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line found after parsing (e.g. an output format we cannot write)."""


class _OutputError(Exception):
    """The output file could not be written."""


# The inputs being read, so a capture error can name them (the core's message gives only the
# offset). A context variable, set afresh by each `main`: a program that calls main() from
# several threads gets each command's own files named, and one that calls it again never gets
# the files of an earlier command.
_READING: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("_READING", default=())


def _reading_now(*files: str) -> None:
    _READING.set(files)


def _reading_where() -> str:
    """The input being read, as an error's message names it (' trace.pcap', ' from stdin'), or
    '' when none is known."""
    reading = _READING.get()
    if not reading:
        return ""
    if len(reading) == 1:
        return " from stdin" if reading[0] == "-" else f" {reading[0]}"
    # Hundreds of files listed in one line would bury the error itself.
    if len(reading) <= 4:
        return " (one of " + ", ".join(reading) + ")"
    return f" (one of the {len(reading)} files, {reading[0]} to {reading[-1]})"


def _os_told(e: OSError) -> str:
    """An OSError as Python shows it, without the "[Errno N]": its message, then the file (quoted,
    so that control characters in a name are shown, not printed), unless the message names it."""
    told = f"{e.strerror or e}"
    if e.filename is not None and str(e.filename) not in told:
        told += f": {e.filename!r}"
    return told


def _classify(e: BaseException) -> tuple[int, str]:
    import burstcore

    if isinstance(e, (FileNotFoundError, IsADirectoryError)):
        return EXIT_NOT_FOUND, _os_told(e)
    limit = getattr(e, "limit", None)
    if isinstance(e, burstcore.LimitExceededError) and limit != "capture":
        # A limit on the result (groups, flows, pairs): the capture is fine. Packets too many to
        # hold at once (reorder buffer, E(τ)'s ring) may be damaged timestamps: not called fine.
        # A limit on the capture's structure (a block larger than allowed, at a byte offset) is
        # damage, told as below. By `limit`, not by the message's words, which may change.
        fine = " (the capture itself is fine)" if limit == "result" else ""
        return EXIT_CAPTURE, f"stopped at a limit{fine}: {e}"
    if isinstance(e, burstcore.CaptureError):
        named = getattr(e, "input", None)
        if named:
            # One of several files: the error names it, so say it once, up front.
            msg = str(e).removesuffix(f" of {named}").removesuffix(f" (in {named})")
            return EXIT_CAPTURE, f"cannot read the capture {named}: {msg}"
        return EXIT_CAPTURE, f"cannot read the capture{_reading_where()}: {e}"
    if isinstance(e, UsageError):
        return EXIT_USAGE, str(e)
    if isinstance(e, _OutputError):
        return EXIT_OUTPUT, str(e)
    if isinstance(e, ImportError) and e.name == "matplotlib":
        # plot and report without the plot extra: what to install, not an internal error.
        return EXIT_USAGE, str(e)
    if isinstance(e, ValueError):
        # Values the API rejected (after parsing), e.g. a window not a whole number of ns.
        return EXIT_USAGE, str(e)
    if isinstance(e, OSError):
        # Every write of an output is wrapped as an _OutputError (`_writing`, `_check_output`):
        # an OSError left is the input's (no permission to read it, an I/O error, a file
        # truncated while it was read).
        where = _reading_where()
        reading = _READING.get()
        if e.filename is not None and len(reading) > 1 and str(e.filename) in reading:
            # Which of several: the error knows, as a capture error's `input` does.
            where = f" {e.filename}"
        # "cannot read the capture x.pcap: ..." names the file already.
        told = f"{e.strerror or e}" if e.filename is not None and where == f" {e.filename}" else _os_told(e)
        return EXIT_CAPTURE, f"cannot read the capture{where}: {told}"
    return EXIT_INTERNAL, f"internal error: {type(e).__name__}: {e} (please report it, with the output of --debug)"
