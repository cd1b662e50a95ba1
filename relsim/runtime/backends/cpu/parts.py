"""A kernel's parallel variant as parts: one serial function, run on every thread on its share.

A function with a ``prange`` loop costs Numba's parallel passes (parfor conversion, array
analysis, gufunc lowering, and the function compiled again around it): ~1.2 s for a small
kernel's row loop against ~0.3 s for its serial twin, and a fixed ~0.3-0.8 s for any function
with a parallel loop, however small (a cold test suite spent half its compiling there). Here
the parallel variant is instead

* its *part function* (`part_function`): the same statements, the ``prange`` loop made a
  ``range`` over part ``_t`` of ``_nt`` of its iterations (Numba's static schedule cuts a
  ``prange`` the same way: equal shares, one per thread), compiled as ordinary serial code;
* a *wrapper* per argument types (`PartFunction`): a C-callable function (`numba.cfunc`) of the
  signature Numba's threading layer calls, which rebuilds the arguments from one packed array
  (addresses and shapes of the arrays, values of the scalars) and runs the part function on
  each part it is given;
* `parallel_for.run_parts`, compiled once per machine, which hands the wrapper to the
  threading layer; `run_serial` calls it with the one part (0, 1) on this thread: a serial
  launch runs the same compiled code (`Parts` with `serial`);
* in tier 0 of tiered start-up, until the wrapper is compiled in the background, the part
  function as a plain cached dispatcher without Numba's `noalias` flag (`Tier0`: LLVM spends
  less time on it).

The iterations of a ``prange`` loop are independent (the analysis made them so), so running
them as parts computes the same values in the same order within each iteration: the same bits
as the serial variant and as any thread count. Statements before the loop run in every part;
they may only assign local names (`part_function` checks).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import numpy as np
from numba import types
from numba.core.typing.typeof import Purpose, typeof

from ....compiled import cfunc, njit
from ...caches import modules
from ...host import jit
from ...host.compile_jobs import CompileJob, load_cached
from ...lowering.emit import call, name, store
from . import parallel_for

# the signature Numba's threading layer calls: (arrays, lengths, steps, data)
_WRAPPER_SIGNATURE = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                                types.CPointer(types.intp), types.voidptr)


def as_parts(funcs, twins) -> tuple:
    """(funcs, part functions): each parallel function of `funcs` (one with a ``prange``
    loop) taken out as its part function (`part_function`: a callee of the module); each
    serial function `twins` names (serial name -> parallel name) dropped, its launches running
    its twin's part function as one part (`Parts` with `serial`: the same statements, one
    compilation for both variants)."""
    parallel = {f.name: f for f in funcs if isinstance(f, ast.FunctionDef) and _has_prange(f)}
    out = []
    for f in funcs:
        name_ = getattr(f, "name", None)
        if name_ in parallel:
            continue
        twin = parallel.get(twins.get(name_))
        if twin is not None:
            if [a.arg for a in f.args.args] != [a.arg for a in twin.args.args]:
                raise AssertionError(f"{f.name} and {twin.name} take different arguments")
            continue
        out.append(f)
    return out, [part_function(f) for f in parallel.values()]


def _has_prange(fn) -> bool:
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "prange"
               for n in ast.walk(fn))


def part_function(fn: ast.FunctionDef) -> ast.FunctionDef:
    """`fn` (one ``prange`` loop, over ``prange(n)`` or ``prange(lo, hi)``) as its part
    function: parameters ``_t, _nt`` first, the loop over iterations ``first + count * _t //
    _nt`` up to ``first + count * (_t + 1) // _nt``."""
    loops = [node for node in ast.walk(fn) if isinstance(node, ast.For) and
             isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", "") == "prange"]
    if len(loops) != 1:
        raise AssertionError(f"{fn.name}: {len(loops)} prange loops, expected one")
    (loop,) = loops
    _check_local_only([s for s in fn.body if s is not loop], fn.name)
    first, end = (ast.Constant(0), loop.iter.args[0]) if len(loop.iter.args) == 1 else \
        loop.iter.args

    def op(a, o, b):
        return ast.BinOp(a, o(), b)

    def share(t):  # first + count * t // nt
        return op(name("_pfirst"), ast.Add,
                  op(op(name("_pcount"), ast.Mult, t), ast.FloorDiv, name("_nt")))

    setup = [ast.Assign([store("_pfirst")], first),
             ast.Assign([store("_pcount")], op(end, ast.Sub, name("_pfirst")))]
    ranged = ast.For(loop.target, call("range", share(name("_t")),
                                       share(op(name("_t"), ast.Add, ast.Constant(1)))),
                     loop.body, loop.orelse)

    class Replace(ast.NodeTransformer):
        def visit_For(self, node):
            if node is loop:
                return setup + [ranged]
            self.generic_visit(node)
            return node

    body = [Replace().visit(s) for s in fn.body]
    body = [s for part in body for s in (part if isinstance(part, list) else [part])]
    args = ast.arguments([], [ast.arg("_t"), ast.arg("_nt")] + list(fn.args.args), None, [],
                         [], None, [])
    return ast.FunctionDef(fn.name, args, body, [], None, None)


def _check_local_only(stmts, fname) -> None:
    """Statements outside the loop run in every part: they may only assign names."""
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, (ast.Subscript, ast.Attribute)) and \
                    isinstance(node.ctx, ast.Store) or isinstance(node, (ast.AugAssign,
                                                                         ast.Expr)):
                raise AssertionError(f"{fname}: a statement outside its prange loop stores "
                                     f"({ast.unparse(s)[:80]}): it would run in every part")


class PartFunction:
    """A part function (its dispatcher `part`) and its wrappers, one per argument types, each
    compiled (or loaded from the disk cache) once with the part it calls."""

    def __init__(self, part, cache_dir, flags):
        self.part = part
        self.cache_dir = cache_dir
        self.flags = {k: v for k, v in flags.items() if k in ("error_model", "boundscheck",
                                                             "fastmath")}
        self.cached = flags.get("cache", False)
        # argument types -> (wrapper address, layout, the part's machine-code address)
        self.wrappers: dict = {}
        self.types: dict = {}  # Numba's fingerprints of arguments -> their types (`key`)
        self.loaded = 0  # how many wrappers were loaded from the disk cache
        self._plain = None  # (`plain`)

    def plain(self):
        """The part function as an ordinary cached dispatcher, without `noalias` (LLVM spends
        less on it: LULESH's cold run ~1.3 s) nor a wrapper: what tier 0 runs, as one part,
        while the wrapper compiles in the background (`Tier0`)."""
        if self._plain is None:
            self._plain = njit(cache=self.cached, **self.flags)(self.part.py_func)
        return self._plain

    def key(self, args) -> tuple:
        """The Numba types of `args`, found by their fingerprints (Numba's own dispatch keys,
        ~0.2 us an argument) when seen before: a binding made again for new arrays of the same
        types (moving particles, each step) types nothing (~3 us an argument)."""
        prints = jit.fingerprints(((None, args),))
        key = self.types.get(prints) if prints is not None else None
        if key is None:
            key = argument_types(args)
            if prints is not None:
                self.types[prints] = key
        return key

    def bound(self, args) -> tuple:
        """(wrapper address, pack) of a launch over `args`."""
        key = self.key(args)
        if key not in self.wrappers:
            self.ensure(key)
        address, layout, native = self.wrappers[key]
        return address, pack(args, layout, native)

    def ensure(self, argtypes, load_only=False) -> bool:
        """Whether the wrapper for `argtypes` and the part it calls are here now: compiled
        or loaded from the disk cache (with `load_only`: only loaded)."""
        if argtypes in self.wrappers:
            return True
        layout, signature, mod = self.module(argtypes)
        native = self.native(signature, load_only)
        if native is None:
            return False
        parallel_for.start_threads()
        fn = cfunc(_WRAPPER_SIGNATURE, cache=self.cached and modules.on_disk(mod),
                   load_only=load_only, **self.flags)(mod.parts_entry)
        if fn is None:
            return False
        self.loaded += fn.cache_hits
        self.wrappers[argtypes] = (fn.address, layout, native)
        return True

    def native(self, signature, load_only=False):
        """The machine-code address of the part function compiled (or loaded from the disk
        cache) for `signature`; None with `load_only` when it is not in the cache."""
        if signature not in self.part.overloads:
            if load_only and not load_cached(self.part, signature):
                return None
            self.part.compile(signature)
        return native_address(self.part, signature)

    def module(self, argtypes):
        """(layout, part signature, module) of the wrapper for `argtypes` (`wrapper_source`)."""
        layout, signature, source = wrapper_source(self.part.py_func, argtypes)
        return layout, signature, modules.module_for(source, self.cache_dir, "parts")

    def job(self, args, cost):
        """The `CompileJob` of the wrapper for `args` (None when it is here): another process
        compiles it into the disk cache with `compile_wrapper`."""
        key = self.key(args)
        if key in self.wrappers:
            return None
        _, _, mod = self.module(key)
        py = self.part.py_func
        description = (py.__globals__["__file__"], py.__name__, jit.described_options(self.flags))
        # (tiered start-up compiles it behind tier 0's `plain` function: "parallel")
        options = (("call", f"{__name__}.compile_wrapper"), ("parallel", True))
        return CompileJob(mod.__file__, "parts_entry", options, description, cost,
                          functools.partial(self.ensure, key),
                          functools.partial(self.ensure, key, True))


def argument_types(args) -> tuple:
    return tuple(typeof(a, Purpose.argument) for a in args)


def compile_wrapper(wrapper_path, kernel_path, part_name, flags) -> None:
    """In a compile worker (`host/compile_jobs`): the wrapper module at `wrapper_path` and the
    part function `part_name` of the kernel module at `kernel_path` it calls, compiled into
    the disk cache."""
    mod = modules.module_at(Path(wrapper_path))
    kernel = _kernel_module(kernel_path, flags)  # (the part's own dispatcher: cached)
    part = njit(no_alias=True, cache=True, no_cpython_wrapper=True, **jit.jit_options(flags))(
        getattr(kernel, part_name).py_func)
    signature = (types.int64, types.int64,
                 *parallel_for.spec_types(mod._SPEC)[1:])
    if not load_cached(part, signature):
        part.compile(signature)
    parallel_for.start_threads()
    cfunc(_WRAPPER_SIGNATURE, cache=True, **jit.jit_options(flags))(mod.parts_entry)


def native_address(part, signature) -> int:
    """The machine-code address of dispatcher `part`'s compiled `signature` (Numba's native
    calling convention, which `parallel_for.call_part` follows); it must return nothing."""
    cres = part.overloads[tuple(signature)]
    if cres.signature.return_type != types.none:
        raise TypeError(f"{part.py_func.__name__} returns {cres.signature.return_type}: a part "
                        "function returns nothing")
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


def _kernel_module(kernel_path, flags):
    """The kernel module at `kernel_path`, its callees dispatchers (in a compile worker)."""
    kernel = modules.module_at(Path(kernel_path))
    jit.jit_callees(kernel, **jit.jit_options(flags))
    return kernel


def compile_plain(kernel_path, part_name, flags, signature) -> None:
    """In a compile worker: `PartFunction.plain` of part function `part_name` of the kernel
    module at `kernel_path`, compiled for `signature` into the disk cache."""
    kernel = _kernel_module(kernel_path, flags)
    fn = njit(cache=True, **jit.jit_options(flags))(getattr(kernel, part_name).py_func)
    if not load_cached(fn, signature):
        fn.compile(signature)


class Tier0:
    """A kernel's launch in tier 0 (`tiers.py`): its part function's `plain` dispatcher run
    as one part, on this thread (the same statements: the same bits)."""

    def __init__(self, function: PartFunction):
        self.function = function
        self.fn = function.plain()

    def __call__(self, *args):
        self.fn(0, 1, *args)

    def bound(self, args):
        """(the dispatcher, its arguments, None) of the launch over `args` (as `Parts.bound`;
        nothing to pin)."""
        return self.fn, (0, 1) + tuple(args), None

    def job(self, args, kernel_path, cost):
        """The `CompileJob` of the plain function for `args` (None when compiled here)."""
        signature = tuple(self.fn.typeof_pyval(a) for a in (0, 1, *args))
        if signature in self.fn.overloads:
            return None
        description = (self.fn.py_func.__name__, jit.described_options(self.function.flags),
                       signature)
        return CompileJob(kernel_path, self.fn.py_func.__name__,
                          (("call", f"{__name__}.compile_plain"),), description, cost,
                          functools.partial(self.fn.compile, signature),
                          functools.partial(load_cached, self.fn, signature))


class Pinned(tuple):
    """A runner's arguments (addresses) holding what they point to (`pinned`)."""

    def __new__(cls, items, pinned):
        made = super().__new__(cls, items)
        made.pinned = pinned
        return made


class Parts:
    """A kernel variant as its part function (`PartFunction`) run over its whole iteration
    space: on every thread (`run_parts`), or `serial` as one part on this thread
    (`run_serial`). Called like the function it replaces; `bound(args)` gives the compiled
    call (the runner, its two arguments) for arguments that do not change, as a binding's
    launches and captured steps make it."""

    def __init__(self, function: PartFunction, serial: bool):
        self.function = function
        self.part = function.part
        self.serial = serial
        self.run = parallel_for.run_serial if serial else parallel_for.run_parts

    def __call__(self, *args):
        fn, call_args, _pack = self.bound(args)
        fn(*call_args)

    def bound(self, args):
        """(runner, (wrapper address, pack address), pack): the launch over `args`, the
        runner's two arguments integers (Numba unboxes them faster than an array) in a tuple
        that holds the pack (`Pinned`). The caller keeps the arrays of `args` alive while it
        may run, and the pack while it holds only the runner's arguments: the pack holds only
        the arrays' addresses."""
        address, packed = self.function.bound(args)
        return self.run, Pinned((address, packed.__array_interface__["data"][0]), packed), \
            packed

    @property
    def loaded(self) -> int:
        return self.function.loaded


def wrapper_source(part_fn, argtypes) -> tuple:
    """(layout, part signature, source) of the wrapper running part function `part_fn` on
    arguments of `argtypes`, read from the pack by `parallel_for.unpack` after the part's
    machine-code address (slot 0): layout is, per argument, (kind, first slot of the pack,
    ndim); the part signature the types the wrapper passes it (after ``_t, _nt``)."""
    layout, spec, slot = [], ["i,int64"], 1
    for k, t in enumerate(argtypes):
        if isinstance(t, types.Array) and t.layout == "C" and t.ndim >= 1:
            spec.append(f"a,{np.dtype(str(t.dtype)).name},{t.ndim},{int(not t.mutable)}")
            layout.append(("array", slot, t.ndim))
        elif isinstance(t, types.NoneType):  # (an absent array: no slot)
            spec.append("n")
            layout.append(("none", slot, 0))
        elif isinstance(t, types.Boolean):
            spec.append("b")
            layout.append(("int", slot, 0))
        elif isinstance(t, (types.Integer, types.Float)):
            spec.append(f"{'i' if isinstance(t, types.Integer) else 'f'},{t.name}")
            layout.append(("int" if isinstance(t, types.Integer) else "float", slot, 0))
        else:
            raise TypeError(f"{part_fn.__name__}: argument {k} of type {t} cannot be passed "
                            "to a parallel part (expected a C-contiguous array or a number)")
        slot += parallel_for.spec_slots(t)
    text = ";".join(spec)
    signature = (types.int64, types.int64, *parallel_for.spec_types(text)[1:])
    part = call("_call_part", name("_a"), _item("_pt", "_q", 0), _item("_pt", "_q", 1))
    body = [
        ast.Assign([store("_a")], call("_unpack", name("_data"), ast.Constant(text))),
        ast.Assign([store("_pt")], call("_array", _item("_args", 0), ast.Tuple(
            [_item("_dims", 0), ast.Constant(2)], ast.Load()), ast.Attribute(
                name("np"), "int64", ast.Load()), ast.Constant(True))),
        ast.For(store("_q"), call("range", _item("_dims", 0)), [ast.Expr(part)], [])]
    entry = ast.FunctionDef("parts_entry", ast.arguments(
        [], [ast.arg(a) for a in ("_args", "_dims", "_steps", "_data")], None, [], [], None,
        []), body, [], None, None)
    module = ast.fix_missing_locations(ast.Module(ast.parse(
        "import numpy as np\n"
        "from relsim.runtime.backends.cpu.parallel_for import array_at as _array\n"
        "from relsim.runtime.backends.cpu.parallel_for import call_part as _call_part\n"
        "from relsim.runtime.backends.cpu.parallel_for import unpack as _unpack\n").body +
        [ast.Assign([store("_SPEC")], ast.Constant(text)), entry], []))
    return tuple(layout), signature, (f"# relsim parallel parts of {part_fn.__module__}."
                                      f"{part_fn.__name__}\n" + ast.unparse(module) + "\n")


def _item(array, *index):
    """``array[index]`` (names or integers)."""
    parts_ = [name(i) if isinstance(i, str) else ast.Constant(i) for i in index]
    return ast.Subscript(name(array), parts_[0] if len(parts_) == 1 else
                         ast.Tuple(parts_, ast.Load()), ast.Load())


def pack(args, layout, part_address) -> np.ndarray:
    """The packed arguments: the part function's machine-code address, then per argument its
    `layout` slots (an array's address and shape, a number's value; a float's bits)."""
    size = max((slot + 1 + ndim for _, slot, ndim in layout), default=1)
    out = np.empty(size, np.int64)
    out[0] = part_address
    floats = out.view(np.float64)
    for (kind, slot, ndim), a in zip(layout, args):
        if kind == "array":
            out[slot] = a.__array_interface__["data"][0]
            out[slot + 1:slot + 1 + ndim] = a.shape
        elif kind == "float":
            floats[slot] = a
        elif kind == "none":
            continue
        else:
            out[slot] = a
    return out
