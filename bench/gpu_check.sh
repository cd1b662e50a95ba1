#!/usr/bin/env bash
# The cuda target on an NVIDIA GPU machine without internet, in one call of at most ~8 minutes:
# install what is missing from carried wheels, run the cuda tests on the device, then
# bench/gpu_check.py (LULESH, Airfoil, heat vs Warp, bandwidth, launch overhead, elastic
# relations) with the time left, printing one table.
#
#   bench/gpu_check.sh [WHEELS_DIR] [-- GPU_CHECK_ARGS...]
#
# WHEELS_DIR (default bench/out/wheels) is what bench/gpu_wheels.sh downloaded (for this
# machine's Python version); packages already installed are used as they are. Environment:
# GPU_CHECK_SECONDS (default 470: the whole call), GPU_CHECK_TEST_SECONDS (default 150: the tests).
# Everything it writes goes under bench/out/ (git-ignored): gpu_venv/, gpu_tests.log, caches.
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
echo "== install (from $wheels)"
if [ ! -d bench/out/gpu_venv ]; then
  python3 -m venv --system-site-packages bench/out/gpu_venv || { echo "FAILED: python3 -m venv"; exit 2; }
fi
. bench/out/gpu_venv/bin/activate
reqs=("numba-cuda[cu12]>=0.30" "numpy>=1.26" "numba>=0.60" "meshio>=5.3" "h5py>=3.8" "tbb>=2021.6"
      "pytest>=8" "hypothesis>=6.100")
ls "$wheels"/warp_lang-*.whl >/dev/null 2>&1 && reqs+=("warp-lang")
if ! python -m pip install -q --no-index --find-links "$wheels" "${reqs[@]}"; then
  echo "FAILED: pip install --no-index --find-links $wheels (wheels for this Python version? "
  echo "  run here: bench/gpu_wheels.sh --python-version $(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'))"
  exit 2
fi
echo "installed in $((SECONDS - start)) s"

export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export NUMBA_ENABLE_CUDASIM=0
export RELSIM_CACHE_DIR="$root/bench/out/gpu_relsim_cache" NUMBA_CACHE_DIR="$root/bench/out/gpu_numba_cache"
python -c 'from numba import cuda; cuda.detect()' 2>&1 | tail -8

echo "== cuda tests on the device (at most $test_limit s)"
timeout "$test_limit" python -m pytest -q -p no:cacheprovider tests/runtime -k cuda \
  > bench/out/gpu_tests.log 2>&1
rc=$?
tail -25 bench/out/gpu_tests.log
summary=$(grep -E '(passed|failed|error)' bench/out/gpu_tests.log | tail -1 | tr -d '=' | sed 's/^ *//')
[ $rc = 124 ] && summary="stopped after $test_limit s: ${summary:-no summary}"
[ -z "$summary" ] && summary="no pytest summary (exit $rc): see bench/out/gpu_tests.log"

left=$((limit - (SECONDS - start) - 10))
echo "== bench/gpu_check.py (budget $left s)"
python bench/gpu_check.py --budget "$left" --tests "$summary (exit $rc)" "$@"
status=$?
echo "gpu_check.sh: $((SECONDS - start)) s in all"
[ $rc = 0 ] && exit $status || exit 1
