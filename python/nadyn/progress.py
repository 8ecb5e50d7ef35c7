"""The progress bars of nadyn.simulate, nadyn.sweep and nadyn.study.run (tqdm, Debian's
python3-tqdm; a widget in a notebook, text on a terminal).

``progress=None`` (the default) shows a bar when the process is attached to a terminal
(stderr is a TTY) or runs in a Jupyter kernel, ``True`` always, ``False`` never. The
computation runs without the GIL; the compiled module's watching thread, which wakes every
50 ms to run Python's signal handlers (Ctrl-C), calls the bar's update with the GIL then.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

__all__ = ["wanted", "Bar"]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        return type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:  # noqa: BLE001 (no IPython shell after all)
        return False


def wanted(progress: bool | None) -> bool:
    """Whether to show a bar: ``progress`` when given, else on a terminal or in a notebook."""
    if progress is not None:
        return bool(progress)
    stream = sys.stderr
    return _in_notebook() or bool(stream is not None and hasattr(stream, "isatty")
                                  and stream.isatty())


class Bar:
    """A tqdm bar made on its first update (a sweep's total is known from its first report),
    closed by ``finish`` (the last update first), ``close`` or the ``with`` block. Without tqdm, no bar (a warning when the bar
    was asked for with progress=True)."""

    def __init__(self, progress: bool | None, description: str, unit: str, total: float | None = None,
                 time_bar: bool = False):
        self._show = wanted(progress)
        self._description, self._unit, self._total = description, unit, total
        self._time_bar = time_bar
        self._bar: Any = None
        self._tqdm: Callable[..., Any] | None = None
        if self._show:
            try:
                from tqdm.auto import tqdm  # noqa: PLC0415

                self._tqdm = tqdm
            except ImportError:
                if progress:
                    warnings.warn("progress=True needs tqdm (Debian's python3-tqdm); no bar",
                                  stacklevel=3)
                self._show = False

    @property
    def callback(self) -> Callable[..., None] | None:
        """What the compiled module calls: None when no bar is shown (no GIL taken for it)."""
        return self.update if self._show else None

    def update(self, done: float, total: float | None = None) -> None:
        if self._tqdm is None:
            return
        if self._bar is None:
            total = total if total is not None else self._total
            options: dict[str, Any] = {"total": total, "desc": self._description,
                                       "unit": self._unit, "leave": True, "dynamic_ncols": True}
            if self._time_bar:
                options["bar_format"] = ("{desc}: {percentage:3.0f}%|{bar}| t = {n:.4g} of "
                                         "{total:.4g} [{elapsed}<{remaining}]")
            self._bar = self._tqdm(**options)
        value = done * self._total if self._time_bar and self._total else done
        self._bar.n = value
        self._bar.refresh()

    def finish(self, done: float, total: float | None = None) -> None:
        """The last update (a computation may end between two of the watcher's wake-ups, or
        before the first), then close."""
        self.update(done, total)
        self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close()
