#!/usr/bin/env bash
# Download, here (with internet), the wheels bench/gpu_check.sh installs on a GPU machine without
# internet. By default only what the workplace's H200 image lacks (meshio, and tbb with tcmlib for
# the cpu's threading layer: about 10 MB, well under the 64 MiB a device call carries), for its
# Python 3.12; --all fetches every package the check needs, numba-cuda[cu13] and the CUDA 13
# toolkit pieces included, for a bare machine (several hundred MB: more than one call carries).
# Wheels are never committed (bench/out/ is git-ignored).
#
#   bench/gpu_wheels.sh [DIR] [--python-version 3.12] [--all] [--warp]
#
# DIR defaults to bench/out/wheels. --warp also fetches warp-lang (NVIDIA Warp, the heat peer;
# 149 MB). Then carry DIR with the checkout and run bench/gpu_check.sh DIR there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=bench/out/wheels
pyver=3.12
all=0
warp=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver=$2; shift 2 ;;
    --all) all=1; shift ;;
    --warp) warp=1; shift ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) dir=$1; shift ;;
  esac
done
mkdir -p "$dir"
platforms=(--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_24_x86_64)
if [ "$all" = 1 ]; then
  pkgs=("numba-cuda[cu13]>=0.30" "numpy>=1.26" "numba>=0.60" "meshio>=5.3" "h5py>=3.8"
        "tbb>=2021.6" "pytest>=8" "hypothesis>=6.100")
  deps=()
else
  pkgs=("meshio>=5.3" "tbb>=2021.6" "tcmlib>=1,<2")
  deps=(--no-deps)
fi
[ "$warp" = 1 ] && pkgs+=("warp-lang")
python -m pip download --dest "$dir" --only-binary=:all: "${deps[@]}" "${platforms[@]}" \
  --implementation cp --python-version "$pyver" "${pkgs[@]}"
echo "wheels in $dir: $(ls "$dir" | wc -l) files, $(du -sh "$dir" | cut -f1)"
