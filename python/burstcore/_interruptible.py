"""Public functions of burstcore's own whose polars calls read data types, run whole inside
``one_ctrl_c``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from . import _burstcore as _core

P = ParamSpec("P")
R = TypeVar("R")


def interruptible(f: Callable[P, R]) -> Callable[P, R]:
    """``f`` inside ``one_ctrl_c``: polars reads a data type (a cast, a schema) by taking
    ``str()`` of its name, where a Ctrl-C's ``KeyboardInterrupt`` is raised and dropped by
    polars for ``TypeError: '<unprintable str object>' is not a Polars data type``; inside,
    that Ctrl-C is the ``KeyboardInterrupt``. Its name, docstring and signature are ``f``'s
    (``inspect.signature`` and ``help()`` read ``__wrapped__``). The frame this adds is below
    the block, so ``one_ctrl_c``'s exit still runs in no Python frame of its own."""

    @functools.wraps(f)
    def interruptible_call(*args: P.args, **kwargs: P.kwargs) -> R:
        with _core.one_ctrl_c:
            return f(*args, **kwargs)

    return interruptible_call
