"""Where the cuda target keeps data: a device copy per field, kept in step with the host array
through the field's `residency` (`base.Residency`), and device copies of Globals and of the
host-built index arrays (subset rows, groupings, inverse indexes).

A field's `DeviceCopy` stays attached while the device holds a copy:

* a launch asks for the field's device array (`device_field`): uploaded only when the host copy
  is newer (first use, a host write, a new host array) — or, for a field whose array `numpy()`
  handed out (`exposed`), before every launch, since the host may have written it in place;
* the fields a launch writes are marked device-newer (`written`); an exposed one is downloaded
  at once (the host must find it current after every launch);
* `before_host_read` (``Field.data``, ``numpy()``, row changes) downloads only when the device
  copy is newer; `after_host_write` (``load``, ``fill``, ``swap``, a resize) marks the host newer.

`TRANSFERS` counts copies between host and device by direction and kind (the tests check that
nothing is uploaded twice, and how many copies a time step makes).

Launches do not wait: a launch's index checks flag its own word of the device error log
(`ErrorLog`, one int64 per queued launch, in launch order), and nothing is downloaded for it.
Every download from the device first checks the words of the launches queued before it
(`download`: in the same copy when the array is small, a Global's result; else one copy of the
unchecked words), and raises the first failing launch's error
(kernel and line, as `debug_checks.raise_flagged`) before anything downstream of it reaches the
host; so do `rs.synchronize()` and the end of the program.

An allocation the device cannot hold (CUDA out of memory, after numba's retry) is a
`DeviceMemoryError` naming what was uploaded (a field: its relation) and its byte size, with the
device's free and total memory when the driver reports them.
"""
from __future__ import annotations

import weakref
from collections import Counter

import numpy as np

from ....errors import DeviceMemoryError, KernelRuntimeError
from ... import epoch
from ...host import debug_checks
from . import device
from .allocate import empty, no_room, out_of_memory

TRANSFERS: Counter = Counter()  # ("up" | "down", kind) -> number of copies


def upload(arr: np.ndarray, kind: str, dev=None, what: str | None = None):
    """A device copy of host array `arr` (into `dev` when it has the same shape and dtype);
    `what` names it in a DeviceMemoryError (default: `kind`)."""
    TRANSFERS["up", kind] += 1
    arr = np.ascontiguousarray(arr)
    if dev is not None and dev.shape == arr.shape and dev.dtype == arr.dtype:
        dev.copy_to_device(arr)
        return dev
    try:
        return device.cuda().to_device(arr)
    except Exception as exc:
        if not out_of_memory(exc):
            raise
        raise DeviceMemoryError(no_room(what or f"{kind} array", arr.nbytes, exc)) from exc


def zeros(shape, dtype, what: str):
    """A device array of zeros, cleared on the device (nothing is copied)."""
    from . import compaction
    dev = empty(shape, dtype, what)
    compaction.zero(dev)
    return dev


def download(dev, kind: str, out=None, checked: bool = True) -> np.ndarray:
    """A host copy of `dev`; first (`checked`) the error words of the launches queued before,
    so that nothing downstream of a failed launch reaches the host. A small array (a Global
    reduction's result) carries those words in the same copy (`ErrorLog.with_words`)."""
    if checked and ERRORS.unchecked():
        got = ERRORS.with_words(dev) if out is None else None
        if got is not None:
            TRANSFERS["down", kind] += 1
            return got
        ERRORS.check()
    TRANSFERS["down", kind] += 1
    if out is not None:
        if out.flags.c_contiguous:
            dev.copy_to_host(out)
        else:
            out[...] = dev.copy_to_host()
        return out
    return dev.copy_to_host()


class DeviceCopy:
    """The residency of a field with a device copy (see the module docstring)."""

    __slots__ = ("dev", "host", "host_newer", "device_newer", "failed")
    on_device = True  # host-side launches bring the field back first (`base.bring_to_host`)

    def __init__(self):
        self.dev = None  # the device array
        self.host = None  # the host array it mirrors
        self.host_newer = True
        self.device_newer = False
        self.failed = None  # why the device values are invalid (a failed launch wrote them)

    def before_host_read(self, field) -> None:
        if self.failed is not None:
            raise KernelRuntimeError(self.failed)
        if self.device_newer:
            locked = not self.host.flags.writeable  # key fields' arrays are read-only
            if locked:
                self.host.flags.writeable = True
            download(self.dev, "field", self.host)
            if locked:
                self.host.flags.writeable = False
            self.device_newer = False

    def after_host_write(self, field) -> None:
        self.host_newer = True
        self.device_newer = False
        self.failed = None

    # -- rows changing where the values are (`base.Residency`; elastic relations) ----------
    def mirrors(self, field) -> bool:
        """Whether the device copy is current (alone, or with the host's): row changes are
        then made on the device too, and nothing crosses the bus."""
        return self.failed is None and self.dev is not None and not self.host_newer and \
            self.host is field._data and not field.exposed

    def keep_rows(self, field, keep):
        """The rows where `keep` is true, compacted on the device (`compaction`); the new host
        array (stale while the device is newer). None: the host compacts (its copy is newer)."""
        if not self.mirrors(field):
            return None
        from . import compaction
        pos, count = row_map(field.relation, keep)
        self.dev = compaction.compact(self.dev, pos, count)
        data = field._data
        self.host = np.zeros((count,) + data.shape[1:], data.dtype) if self.device_newer \
            else data[keep]
        return self.host

    def resize_rows(self, field, size):
        """`size` rows (new ones zero) on the device; the new host array, or None."""
        if not self.mirrors(field):
            return None
        from . import compaction
        self.dev = compaction.resized(self.dev, size)
        data = field._data
        host = np.zeros((size,) + data.shape[1:], data.dtype)
        if not self.device_newer:
            n = min(size, data.shape[0])
            host[:n] = data[:n]
        self.host = host
        return host

    def write_rows(self, field, start, values) -> bool:
        """Rows from `start` set to `values` (host values: only those rows are uploaded);
        False: the host writes them (its copy is newer)."""
        if not self.mirrors(field):
            return False
        data = field._data
        count = data.shape[0] - start
        vals = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=data.dtype),
                                                    (count,) + data.shape[1:]))
        if count:  # (into the device array's last rows, not a new array)
            TRANSFERS["up", "rows"] += 1
            self.dev[start:].copy_to_device(vals)
        if not self.device_newer:
            data[start:] = vals
        return True


_ROW_MAP: dict = {}  # the last row map of kept rows: relation (weak), keep mask, pos, count


def row_map(relation, keep):
    """(pos, count) on the device for keeping the rows of `relation` where `keep` (a host mask):
    the one a launch's deleted rows made (`expect_row_map`), else computed from an upload of the
    mask once for all the relation's fields."""
    got = _ROW_MAP.get("map")
    if got is not None and got[0]() is relation and np.array_equal(got[1], keep):
        return got[2], got[3]
    from . import compaction
    count = int(np.count_nonzero(keep))
    pos = compaction.row_map(upload(keep, "rows"), True, len(keep))
    expect_row_map(relation, keep, pos, count)
    return pos, count


def expect_row_map(relation, keep, pos, count) -> None:
    """The row map for keeping the rows of `relation` where `keep`, already on the device."""
    _ROW_MAP["map"] = (weakref.ref(relation), np.array(keep, dtype=bool), pos, count)


def forget_row_map() -> None:
    _ROW_MAP.clear()


def device_field(field):
    """`field`'s device array, current (uploaded if the host copy is newer)."""
    r = field.residency
    if not isinstance(r, DeviceCopy):
        if r is not None:  # another target's residency (cpu pending folds): settle it first
            r.before_host_read(field)
        r = field.residency = DeviceCopy()
        epoch.bump()  # host-side launches re-check which of their fields have device copies
    if r.failed is not None:
        r.before_host_read(field)  # (raises)
    if r.device_newer and not field.exposed:
        return r.dev
    host = field._data  # a key field with a rule computes its derived keys here
    if r.host_newer or r.host is not host or field.exposed or r.dev is None:
        if r.device_newer:  # exposed and device-newer cannot both hold after a launch
            r.before_host_read(field)
        r.dev = upload(host, "field", r.dev, f"field {field.qualname} of relation "
                                             f"{field.relation.name}")
        r.host = host
        r.host_newer = False
    return r.dev


def written(field) -> None:
    """A launch wrote `field`'s device copy."""
    r = field.residency
    r.device_newer = True
    r.host_newer = False
    if field.exposed:  # the host holds the array: keep it current
        r.before_host_read(field)


class GlobalCopy:
    """The residency of a Global with a device copy (`dev`, shape ``(1,) + type.shape``; `row`,
    int64[1], for arg-min/arg-max folds). A launch reading the Global gets `dev`, uploaded when
    the host value differs from what the device holds (`last`: its bytes, None when a device
    fold wrote it); a fold finishes on the device (`cuda_folds`) and leaves the device newer;
    the host's next read downloads it (one small copy, carrying the error words)."""

    __slots__ = ("dev", "row", "last", "device_newer", "row_newer", "failed")
    on_device = True

    def __init__(self):
        self.dev = None
        self.row = None
        self.last = None
        self.device_newer = False
        self.row_newer = False
        self.failed = None  # why the device value is invalid (a failed launch wrote it)

    def before_host_read(self, glob) -> None:
        if self.failed is not None:
            raise KernelRuntimeError(self.failed)
        if self.device_newer:
            glob._data[...] = download(self.dev, "global")
            if self.row_newer:
                glob._row_data[...] = download(self.row, "global")
            self.last = glob._data.copy()
            self.device_newer = self.row_newer = False

    def after_host_write(self, glob) -> None:
        self.device_newer = self.row_newer = False
        self.failed = None

    def holds(self, host) -> bool:
        """Whether the device array holds the host value `host`."""
        return self.dev is not None and self.last is not None and np.array_equal(
            host.view(np.uint8), self.last.view(np.uint8))


def global_copy(glob) -> GlobalCopy:
    """`glob`'s device residency (attached, with anything another target left pending on the
    Global settled first); raises if a failed launch wrote its device value."""
    r = glob.residency
    if not isinstance(r, GlobalCopy):
        if r is not None:  # another target's residency (cpu pending fold): settle it first
            r.before_host_read(glob)
        r = glob.residency = GlobalCopy()
    if r.failed is not None:
        r.before_host_read(glob)  # (raises)
    return r


def device_global(glob):
    """`glob`'s device array, current (uploaded only when the host value changed)."""
    r = global_copy(glob)
    if r.device_newer:
        return r.dev
    host = glob._data
    if not r.holds(host):
        r.dev = upload(host, "global", r.dev,
                       f"Global {glob.name!r}" if glob.name else "a Global")
        r.last = host.copy()
    return r.dev


def _poison(objs, message: str) -> None:
    """Mark the device copies of fields and Globals that a failed launch folded into, or that
    launches after it wrote: reading or using them raises `message` until the host sets them
    again."""
    for obj in objs:
        r = obj.residency
        if isinstance(r, (DeviceCopy, GlobalCopy)) and r.device_newer:
            what = f"field {obj.qualname}" if hasattr(obj, "qualname") else \
                f"Global {obj.name!r}" if obj.name else "a Global"
            r.failed = message.format(what=what)


class ErrorLog:
    """The error words of launches queued since the host last read from the device: one int64
    per launch, in launch order, 0 while its checks pass (a kernel writes the failing line,
    +line for an index out of range, -line for a random counter). Words known to be 0 are
    reused; a full log is checked first."""

    CAPACITY = 1024
    STAGED = 512  # int64s of a download that carries the words (a float sum's result: 67)

    def __init__(self):
        self.dev = None
        self.staging = None  # device bytes: a small download, then the words
        self.words: list = []  # device views of one word each
        self.kernels: list = []  # the kernel name of each queued launch
        self.outputs: list = []  # the fields and Globals each queued launch wrote on the device
        self.checked = 0  # words [0, checked) are known to be 0

    def word(self, kernel_name: str):
        """The device word of a launch of `kernel_name` about to be queued."""
        if len(self.kernels) == self.CAPACITY:
            self.check()
        if self.dev is None:
            self.dev = upload(np.zeros(self.CAPACITY, dtype=np.int64), "error")
            self.words = [self.dev[k:k + 1] for k in range(self.CAPACITY)]
        self.kernels.append(kernel_name)
        self.outputs.append(((), ()))
        return self.words[len(self.kernels) - 1]

    def wrote(self, stored, folded) -> None:
        """The launch queued last stored to the fields `stored` and folded reductions into
        `folded` (fields, Globals) on the device. If it fails, what it stored stays (partial,
        as on the cpu, whose failed launch stops part way), but its folds must not count (the
        cpu applies none); if a launch before it fails, nothing it wrote counts."""
        self.outputs[-1] = (tuple(stored), tuple(folded))

    def unchecked(self) -> bool:
        return len(self.kernels) > self.checked

    def check(self, upto: int | None = None) -> None:
        """Raise the first failure among the queued launches (the first `upto` only, when
        given); the words of launches that passed are free again. After a failure every queued
        launch is forgotten (their words cleared): the program stops at that launch."""
        n = len(self.kernels) if upto is None else upto
        if n <= self.checked:
            return
        TRANSFERS["down", "error"] += 1
        self._judge(self.dev[self.checked:n].copy_to_host())

    def with_words(self, dev):
        """`dev`'s values and the unchecked words in one copy, when `dev` is small (through
        device-to-device copies into a staging array: no host round trip); the words are
        judged before the values are returned. None: not such an array."""
        n = len(self.kernels)
        k, at = n - self.checked, -(-dev.nbytes // 8) * 8  # the words' byte offset
        if at > 8 * self.STAGED or dev.size == 0:
            return None
        try:
            raw_dev = dev.reshape(dev.size).view(np.uint8)
        except Exception:  # noqa: BLE001 - not contiguous, say: the plain path
            return None
        if self.staging is None:
            self.staging = empty(8 * (self.STAGED + self.CAPACITY), np.uint8, "the error log")
        self.staging[:dev.nbytes].copy_to_device(raw_dev)
        self.staging[at:at + 8 * k].copy_to_device(self.dev[self.checked:n].view(np.uint8))
        raw = self.staging[:at + 8 * k].copy_to_host()
        self._judge(raw[at:].view(np.int64))
        return raw[:dev.nbytes].view(dev.dtype).reshape(dev.shape)

    def _judge(self, words) -> None:
        """The unchecked words, downloaded: raise the first failure, else mark them checked."""
        bad = np.flatnonzero(words)
        if bad.size:
            k = int(bad[0])
            name = self.kernels[self.checked + k]
            at = self.checked + k
            after = [o for stored, folded in self.outputs[at + 1:] for o in stored + folded]
            _poison(list(self.outputs[at][1]) + after, _POISONED.format(name=name))
            self.forget()
            debug_checks.raise_flagged(name, words[k:k + 1])
        self.checked += len(words)
        if self.checked == len(self.kernels):
            self.kernels, self.outputs, self.checked = [], [], 0

    def forget(self) -> None:
        """Clear every queued launch's word (a launch failed: the program stops there)."""
        if self.kernels:
            self.dev[:len(self.kernels)].copy_to_device(np.zeros(len(self.kernels), np.int64))
            TRANSFERS["up", "error"] += 1
        self.kernels, self.outputs, self.checked = [], [], 0


_POISONED = ("{{what}} is not valid: a cuda launch of kernel {name!r} failed (reported when the "
             "host first read from the device after it), and {{what}} comes from that launch's "
             "reductions or from a launch queued after it; set it again from the host (load, "
             "fill, or value =) before using it")

ERRORS = ErrorLog()
