#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build-fuzz/, protocol library only) and
# runs each for SECONDS (default 20) from the corpus in tests/fuzz/corpus. Fails on a crash,
# a sanitizer report or a leak. New interesting inputs go to a scratch copy, not the repo.
#   run_fuzz.sh [SECONDS [TARGET...]]     build, then run the targets (default: wire run_spec)
#   run_fuzz.sh --build-only              build only
#   run_fuzz.sh --no-build SECONDS TARGET...   run what an earlier --build-only built
# CTest runs each target for 5 s as an entry of its own (fuzz_smoke_*), with --no-build, in the
# sanitizer build, which builds the targets itself (DDPDESK_FUZZ_BUILD_DIR names it).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=1 run=1
case "${1:-}" in
  --build-only) run=0; shift ;;
  --no-build) build=0; shift ;;
esac
secs=${1:-20}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(wire run_spec)
dir=${DDPDESK_FUZZ_BUILD_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "run_fuzz: clang++ is missing (scripts/install-deps.sh --tests)"; exit 1; }
if [ "$build" = 1 ]; then
  # ccache with paths relative to the checkout, as scripts/build.sh: a fresh clone reuses
  # earlier compiles.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDDPDESK_ENGINE=OFF -DDDPDESK_MONITOR=OFF -DDDPDESK_GUI=OFF -DDDPDESK_TESTS=OFF \
    -DDDPDESK_FUZZ=ON >/dev/null
  cmake --build "$dir" --target "${targets[@]/#/fuzz_}" >/dev/null
fi
[ "$run" = 1 ] || { echo "fuzz: built ${targets[*]/#/fuzz_}"; exit 0; }
for t in "${targets[@]}"; do
  [ -x "$dir/tests/fuzz/fuzz_$t" ] || { echo "fuzz_$t: not built in $dir (run_fuzz.sh --build-only)"; exit 1; }
  scratch=$(mktemp -d)
  cp tests/fuzz/corpus/$t/* "$scratch"/
  log="$scratch.log"
  if ! "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=4096 \
      -artifact_prefix="$scratch/crash-" "$scratch" >"$log" 2>&1; then
    echo "fuzz_$t: FAILED"; tail -n 30 "$log"; exit 1
  fi
  echo "fuzz_$t: $(grep -E '^#[0-9]+' "$log" | tail -n 1 | awk '{print $1, $2}') in ${secs}s, no crash"
  rm -f "$log"
  rm -rf "$scratch"
done
echo "fuzz: no crashes"
