"""relsim: kernels over relations, checked race-free, compiled through Numba.

Public API (everything a simulation script needs); see docs/ (docs/api/relsim.md renders it).
"""
import gc as _gc

# Importing relsim (Numba with it) makes ~90,000 container objects that live as long as the
# process. The cyclic garbage collector would scan them in ~150 passes during the import and
# in every full pass after it, freeing nothing: 0.15-0.2 s of a warm `relsim run lulesh -s 30
# -i 1` (~1 s). So it is paused while the package loads, and what exists then is frozen
# (`gc.freeze`: still freed by reference counting, never scanned for cycles again;
# `gc.unfreeze()` undoes it). A collector the program disabled stays disabled.
_collecting = _gc.isenabled()
_gc.disable()

try:
    from . import errors as _errors
    from . import geometry
    from . import output as _output
    from .adjoint_step import AdjointStep, record_step
    from .builtins import (
        at,
        cross,
        delete,
        det,
        dot,
        eigh,
        eye,
        insert,
        inverse,
        norm,
        normal,
        outer,
        polar,
        reduce_argmax,
        reduce_argmin,
        reduce_max,
        reduce_min,
        static,
        svd,
        transpose,
        uniform,
    )
    from .checkpoint import checkpoint, restart
    from .config import Config, configure
    from .errors import (
        CaptureError,
        ConfigError,
        DataError,
        DeviceMemoryError,
        DomainError,
        GradientError,
        KernelCheckError,
        KernelError,
        KernelNameError,
        KernelRuntimeError,
        KernelSyntaxError,
        KernelTypeError,
        PhaseError,
        RelsimError,
        RelsimWarning,
        SchemaError,
    )
    from .exact import exact_sum
    from .kernel import Func, FusedKernel, Kernel, func, fuse, kernel
    from .output import write
    from .relations import Field, Global, Grouping, KeyField, Relation, Subset, new_relation
    from .relations import launch as _launch
    from .relations.colouring import colour
    from .relations.global_branch import cond
    from .relations.global_expr import assign
    from .relations.global_loop import while_loop
    from .runtime import epoch as _epoch
    from .runtime import run as _run
    from .runtime import synchronize
    from .runtime.capture import capture
    from .runtime.explain import explain
    from .runtime.parallel import partition_rows as partition
    from .runtime.parallel import ranks
    from .runtime.precompile import precompile
    from .tangents import Tangents
    from .tape import Tape
    from .target_registry import register_backend, targets
    from .types import bool_, f32, f64, i32, i64, mat, vec
finally:  # also when an import fails
    _gc.freeze()
    if _collecting:
        _gc.enable()

__version__ = "0.2.0"  # the one version string (pyproject.toml and CHANGELOG.md read it)

_launch.install(_run, _epoch.bump)
_output.install_writer_check(lambda: ranks().rank == 0)
_errors.install_excepthook()  # an uncaught relsim error shows the user's frames only


__all__ = [
    "Relation", "new_relation", "Field", "KeyField", "Subset", "Grouping", "Global",
    "kernel", "func", "fuse", "Kernel", "FusedKernel", "Func",
    "explain", "precompile", "configure", "Config", "targets",
    "register_backend", "partition", "ranks", "checkpoint", "restart", "colour",
    "synchronize", "capture", "assign", "while_loop", "cond", "Tape", "Tangents", "AdjointStep",
    "record_step", "exact_sum",
    "bool_", "i32", "i64", "f32", "f64", "vec", "mat",
    "dot", "cross", "norm", "outer", "det", "inverse", "transpose", "eye", "static",
    "eigh", "svd", "polar",
    "uniform", "normal", "at",
    "reduce_min", "reduce_max", "reduce_argmin", "reduce_argmax", "insert", "delete",
    "RelsimError", "KernelError", "KernelSyntaxError", "KernelTypeError", "KernelNameError",
    "PhaseError", "GradientError", "KernelRuntimeError", "KernelCheckError", "DataError",
    "SchemaError", "ConfigError", "DomainError", "DeviceMemoryError", "RelsimWarning",
    "CaptureError", "write", "geometry", "__version__",
]
