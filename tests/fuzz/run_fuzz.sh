#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build-fuzz/, protocol library only: seconds) and
# runs each for $1 seconds (default 20) from the corpus in tests/fuzz/corpus. Fails on a crash,
# a sanitizer report or a leak. New interesting inputs go to a scratch copy, not the repo.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
dir=${DDPDESK_FUZZ_BUILD_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "run_fuzz: clang++ is missing (scripts/install-deps.sh)"; exit 1; }
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDPDESK_ENGINE=OFF -DDDPDESK_MONITOR=OFF -DDDPDESK_GUI=OFF -DDDPDESK_TESTS=OFF \
  -DDDPDESK_FUZZ=ON >/dev/null
cmake --build "$dir" --target fuzz_wire fuzz_run_spec >/dev/null
for t in wire run_spec; do
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
