#!/usr/bin/env python
"""The cuda target's kernels compiled to PTX without a GPU: do they compile for the device, and
does NVVM fuse any multiply-add into them?

    python bench/cuda_ptx.py [--cc 9.0] [--cuda-home /usr/local/cuda] [-- PYTEST_ARGS]

1. In a subprocess, in numba's CUDA simulator, run pytest (default: ``tests -k cuda``), recording
   every kernel the cuda target launches: its generated module, function and argument types.
2. Here, with the real numba.cuda (no simulator), compile each to PTX for compute capability
   `--cc` with NVVM and libdevice from the CUDA toolkit (`--cuda-home`, default ``CUDA_HOME``).
   Report the kernels that fail, and count ``fma.`` instructions in the kernels whose arithmetic
   is exact only (no transcendental function: libdevice's own algorithms use FMAs).

Needs numba-cuda and a CUDA toolkit (NVVM, libdevice); no GPU and no driver. Three look-ups
numba-cuda makes through the driver or NVRTC are answered here instead: the architectures NVRTC
supports, the libdevice file and the current device's compute capability. Not a benchmark: a
check of what a GPU would compile, for machines without one.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import re
import subprocess
import sys
import tempfile
import types

# the _dev functions whose results are exact or correctly rounded (the others are libdevice's
# transcendental functions, which may use FMAs internally)
EXACT = {"mul", "floor", "ceil", "trunc", "round", "sqrt", "fabs", "copysign", "isnan", "isinf",
         "isfinite"}


def record(out: str, pytest_args: list) -> None:
    """Step 1 (in the simulator): run pytest, pickling (module file, function, argument types)
    of every launched cuda kernel to `out`."""
    import numba
    import pytest
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    seen = {}
    configure = FakeCUDAKernel.__getitem__

    def getitem(self, conf):
        launch = configure(self, conf)

        def run(*args):
            tys = tuple(numba.typeof(a.copy_to_host() if hasattr(a, "copy_to_host") else a)
                        for a in args)
            seen[(self.fn.__code__.co_filename, self.fn.__name__, tuple(map(str, tys)))] = tys
            return launch(*args)
        return run

    FakeCUDAKernel.__getitem__ = getitem
    pytest.main(pytest_args)
    with open(out, "wb") as f:
        pickle.dump([(path, name, tys) for (path, name, _), tys in seen.items()], f)


def patch_lookups(cc, cuda_home: str) -> None:
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import libs, nvrtc, nvvm

    libdevice = os.path.join(cuda_home, "nvvm", "libdevice", "libdevice.10.bc")
    if not os.path.exists(libdevice):
        sys.exit(f"no libdevice at {libdevice}: pass --cuda-home")
    nvrtc.get_supported_ccs = lambda: (cc,)
    libs.get_libdevice = nvvm.get_libdevice = lambda: libdevice
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)


def load(path: str):
    """The module of a recorded kernel: a generated kernel module by its path, a module of the
    relsim package (the device folds) by its name, imported again without the simulator."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rel = os.path.relpath(os.path.abspath(path), package)
    if rel.startswith("relsim" + os.sep):
        name = rel[:-3].replace(os.sep, ".")
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(f"_k{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function_source(path: str, name: str) -> str:
    src = open(path).read()
    body = src[src.index(f"def {name}("):]
    end = body.find("\ndef ", 1)
    return body if end < 0 else body[:end]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cc", default="9.0", help="compute capability (default 9.0)")
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--record", help=argparse.SUPPRESS)
    ap.add_argument("pytest_args", nargs="*", default=["tests", "-q", "-k", "cuda"])
    a = ap.parse_args()
    try:
        importlib.import_module("_numba_cuda_redirector")  # numba-cuda on PYTHONPATH
    except ImportError:
        pass
    if a.record:
        record(a.record, a.pytest_args)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "kernels.pkl")
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        subprocess.run([sys.executable, __file__, "--record", out, "--", *a.pytest_args],
                       env=env, check=False)
        with open(out, "rb") as f:
            kernels = pickle.load(f)
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    from numba import cuda
    cc = tuple(int(x) for x in a.cc.split("."))
    patch_lookups(cc, a.cuda_home)
    modules, failed, exact, fused = {}, 0, 0, 0
    for path, name, tys in kernels:
        if path not in modules:
            modules[path] = load(path)
        try:
            fn = getattr(modules[path], name)
            ptx, _ = cuda.compile_ptx(getattr(fn, "py_func", fn), tys, cc=cc)
        except Exception as exc:  # noqa: BLE001 (reported, then the next kernel)
            failed += 1
            print(f"FAILED {path} {name}: {str(exc).splitlines()[0][:300]}")
            continue
        src = function_source(path, name)
        used = {re.sub("_f32$", "", f) for f in re.findall(r"_dev\.(\w+)", src)}
        if used <= EXACT and "_philox.normal" not in src:
            exact += 1
            n = sum(1 for line in ptx.splitlines() if line.strip().startswith("fma."))
            if n:
                fused += 1
                print(f"FMA x{n} in {path} {name}")
    print(f"{len(kernels)} kernels compiled to PTX for sm_{cc[0]}{cc[1]}: {failed} failed; "
          f"{exact} with exact arithmetic only, {fused} of them with a fused multiply-add")
    return 1 if failed or fused else 0


if __name__ == "__main__":
    sys.exit(main())
