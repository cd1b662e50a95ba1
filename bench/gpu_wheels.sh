#!/usr/bin/env bash
# Download, here (with internet), every wheel bench/gpu_check.sh installs on a GPU machine without
# one: numba-cuda[cu12] (the cuda target and the CUDA 12 toolkit pieces it needs: NVVM,
# libdevice, NVRTC, nvJitLink, as wheels) and relsim's own dependencies plus pytest and
# hypothesis (the tests). Wheels are never committed (bench/out/ is git-ignored).
#
#   bench/gpu_wheels.sh [DIR] [--python-version 3.11] [--warp]
#
# DIR defaults to bench/out/wheels. The wheels are for Linux x86-64 and the Python version given
# (default: this interpreter's). --warp also fetches warp-lang (NVIDIA Warp, the heat peer; large).
# Then carry DIR to the GPU machine with the checkout and run bench/gpu_check.sh DIR there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=bench/out/wheels
pyver=$(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
warp=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver=$2; shift 2 ;;
    --warp) warp=1; shift ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) dir=$1; shift ;;
  esac
done
mkdir -p "$dir"
pkgs=("numba-cuda[cu12]>=0.30" "numpy>=1.26" "numba>=0.60" "meshio>=5.3" "h5py>=3.8"
      "tbb>=2021.6" "pytest>=8" "hypothesis>=6.100")
[ "$warp" = 1 ] && pkgs+=("warp-lang")
python -m pip download --dest "$dir" --only-binary=:all: --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_24_x86_64 --python-version "$pyver" "${pkgs[@]}"
echo "wheels in $dir: $(ls "$dir" | wc -l) files, $(du -sh "$dir" | cut -f1)"
