"""The backend interface: what a target offers the runtime. Read this and
`docs/architecture.md` ("Backends") to write one.

A **backend** (registered as a target with `rs.register_backend(name, backend)` or the
``relsim.backends`` entry-point group) turns an analysed kernel into a `Launch`:

* ``compile(analysed, config) -> Launch``: `analysed` is the `runtime.pipeline.Analysed` of one
  kernel over one relation (typed IR, access summary, phase information, reduction slot
  layouts); `config` the `rs.Config` it runs under. The runtime caches the result per (kernel,
  relation schema, config) and calls it for every launch.
* ``configure(config)``: `config` became the process default (`rs.configure`): apply its
  process-wide settings (the cpu backend sets Numba's thread count) or raise a ConfigError.
* ``threads(config) -> int``: how many threads a launch under `config` uses (reports print it);
* ``unavailable() -> str | None``: why the target cannot run here now (optional; None: it can).

A **launch** (the compiled form) offers:

* ``launch(relation, subset)``: run the kernel once for every row of `relation`, or of `subset`
  (a `Subset` of it) when not None, with the serial meaning (rows in ascending order, program
  order within a row) — results may not depend on how the rows are scheduled;
* ``analysed``, and ``source`` / ``path``: the generated module's text and file, or None when
  nothing is generated (what `rs.explain` prints);
* optionally ``compile_jobs(relation, subset)``: the compilations the next such launch needs, as
  `runtime.compile_ahead.CompileJob`s, so that `rs.precompile` can run them on other cores.

**Where data lives.** Fields and Globals keep a host array (``field._data``, ``g._data``): the
data model's view. A backend that keeps newer values elsewhere — reductions whose fold it left
pending (cpu, `runtime/pending.py`), a device copy, ghost rows — attaches a `Residency` to the
field or Global (``obj.residency``); the data model calls it before the host array is read and
after the host wrote it, and knows nothing else of how kernels run. A backend reads and writes
the host arrays it is given only after bringing them up to date (``residency.before_host_read``),
and detaches its residency when the host array is current again.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol


class Launch(ABC):
    """One kernel compiled for one relation and configuration."""

    analysed = None  # the runtime.pipeline.Analysed it was compiled from
    source: str | None = None  # generated module source, if any (rs.explain)
    path: str | None = None  # the file holding `source` (tracebacks point into it)

    @abstractmethod
    def launch(self, relation, subset) -> None:
        """Run over every row of `relation` (or of `subset`, a Subset of it, if not None)."""


class Backend(ABC):
    """A target's compiler (one object per registered target)."""

    name = "?"

    @abstractmethod
    def compile(self, analysed, config) -> Launch:
        """The launchable form of `analysed` under `config`."""

    def configure(self, config) -> None:  # noqa: B027  (optional: most targets have none)
        """`config` became the process default: apply process-wide settings (default: none)."""

    def threads(self, config) -> int:
        """Threads a launch under `config` uses (default: 1)."""
        return 1

    def unavailable(self) -> str | None:
        """Why this target cannot run kernels on this machine now (no device, say), or None
        (default: it can). Tools that try every target (the soak) skip those that cannot."""
        return None


# Set once some field has a device copy as its residency (one that says so with a true
# `on_device` attribute): from then on a backend computing on the host arrays brings the fields
# it uses to the host before its launch (`host_side`), so that mixing targets on the same
# fields stays correct. A plain flag: host launches test it, cheaply, every time.
device_copies = False


def variant_note(options, debug: bool) -> str:
    """What a generated module's first line says of its variant: debug checks, products that
    may fuse. It also keeps variants apart in the disk cache (named by the text; Numba's
    index ignores the jit flags)."""
    return (", with debug checks" if debug else "") + \
        (", products may fuse (fast_math)" if options.fast_math else "")


def host_side(fields) -> None:
    """Before a host-side launch touching `fields`: download those a device holds newer, and
    drop their device copies (the launch may write the host arrays; the device backend makes
    a new copy at its next launch)."""
    for f in fields:
        r = f.residency
        if getattr(r, "on_device", False):  # (another backend's residency may be there)
            r.before_host_read(f)
            f.residency = None


class Residency(Protocol):
    """Attached by the runtime as ``field.residency`` / ``global.residency`` while the host array
    is not the current copy of the values; None otherwise."""

    def before_host_read(self, obj) -> None:
        """Bring `obj`'s host array up to date (it is about to be read, or handed out)."""

    def after_host_write(self, obj) -> None:
        """The host just wrote `obj`'s host array: what was kept elsewhere is outdated."""
