# What the stop soaks (stop_soak.sh, script_stop_soak.sh) share, sourced by them: whether a pid
# lives, the ranks' pids as ddpdesk prints them, waiting for pids to be gone, and reporting a
# failed run with its ranks' stderr (counted in $failures).

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# The ranks' pids as ddpdesk printed them ("pids 123 124"), waiting up to 20 s for the line.
rank_pids() {
  local err=$1 i
  for ((i = 0; i < 400; i++)); do
    if grep -q 'rank(s) of .*, pids' "$err" 2>/dev/null; then
      sed -n 's/.*, pids //p' "$err" | head -1
      return
    fi
    sleep 0.05
  done
}

# Waits up to $2 seconds for every pid in $1 to be gone; 0 when they are.
wait_gone() {
  local pids=$1 limit=$2 i p any
  for ((i = 0; i < limit * 20; i++)); do
    any=0
    for p in $pids; do alive "$p" && any=1; done
    [ $any = 0 ] && return 0
    sleep 0.05
  done
  return 1
}

fail() {
  local k=$1 way=$2 when=$3 dir=$4 why=$5
  failures=$((failures + 1))
  echo "$(basename "$0" .sh): FAIL run $k ($way, $when): $why"
  for f in "$dir.err" "$dir"/rank-*.log "$dir"/rank-*.exit.json; do
    [ -f "$f" ] || continue
    echo "---- $f (last 30 lines)"
    tail -n 30 "$f"
  done
  echo "---- kept in $dir"
}

# A run's verdict: a failure (with why) is reported and its files kept; a pass leaves nothing.
verdict() {
  local k=$1 way=$2 when=$3 dir=$4 why=$5
  if [ -n "$why" ]; then
    fail "$k" "$way" "$when" "$dir" "$why"
  else
    rm -rf "$dir" "$dir".*
  fi
}
