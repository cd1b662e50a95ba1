"""Running a kernel's parts on Numba's threads without Numba's parallel passes (`parts.py`).

Numba's threading layer (TBB, OpenMP or its workqueue) exports one C entry,
``numba_parallel_for(fn, args, dims, steps, data, inner_ndim, array_count, num_threads)``: it
cuts the ``dims[0]`` elements of the arrays ``args`` (``steps`` bytes apart) into ranges, one
per task, and calls ``fn(args, dims, steps, data)`` with each range's pointers and length on
its threads. A ``prange`` loop reaches it through Numba's parfor passes, which build such an
``fn`` from the loop body; here ``fn`` is a kernel's parts wrapper (a `cfunc`), and the array
is the list of parts ``(t, nt)``, one per thread, as Numba's own static schedule cuts a
``prange``.

`run_parts` is the one compiled function a parallel launch calls (its machine code is cached
once per machine), `run_serial` a serial one's: two integer arguments, the wrapper's address
and the address of the kernel's packed arguments (`parts.pack`). Compiled code (captured
segments) calls them the same way.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.typed_passes import _reload_parfors
from numba.extending import intrinsic

from ....compiled import njit

# bytes between two parts (t, nt) in the parts array
_PART_BYTES = 16


def start_threads() -> None:
    """Start Numba's threading layer (once): it defines ``numba_parallel_for``, which the
    machine code of `run_parts` links to, loaded from the cache or compiled."""
    from numba.np.ufunc import parallel
    parallel._launch_threads()


@intrinsic
def array_at(typingctx, address, shape, dtype, readonly):
    """The C-contiguous array of `dtype` values of `shape` (a tuple of integers) at `address`
    (an integer or a pointer; a view: it owns nothing), read-only where the literal `readonly`
    is True (`numba.carray` compiles a function per type for the same)."""
    element = getattr(dtype, "dtype", None)
    if not (isinstance(address, (types.Integer, types.RawPointer, types.CPointer)) and
            isinstance(shape, types.BaseTuple) and
            all(isinstance(d, types.Integer) for d in shape.types) and
            isinstance(element, (types.Number, types.Boolean)) and
            isinstance(readonly, types.BooleanLiteral)):
        return None
    made = types.Array(element, len(shape.types), "C", readonly=readonly.literal_value)
    sig = made(address, shape, dtype, readonly)

    def codegen(context, builder, signature, args):
        intp = context.get_value_type(types.intp)
        dims = [builder.sext(d, intp) if d.type.width < intp.width else d
                for d in cgutils.unpack_tuple(builder, args[1])]
        to_pointer = builder.inttoptr if isinstance(signature.args[0], types.Integer) else \
            builder.bitcast
        return _c_array(context, builder, made, lambda ty: to_pointer(args[0], ty), dims)
    return sig, codegen


def _c_array(context, builder, arytype, data, dims):
    """The value of a C-contiguous array of type `arytype` over `data(pointer type)` with
    shape `dims` (intp values), owning nothing."""
    from numba.np.arrayobj import make_array, populate_array
    array = make_array(arytype)(context, builder)
    intp = context.get_value_type(types.intp)
    itemsize = context.get_abi_sizeof(context.get_data_type(arytype.dtype))
    strides, step = [], intp(itemsize)
    for d in reversed(dims):  # C order: the last axis contiguous
        strides.insert(0, step)
        step = builder.mul(step, d)
    populate_array(array, data=data(array.data.type), shape=dims, strides=strides,
                   itemsize=intp(itemsize), meminfo=None)
    return array._getvalue()


def spec_types(spec: str) -> list:
    """The Numba types a packed-arguments spec names (`unpack`), one per ``;``-separated
    entry: ``a,<dtype>,<ndim>,<0|1 read-only>`` an array, ``i,<int type>``, ``b``,
    ``f,<float type>``, ``n`` None."""
    out = []
    for entry in spec.split(";"):
        kind, *rest = entry.split(",")
        if kind == "n":
            out.append(types.none)
        elif kind == "a":
            dtype, ndim, readonly = rest
            out.append(types.Array(_numba_dtype(dtype), int(ndim), "C",
                                   readonly=readonly == "1"))
        elif kind == "b":
            out.append(types.boolean)
        else:
            out.append(getattr(types, rest[0]))
    return out


def _numba_dtype(name):
    from numba.np.numpy_support import from_dtype
    return from_dtype(np.dtype(name))


def spec_slots(t) -> int:
    """How many int64 slots of the pack an argument of type `t` takes."""
    if isinstance(t, types.NoneType):
        return 0
    return 1 + t.ndim if isinstance(t, types.Array) else 1


@intrinsic
def unpack(typingctx, data, spec):
    """The arguments packed at `data` (int64 slots: an array's address then its shape, a
    number's value, a float's bits), as a tuple of the types the literal string `spec` names
    (`spec_types`): arrays are views (C-contiguous, owning nothing)."""
    if not isinstance(spec, types.StringLiteral):
        return None
    made = spec_types(spec.literal_value)
    sig = types.Tuple(made)(data, spec)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        base = builder.bitcast(args[0], i64.as_pointer())
        values, slot = [], 0

        def load(k):
            return builder.load(builder.gep(base, [i64(k)]))
        for t in made:
            if isinstance(t, types.Array):
                address = load(slot)
                values.append(_c_array(context, builder, t,
                                       lambda ty, a=address: builder.inttoptr(a, ty),
                                       [load(slot + 1 + d) for d in range(t.ndim)]))
            elif isinstance(t, types.NoneType):
                values.append(context.get_dummy_value())
            elif isinstance(t, types.Boolean):
                values.append(context.cast(builder, builder.icmp_signed("!=", load(slot),
                                                                         i64(0)),
                                           types.boolean, t))
            elif isinstance(t, types.Float):
                bits = builder.bitcast(load(slot), ir.DoubleType())
                values.append(context.cast(builder, bits, types.float64, t))
            else:
                values.append(context.cast(builder, load(slot), types.int64, t))
            slot += spec_slots(t)
        return context.make_tuple(builder, signature.return_type, values)
    return sig, codegen


@intrinsic
def call_part(typingctx, unpacked, t, nt):
    """Part (`t`, `nt`) of the part function whose machine code is at ``unpacked[0]`` (its
    native entry, `parts.PartFunction.native`), on the arguments ``unpacked[1:]`` (`unpack`'s
    tuple): a call through the address, so that a wrapper holds none of the part's code (its
    compiling, ~0.1-5 s a kernel, is the part's, once). The part returns nothing and raises
    nothing (its failures are flagged in its error array): its status is not read."""
    if not (isinstance(unpacked, types.BaseTuple) and len(unpacked) >= 1 and
            isinstance(unpacked[0], types.Integer) and isinstance(t, types.Integer) and
            isinstance(nt, types.Integer)):
        return None
    argtys = (t, nt, *unpacked[1:])
    sig = types.void(unpacked, t, nt)

    def codegen(context, builder, signature, args):
        values = cgutils.unpack_tuple(builder, args[0], len(unpacked))
        conv = context.call_conv
        fnty = conv.get_function_type(types.none, argtys)
        retptr = cgutils.alloca_once(builder, fnty.args[0].pointee)
        excinfo = cgutils.alloca_once(builder, fnty.args[1].pointee)
        real = [retptr, excinfo] + list(conv._get_arg_packer(argtys).as_arguments(
            builder, [args[1], args[2], *values[1:]]))
        builder.call(builder.inttoptr(values[0], fnty.as_pointer()), real)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _num_threads(typingctx):
    """The threads Numba runs now in this thread (`numba.set_num_threads`), read as Numba's
    own parallel code reads it (its njit `get_num_threads` calls through a ctypes pointer,
    which Numba will not cache)."""
    start_threads()

    def codegen(context, builder, signature, args):
        context.active_code_library._reload_init.add(_reload_parfors)
        intp = context.get_value_type(types.intp)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(intp, []),
                                            "get_num_threads")
        return builder.call(fn, [])
    return types.intp(), codegen


@intrinsic
def _parallel_for(typingctx, fn_address, parts, data):
    """``numba_parallel_for(fn, [parts.data], [len(parts)], [16], pack.data, 0, 1, nt)``
    with nt = len(parts): each of Numba's threads runs the wrapper on its share of the parts."""
    if not (isinstance(fn_address, types.Integer) and isinstance(parts, types.Array) and
            isinstance(data, types.Integer)):
        return None
    start_threads()  # (compiling: the entry must be defined)
    sig = types.void(fn_address, parts, data)

    def codegen(context, builder, signature, args):
        # loaded from the cache, the machine code starts the threading layer first, as a
        # cached parallel function of Numba's does
        context.active_code_library._reload_init.add(_reload_parfors)
        fn, parts_value, data_value = args
        byte_ptr = ir.IntType(8).as_pointer()
        intp = context.get_value_type(types.intp)
        parts_arr = context.make_array(signature.args[1])(context, builder, parts_value)
        count = cgutils.unpack_tuple(builder, parts_arr.shape)[0]
        arrays = cgutils.alloca_once(builder, byte_ptr)
        builder.store(builder.bitcast(parts_arr.data, byte_ptr), arrays)
        dims = cgutils.alloca_once(builder, intp)
        builder.store(count, dims)
        steps = cgutils.alloca_once(builder, intp)
        builder.store(intp(_PART_BYTES), steps)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr] * 5 + [intp] * 3)
        entry = cgutils.get_or_insert_function(builder.module, fnty, "numba_parallel_for")
        builder.call(entry, [builder.inttoptr(fn, byte_ptr), builder.bitcast(arrays, byte_ptr),
                             builder.bitcast(dims, byte_ptr), builder.bitcast(steps, byte_ptr),
                             builder.inttoptr(data_value, byte_ptr), intp(0), intp(1), count])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _call_entry(typingctx, fn_address, data):
    """``fn([&(0, 1)], [1], [16], data)`` on this thread: the wrapper at `fn_address` runs
    all of the loop, as part 0 of 1."""
    if not (isinstance(fn_address, types.Integer) and isinstance(data, types.Integer)):
        return None
    sig = types.void(fn_address, data)

    def codegen(context, builder, signature, args):
        fn, data_value = args
        byte_ptr = ir.IntType(8).as_pointer()
        intp = context.get_value_type(types.intp)
        part = cgutils.alloca_once(builder, intp, size=2)  # (t, nt) = (0, 1)
        builder.store(intp(0), part)
        builder.store(intp(1), builder.gep(part, [intp(1)]))
        arrays = cgutils.alloca_once(builder, byte_ptr)
        builder.store(builder.bitcast(part, byte_ptr), arrays)
        dims = cgutils.alloca_once(builder, intp)
        builder.store(intp(1), dims)
        steps = cgutils.alloca_once(builder, intp)
        builder.store(intp(_PART_BYTES), steps)
        fnty = ir.FunctionType(ir.VoidType(), [byte_ptr.as_pointer(), intp.as_pointer(),
                                               intp.as_pointer(), byte_ptr])
        builder.call(builder.inttoptr(fn, fnty.as_pointer()),
                     [arrays, dims, steps, builder.inttoptr(data_value, byte_ptr)])
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True)
def run_serial(fn_address, pack_address):
    """Run the parts wrapper at `fn_address` on the packed arguments at `pack_address` as one
    part, on this thread (a serial launch: no threading layer)."""
    _call_entry(fn_address, pack_address)


@njit(cache=True, nogil=True)
def run_parts(fn_address, pack_address):
    """Run the parts wrapper at `fn_address` on the packed arguments at `pack_address`, one
    part per thread Numba runs now (`numba.set_num_threads`), the calling thread among them."""
    nt = _num_threads()
    parts = np.empty((nt, 2), np.int64)
    for t in range(nt):
        parts[t, 0] = t
        parts[t, 1] = nt
    _parallel_for(fn_address, parts, pack_address)
