"""Error classes by lifecycle stage. Each also subclasses the matching builtin exception.

An error relsim raises on purpose leaves the public entry points (``foreach``, ``rs.explain``)
without relsim's internal frames: the traceback shows the user's call and relsim's message
(which, for a kernel, shows the kernel's line). ``RELSIM_TRACEBACK=full`` keeps every frame.
"""
from __future__ import annotations

import functools
import os
import sys
import traceback
import types


class RelsimError(Exception):
    """Base class of every error relsim raises on purpose."""


class DataError(RelsimError, ValueError):
    """Bad data handed to a relation, field or global (shape, dtype, key out of range)."""


class SchemaError(RelsimError, ValueError):
    """Bad relation schema: duplicate or unknown field, subset or grouping names."""


class ConfigError(RelsimError, ValueError):
    """Bad configuration (unknown target, bad option)."""


class DomainError(RelsimError, ValueError):
    """A geometric domain could not be built (unreadable file, degenerate element...)."""


class KernelError(RelsimError):
    """An error found while compiling a kernel; carries the user's source location."""

    def __init__(self, message: str, loc=None, kernel: str | None = None, extra=()):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        self.extra = tuple(extra)  # further (label, loc) sites, e.g. the other side of a conflict
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"in kernel '{self.kernel}': {self.message}" if self.kernel else self.message
        parts = [head]
        if self.loc is not None:
            parts.append(self.loc.render())
        for label, loc in self.extra:
            parts.append(f"{label}:\n{loc.render()}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self._render()


class KernelSyntaxError(KernelError, SyntaxError):
    """Python syntax the kernel language does not support."""

    def __init__(self, message, loc=None, kernel=None, extra=()):
        KernelError.__init__(self, message, loc, kernel, extra)
        self.msg = self._render()
        if loc is not None:
            self.filename, self.lineno = loc.filename, loc.line

    def __str__(self) -> str:
        return self._render()


class KernelTypeError(KernelError, TypeError):
    """A type error in a kernel (mismatched operands, bad call arguments...)."""


class KernelNameError(KernelError, NameError):
    """An unknown name or field in a kernel."""


class PhaseError(KernelError, ValueError):
    """A kernel breaks the phase rules (possible race or order dependence)."""


class GradientError(KernelError, ValueError):
    """A kernel (or a program recorded on an `rs.Tape`) that cannot be differentiated, at the
    kernel's line."""


class CaptureError(RelsimError, RuntimeError):
    """Something an `rs.capture` block cannot record (a replay would not repeat it), or a
    replay found changed since the capture."""


class KernelRuntimeError(RelsimError, RuntimeError):
    """A kernel failed while running (e.g. a vector index out of range)."""


class KernelCheckError(KernelRuntimeError):
    """A debug-mode check failed while a kernel ran (``rs.configure(debug=True)``): a NaN or
    inf produced, an integer division by zero, a key or index out of range. Names the kernel,
    the check (`check`: ``"non-finite"``, ``"division"``, ``"int-division"``, ``"key-range"``,
    ``"index-range"``, ``"neighbour"``), the relation and the row the kernel ran for, and shows
    the source line (`loc`) with a caret. Every target reports the same row and site."""

    def __init__(self, message: str, loc=None, kernel: str | None = None, check: str = "",
                 relation: str | None = None, row: int | None = None):
        self.message = message
        self.loc = loc
        self.kernel = kernel
        self.check = check
        self.relation = relation
        self.row = row
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"in kernel '{self.kernel}', row {self.row} of {self.relation}: {self.message}"
        return head if self.loc is None else f"{head}\n{self.loc.render()}"

    def __str__(self) -> str:
        return self._render()


class DeviceMemoryError(RelsimError, MemoryError):
    """An array does not fit in the device's memory (target ``cuda``): names the field and its
    relation (or what else was uploaded) and its size in bytes."""


class RelsimWarning(UserWarning):
    """Something relsim does that is probably not what the script meant (e.g. a captured Python
    value changed after the kernel was compiled: the kernel keeps the compile-time value)."""


def full_traceback() -> bool:
    """Whether errors keep relsim's internal frames (``RELSIM_TRACEBACK=full``)."""
    return os.environ.get("RELSIM_TRACEBACK", "").strip().lower() == "full"


def public(exc: RelsimError) -> RelsimError:
    """`exc` without the frames it gathered inside relsim, for ``raise public(exc)`` in the
    handler of a public entry point: the traceback then starts at that entry point (the frame
    of the raise) and continues with the user's frames. Unchanged under RELSIM_TRACEBACK=full."""
    if full_traceback():
        return exc
    return exc.with_traceback(None)


def entry_point(fn):
    """Decorator for a public function: RelsimErrors leave it without relsim's frames."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RelsimError as exc:
            raise public(exc) from exc.__cause__
    return call


# -- uncaught errors ---------------------------------------------------------------------------
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _without_relsim_frames(tb):
    """The traceback chain `tb` without the frames of relsim's own files."""
    frames = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def format_uncaught(kind, value, tb) -> str:
    """An uncaught exception as the default hook prints it; a RelsimError without relsim's
    frames (the public entry point that raised it included), unless RELSIM_TRACEBACK=full."""
    if isinstance(value, RelsimError) and not full_traceback():
        tb = _without_relsim_frames(tb)
    return "".join(traceback.format_exception(kind, value, tb))


def excepthook(kind, value, tb) -> None:
    """`sys.excepthook` while relsim is imported (installed only over the default one): the
    traceback in one write, without relsim's frames for its own errors."""
    sys.stderr.write(format_uncaught(kind, value, tb))
    sys.stderr.flush()


def install_excepthook() -> None:
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = excepthook
