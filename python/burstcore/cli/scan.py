"""The commands info and scan."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._units import printable
from .errors import EXIT_OK, _classify, _reading_now
from .inputs import _check_inputs, _check_streams, _label, _progress, _read_merged, _scan_kwargs, _shown
from .messages import Told, _as_options, _error_detail, _recorded_warnings, _told
from .output import _check_output, _emit, _flush_stdout, _prepare_output, _tables, _valid_text, _with_file, _writing
from .terminal import _print_result, _title
from .words import _filter_for


def cmd_info(args: argparse.Namespace) -> int:
    import burstcore
    from burstcore._packets import info_of

    several = len(args.files) > 1
    _check_output(None, closed="info writes only there, so redirect it (> FILE)")
    # Every file, or (several) only the rules for stdin: a missing file is then one result.
    _check_inputs(args.files if not several else [f for f in args.files if f == "-"], args.typed)
    _check_streams(args.files)
    # Each file on its own, as capinfos: one that cannot be read (or is missing) is reported (on
    # stderr, and in --json as {"file", "error"}) and the others still are; the exit code then
    # says so, the worst of them (a missing file over an unreadable one).
    infos: list[tuple[str, Any]] = []
    details: list[dict[str, Any]] = []  # each file's warning_details, or its error_detail
    worst = EXIT_OK
    for k, f in enumerate(args.files):
        _reading_now(f)
        try:
            if several:
                _check_inputs([f], args.typed)
            with _progress(_label(f), args.quiet) as bar, _recorded_warnings(f if several else None) as told:
                infos.append(
                    (
                        f,
                        info_of(
                            f,
                            strict=args.strict,
                            progress=bar,
                            mmap=args.mmap,
                            start=args.start,
                            end=args.end,
                            filter=_filter_for(args, k),
                            # A ring-buffer set's empty last file is a cut file, as scan has it.
                            one_of_several=several,
                        ),
                    )
                )
            # Its warnings as to_dict() has them (not in the options' spelling), each with its detail.
            ws = infos[-1][1].warnings
            found = told.details([_as_options(w) for w in ws])
            details.append({"warning_details": [{**d, "message": w} for w, d in zip(ws, found, strict=True)]})
        except (burstcore.CaptureError, OSError) as e:
            if not several:
                raise
            code, message = _classify(e)
            worst = max(worst, code)
            print(f"burstcore info: error: {_told(message)}", file=sys.stderr)
            infos.append((f, message))
            details.append({"error_detail": _error_detail(e)})
    # A failed write is the output's (exit 4, or 141 for a reader gone), not the capture's.
    with _writing("stdout"):
        if args.format == "json":
            doc = [
                {"file": f, "error": _as_options(i), **d} if isinstance(i, str) else {"file": f, **i.to_dict(), **d}
                for (f, i), d in zip(infos, details, strict=True)
            ]
            print(json.dumps(_valid_text(doc), default=str, allow_nan=False))
        else:
            for k, (f, i) in enumerate(infos):
                if several:
                    print(("\n" if k else "") + f"== {printable(_shown(f))}")
                print(f"error: {_told(i)}" if isinstance(i, str) else i)
        _flush_stdout()
    return worst


def cmd_scan(args: argparse.Namespace) -> int:
    import burstcore
    from burstcore._packets import info_of

    fmt = _prepare_output(args)
    kwargs = _scan_kwargs(args)
    results: list[tuple[str, Any]] = []
    told = Told()  # every warning's detail, by its text
    # --each, as stderr words them: in the options' spelling, each naming its file when several.
    each_told: list[str] = []
    if args.each:
        for k, f in enumerate(args.files):
            _reading_now(f)
            name = f if len(args.files) > 1 else None
            with _progress(_label(f), args.quiet) as bar, _recorded_warnings(name) as own_told:
                own = {**kwargs, "filter": _filter_for(args, k)}
                try:
                    results.append((f, burstcore.scan(f, progress=bar, **own)))
                except burstcore.NotACaptureError as e:
                    if name is None or e.offset != 0:
                        raise
                    # Of several files, one cut before its magic (a ring-buffer set's empty last
                    # file) is a cut file, as the merged scan has it: warned of (strict: refused,
                    # and junk still is), with no rows. info reads it as one of several.
                    info_of(f, strict=args.strict, mmap=args.mmap, one_of_several=True)
                    results_of_f = None
                else:
                    results_of_f = results[-1][1]
            told.by_text.update(own_told.by_text)
            if results_of_f is None:
                each_told += [f"{f}: {t}" for t in own_told]
            else:
                each_told += [_as_options(f"{f}: {w}" if name else w) for w in results_of_f.warnings]
    else:
        r, told = _read_merged(args, burstcore.scan, **kwargs)
        results.append((_title(args.files), r))

    def show() -> None:
        for label, r in results:
            _print_result(_title([label]) if args.each else label, r, args.top)

    if fmt == "table":
        return _emit(fmt, {}, {}, args, show)
    tables = _with_file(results) if args.each else _tables(results[0][1])
    meta = {
        "burstcore": burstcore.__version__,
        "command": args.command,
        "files": list(args.files),
        "merged": not args.each,
        # --each: one config per scan, in the order of "files" (a file given twice, through two
        # filters, is scanned twice; one cut before its magic has none, only its warning).
        # --mmap as given (null: the platform's default): the API's
        # config leaves it out, as it changes how the files are read, not what is measured.
        "config": {**results[0][1].config, "mmap": args.mmap}
        if not args.each
        else [{**r.config, "mmap": args.mmap} for _, r in results],
        # As stderr words them: in the options' spelling, and each naming its file when the
        # files were scanned one by one (a merged scan's warnings name theirs already).
        "warnings": each_told if args.each else [_as_options(w) for w in results[0][1].warnings],
    }
    meta["warning_details"] = told.details(meta["warnings"])
    return _emit(fmt, tables, meta, args, show)
