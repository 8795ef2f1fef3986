"""The ``burstcore`` command: info, scan, plot and report on packet captures, and the analyses
flows, matrix, iterations, bursts, sizes, gaps and superpose.

`main` runs a command line. The modules, each using only those listed before it: `errors` (exit
codes, and how an error is told), `messages` (warnings and messages in the options' spelling),
`values` (option text into values), `epilogs` (the help's examples), `words` (the words typed,
arranged for argparse), `inputs` (the FILEs: checked, named, read), `output` (machine formats and
writing), `parser` (the options of each command), `terminal` (the tables shown), and the
commands: `scan` (info, scan), `figures` (plot, report), `analyses`, `shared`."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from .. import _burstcore as _core
from .analyses import cmd_bursts, cmd_flows, cmd_gaps, cmd_iterations, cmd_matrix, cmd_sizes, cmd_superpose
from .epilogs import EXIT_CODES
from .errors import (
    _READING,
    EXIT_CAPTURE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_PIPE,
    EXIT_USAGE,
    UsageError,
    _classify,
)
from .figures import cmd_plot, cmd_report
from .inputs import _Typed
from .messages import _told
from .output import _silence_stdout, machine_frame
from .parser import build_parser
from .scan import cmd_info, cmd_scan
from .shared import cmd_shared
from .words import (
    _command_first,
    _elsewhere,
    _flag_options,
    _negative_values,
    _one_filter_or_each,
    _parse,
    _subparsers,
    _valued_options,
)

# What a program may take from here (the console script runs main).
__all__ = [
    "COMMANDS",
    "EXIT_CAPTURE",
    "EXIT_CODES",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_OUTPUT",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "machine_frame",
    "main",
]

COMMANDS = {
    "info": cmd_info,
    "scan": cmd_scan,
    "plot": cmd_plot,
    "report": cmd_report,
    "flows": cmd_flows,
    "matrix": cmd_matrix,
    "iterations": cmd_iterations,
    "bursts": cmd_bursts,
    "sizes": cmd_sizes,
    "gaps": cmd_gaps,
    "superpose": cmd_superpose,
    "shared": cmd_shared,
}


class _Diagnostics:
    """sys.stderr while a command runs: warnings, errors and the progress bar are told there,
    and a stderr that cannot take them must not cost the result. A write that fails (a full
    disk, a reader of the pipe gone) is dropped: it raised, and the command exited 1 (a full
    disk, taken for an I/O error of the capture) or 141 (taken for stdout's reader gone), with
    its result unwritten. Every other attribute (isatty, fileno) is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _diagnostics() -> Iterator[None]:
    """`_Diagnostics` as sys.stderr for the command. A process started with its stderr closed
    has sys.stderr None, and print(file=None) writes to stdout: the warnings came out in the
    middle of the JSON or CSV a program was to parse. Then /dev/null takes its place, and its
    descriptor (2, the lowest free one) is no longer left for the capture or the output file."""
    before = sys.stderr
    devnull = open(os.devnull, "w", encoding="utf-8") if before is None else None
    sys.stderr = _Diagnostics(devnull if devnull is not None else before)  # type: ignore[assignment]
    try:
        yield
    finally:
        if isinstance(sys.stderr, _Diagnostics):
            sys.stderr.flush()
            sys.stderr = before
        if devnull is not None:
            devnull.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    with _diagnostics():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    typed = _command_first(parser, _negative_values(sys.argv[1:] if argv is None else argv, _valued_options(parser)))
    args, unknown = _parse(parser, typed)
    if args.command:
        valued = _valued_options(parser, args.command, short=True)
        args.typed = _Typed(args.command, typed[1:], valued, _flag_options(parser, args.command))
    if unknown:
        # Told by the command's own parser, which points to its own --help.
        own: argparse.ArgumentParser = _subparsers(parser).get(args.command, parser)
        own.error(f"unrecognized arguments: {' '.join(unknown)}{_elsewhere(parser, args.command, unknown)}")
    if not args.command:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    prog = f"burstcore {args.command}"

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        print(f"{prog}: warning: {_told(str(message))}", file=sys.stderr)

    # The command's warnings read as its own; a program that calls main() gets its own way of
    # showing warnings back when it returns, and no file of this command named by the next.
    shown_before = warnings.showwarning
    warnings.showwarning = show
    reading = _READING.set(())
    try:
        # The command's own polars calls (its tables, its JSON and CSV, its figures) read data
        # types too, outside the API's `one_ctrl_c`: a Ctrl-C there is polars' TypeError for a
        # type it could not name. The whole command inside, so that it is told as interrupted,
        # not as an internal error (a user's TypeError of any other message stays one).
        with _core.one_ctrl_c:
            return COMMANDS[args.command](_one_filter_or_each(args))
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. '| head'); stop quietly, without a second error at exit.
        _silence_stdout()
        return EXIT_PIPE
    except Exception as e:
        code, message = _classify(e)
        if debug:
            traceback.print_exc()
        if getattr(args, "max_groups", None) is not None:
            # Where the command has it (iterations, flows and matrix have none: their messages
            # keep the API's keyword).
            message = message.replace("max_groups", "--max-groups")
        print(f"{prog}: error: {_told(message)}", file=sys.stderr)
        return code
    finally:
        _READING.reset(reading)
        # Unless something else replaced it meanwhile, which is then left as it is.
        if warnings.showwarning is show:
            warnings.showwarning = shown_before
