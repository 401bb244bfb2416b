#!/usr/bin/env bash
# Stop the `rrkit serve` start.sh started (the action with `stop: true`; docs/guide/service.md): SIGTERM to
# $RRKIT_PID, then wait for rrkit's exit status (the file start.sh keeps in $RRKIT_SERVE_DIR), show its log and
# exit with that status: 0 stopped, 1 its recording could not be written (rrkit serve's statuses). A server that
# had exited before the stop fails the step too; one that does not stop within RRKIT_SERVE_STOP_TIMEOUT seconds
# (default 30) is killed, and the step fails.
set -euo pipefail

dir="${RRKIT_SERVE_DIR:-}"
pid="${RRKIT_PID:-}"
timeout="${RRKIT_SERVE_STOP_TIMEOUT:-30}"

fail() {
    echo "::error title=rrkit serve::$*" >&2
    exit 1
}

[[ -n "$dir" && -d "$dir" && -n "$pid" ]] ||
    fail "no server to stop: RRKIT_SERVE_DIR and RRKIT_PID are set by start.sh (the action without stop: true)"
[[ "$timeout" =~ ^[0-9]+$ ]] || fail "RRKIT_SERVE_STOP_TIMEOUT: a whole number of seconds, not '$timeout'"
status="$dir/exit-status"

show_log() {
    echo "::group::rrkit log ($dir/rrkit.log)"
    cat "$dir/rrkit.log" 2>/dev/null || true
    echo "::endgroup::"
}

if [[ -s "$status" ]]; then # exited already: $pid may be another process's by now, it is left alone
    show_log
    fail "rrkit (pid $pid) had exited before the stop, with status $(cat "$status"): its log is above"
fi

kill -TERM "$pid" 2>/dev/null || true
waits=$((timeout * 10)) # of 0.1 s
until [[ -s "$status" ]]; do
    if ((waits-- <= 0)); then
        kill -KILL "$pid" 2>/dev/null || true
        show_log
        fail "rrkit (pid $pid) did not stop within $timeout s of SIGTERM: killed"
    fi
    sleep 0.1
done
show_log
code="$(cat "$status")"
((code == 0)) || fail "rrkit stopped with status $code: its log is above"
echo "rrkit serve (pid $pid) stopped"
