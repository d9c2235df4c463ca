#!/usr/bin/env bash
# The Torch-free test suite (protocol, monitor, GUI, with the fake worker) built and run under
# AddressSanitizer + UndefinedBehaviorSanitizer, in ./build-asan. The code that takes hostile
# input (wire decoder, metrics server, RunSpec parser) lives there; the libFuzzer targets
# (tests/fuzz) cover the decoder and parser under the same sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DDPDESK_ASAN_BUILD_DIR:-build-asan}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPDESK_SANITIZE=ON \
    -DDDPDESK_ENGINE=OFF >/dev/null
fi
cmake --build "$dir" --parallel "${DDPDESK_JOBS:-$(nproc)}"
export QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir"
ctest --output-on-failure --timeout 600 -E fuzz_smoke "$@"
