#!/usr/bin/env bash
# The cuda target on an NVIDIA GPU machine without internet, in one call of at most ~8 minutes:
# install what is missing from carried wheels, run the cuda tests on the device, then
# bench/gpu_check.py (LULESH, Airfoil, heat vs hand-written numba.cuda and Warp, bandwidth,
# launch overhead, elastic relations) with the time left, printing one table.
#
#   bench/gpu_check.sh [WHEELS_DIR] [-- GPU_CHECK_ARGS...]
#
# The machine's own Python packages are used where they are (the workplace's H200 image has
# numba, numba-cuda with the CUDA 13 toolkit, numpy, h5py, pytest and hypothesis); WHEELS_DIR
# (default bench/out/wheels, what bench/gpu_wheels.sh downloaded for that machine's Python)
# holds the rest, which is installed with --no-deps into bench/out/gpu_site and put on
# PYTHONPATH. Environment: GPU_CHECK_SECONDS (default 470: the whole call),
# GPU_CHECK_TEST_SECONDS (default 150: the tests). Everything it writes goes under bench/out/
# (git-ignored): gpu_site/, gpu_tests.log, caches.
set -uo pipefail
start=$SECONDS
limit=${GPU_CHECK_SECONDS:-470}
test_limit=${GPU_CHECK_TEST_SECONDS:-150}
cd "$(dirname "$0")/.."
root=$PWD
wheels=bench/out/wheels
if [ $# -gt 0 ] && [ "$1" != "--" ]; then wheels=$1; shift; fi
[ "${1:-}" = "--" ] && shift
mkdir -p bench/out

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -4
python3 --version
echo "== install (missing packages from $wheels)"
if ls "$wheels"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target bench/out/gpu_site "$wheels"/*.whl || { echo "FAILED: pip install $wheels/*.whl"; exit 2; }
  export PYTHONPATH="$root/bench/out/gpu_site${PYTHONPATH:+:$PYTHONPATH}"
fi
missing=$(python3 - <<'PY'
import importlib, importlib.metadata as md
need = {"numpy": "numpy", "numba": "numba", "numba.cuda": "numba-cuda", "meshio": "meshio",
        "h5py": "h5py", "pytest": "pytest", "hypothesis": "hypothesis"}
bad = []
for mod, dist in need.items():
    try:
        importlib.import_module(mod)
        try:
            v = md.version(dist)
        except md.PackageNotFoundError:
            v = "?"
        print(f"  {dist} {v}", flush=True, file=__import__("sys").stderr)
    except Exception as exc:
        bad.append(f"{mod} ({type(exc).__name__}: {exc})")
print("; ".join(bad))
PY
)
if [ -n "$missing" ]; then
  echo "FAILED: cannot import: $missing"
  echo "  run here: bench/gpu_wheels.sh --python-version $(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")') [--all]"
  exit 2
fi
echo "installed in $((SECONDS - start)) s"
py=python3

export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export NUMBA_ENABLE_CUDASIM=0
export RELSIM_CACHE_DIR="$root/bench/out/gpu_relsim_cache" NUMBA_CACHE_DIR="$root/bench/out/gpu_numba_cache"
"$py" -c 'from numba import cuda; cuda.detect()' 2>&1 | tail -8

echo "== cuda tests on the device (at most $test_limit s)"
timeout "$test_limit" "$py" -m pytest -q -p no:cacheprovider tests/runtime -k cuda \
  > bench/out/gpu_tests.log 2>&1
rc=$?
tail -25 bench/out/gpu_tests.log
summary=$(grep -E '(passed|failed|error)' bench/out/gpu_tests.log | tail -1 | tr -d '=' | sed 's/^ *//')
[ $rc = 124 ] && summary="stopped after $test_limit s: ${summary:-no summary}"
[ -z "$summary" ] && summary="no pytest summary (exit $rc): see bench/out/gpu_tests.log"

left=$((limit - (SECONDS - start) - 10))
echo "== bench/gpu_check.py (budget $left s)"
"$py" bench/gpu_check.py --budget "$left" --tests "$summary (exit $rc)" "$@"
status=$?
echo "gpu_check.sh: $((SECONDS - start)) s in all"
[ $rc = 0 ] && exit $status || exit 1
