"""A one-line progress bar on stderr, fed by the ``progress`` callback of ``scan``/``info``."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ._units import format_bytes

WIDTH = 24


def _eta(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class ProgressBar:
    """Call it as ``bar(bytes_done, bytes_total_or_None)``; ``close()`` erases the line.

    It draws only when ``enabled`` (the CLI enables it when stderr is a terminal and ``--quiet``
    is not given), so piped or logged stderr never fills with carriage returns.
    """

    def __init__(self, label: str, *, enabled: bool, stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self.drawn = False

    @staticmethod
    def wanted(quiet: bool, stream: TextIO | None = None) -> bool:
        s = stream if stream is not None else sys.stderr
        try:
            return not quiet and s.isatty()
        except (AttributeError, ValueError):
            return False

    def render(self, done: int, total: int | None, elapsed: float) -> str:
        rate = done / elapsed if elapsed > 0 else 0.0
        speed = f"{format_bytes(rate)}/s"
        if total:
            frac = min(done / total, 1.0)
            filled = int(frac * WIDTH)
            bar = "#" * filled + "-" * (WIDTH - filled)
            eta = _eta((total - done) / rate) if rate > 0 and done < total else "0s"
            return (
                f"{self.label} [{bar}] {frac * 100:5.1f}%  {format_bytes(done)} / {format_bytes(total)}"
                f"  {speed}  ETA {eta}"
            )
        # A stream (stdin, a pipe): no total, so no percentage and no ETA.
        return f"{self.label} {format_bytes(done)}  {speed}"

    def __call__(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        line = self.render(done, total, time.monotonic() - self.started)
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False
