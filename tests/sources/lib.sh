# lib.sh - shell functions shared by the tests in tests/sources (sourced by
# them; not a test itself: tests/CMakeLists.txt registers only test_*.sh).
# The caller sets CLI (the built binary), T (its work dir, holding
# $T/worker.properties) and defines fail(); these functions use them.

# cli_start OUT CONF [LOG]: `cdcflow run` of connector config CONF in the
# background, records to OUT, stderr appended to LOG (default $T/log).
# Sets pid (the run) and run_log (its LOG).
cli_start() {
  run_log=${3:-$T/log}
  "$CLI" run --worker "$T/worker.properties" --output "$1" "$2" 2>>"$run_log" &
  pid=$!
}

# wait_lines FILE N TRIES PAUSE: until FILE has at least N lines, or TRIES
# pauses of PAUSE seconds passed (the caller's checks then say what is missing).
wait_lines() {
  local i
  for i in $(seq 1 "$3"); do
    [[ -f "$1" && $(wc -l < "$1") -ge $2 ]] && return 0
    sleep "$4"
  done
  return 0
}

# wait_grep PATTERN FILE TRIES PAUSE: until grep finds PATTERN in FILE, or
# TRIES pauses of PAUSE seconds passed.
wait_grep() {
  local i
  for i in $(seq 1 "$3"); do
    grep -q "$1" "$2" 2>/dev/null && return 0
    sleep "$4"
  done
  return 0
}

# cli_stop WHAT [CODE]: SIGTERM the run started by cli_start; its exit code
# must be CODE (default 0; 3 = finished with reported data errors).
cli_stop() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [[ $rc -eq ${2:-0} ]] || fail "$1 exited with $rc, expected ${2:-0} (log: $(tail -5 "$run_log"))"
}

# cli_kill9: kill -9 the run started by cli_start and reap it.
cli_kill9() {
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
}

# run_until CONF OUT N [CODE]: run CONF until N lines are in OUT (at most
# 15 s), let offsets be flushed, SIGTERM; the exit code must be CODE (default 0).
run_until() {
  cli_start "$2" "$1"
  wait_lines "$2" "$3" 300 0.05
  sleep 0.3 # let offsets be flushed
  cli_stop "cdcflow run" "${4:-0}"
}

# kill9_restart CONF OUT1 N OUT2 LAST: run CONF until OUT1 has N lines, kill -9
# it (in the middle of a large file), then run it again into OUT2 until grep
# finds LAST there (at most 120 s) and stop it with SIGTERM (exit code 0).
# The caller then checks OUT1 + OUT2: every record present, duplicates only
# one contiguous run after the last committed offset.
kill9_restart() {
  cli_start "$2" "$1"
  wait_lines "$2" "$3" 400 0.02
  cli_kill9
  cli_start "$4" "$1"
  wait_grep "$5" "$4" 1200 0.1
  sleep 0.3
  cli_stop "restarted run"
}

# kill9_setup DEFAULT_KILLS: the random seed (SEED=n repeats a run's
# choices; printed), KILLS (default DEFAULT_KILLS) and $T/worker.properties of
# the kill -9 tests: direct transport, offsets in $T/offsets.json flushed
# every 100 ms.
kill9_setup() {
  SEED=${SEED:-$(( $(date +%s) % 100000 ))}
  RANDOM=$SEED
  echo "SEED=$SEED" >&2
  KILLS=${KILLS:-$1}
  cat > "$T/worker.properties" <<W
transport=direct
offset.storage.file.filename=$T/offsets.json
offset.flush.interval.ms=100
W
}
