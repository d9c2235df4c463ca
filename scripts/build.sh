#!/usr/bin/env bash
# Configures and builds ddpdesk into ./build (or $DDPDESK_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${DDPDESK_BUILD_DIR:-build}
# ccache with paths relative to the checkout, so a fresh clone (CI) reuses earlier compiles.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
. scripts/lib/compiler.sh
cxx=$(ddpdesk_cxx "${DDPDESK_CXX:-}")
ddpdesk_forget_other_compiler "$build_dir" "$cxx"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" "$@"
elif [ $# -gt 0 ]; then
  cmake "$build_dir" "$@"
fi
# LibTorch translation units need ~1.5 GiB each; two at a time fits every machine we target.
cmake --build "$build_dir" --parallel "${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
