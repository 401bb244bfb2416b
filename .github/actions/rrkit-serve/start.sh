#!/usr/bin/env bash
# Start `rrkit serve` in the background on 127.0.0.1 for a GitHub Actions job's later steps (action.yml beside this
# file; docs/guide/service.md), wait until it listens (its --ready-file), then export what clients need:
#
#   $GITHUB_ENV     RRKIT_HTTP_URL, RRKIT_WS_URL, RRKIT_ADMIN_URL, OPENAI_BASE_URL, RRKIT_PID, RRKIT_READY_FILE,
#                   RRKIT_LOG, RRKIT_SERVE_DIR (what stop.sh reads)
#   $GITHUB_OUTPUT  http_url, ws_url, admin_url, port, pid, log_file
#
# Settings (the action's inputs): RRKIT_SERVE_SCRIPT (--script), RRKIT_SERVE_PORT (0: a free port),
# RRKIT_SERVE_ARGS (more options, blank-separated), RRKIT_SERVE_TIMEOUT (seconds to listen, default 60); this
# script's own arguments are passed on too. RRKIT_SERVE_COMMAND names the rrkit program (default: rrkit on PATH).
# When rrkit exits before it listens, or does not listen in time, the step fails showing rrkit's log.
set -euo pipefail

port="${RRKIT_SERVE_PORT:-0}"
timeout="${RRKIT_SERVE_TIMEOUT:-60}"
rrkit="${RRKIT_SERVE_COMMAND:-rrkit}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

fail() {
    echo "::error title=rrkit serve::$*" >&2
    exit 1
}

[[ "$port" =~ ^[0-9]+$ ]] || fail "port: a number from 0 to 65535, not '$port'"
[[ "$timeout" =~ ^[0-9]+$ && "$timeout" -gt 0 ]] || fail "timeout: a whole number of seconds above 0, not '$timeout'"
command -v "$rrkit" >/dev/null 2>&1 || fail "'$rrkit' is not on PATH: install rrkit first (the action's install input)"
python="$(command -v python3 || command -v python)" || fail "no python3 or python on PATH to read rrkit's ready file"

dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/rrkit-serve.XXXXXX")"
ready="$dir/ready.json"
log="$dir/rrkit.log"
status="$dir/exit-status" # rrkit's exit status, once it exits: stop.sh waits for it

args=(serve --host 127.0.0.1 --port "$port" --ready-file "$ready")
if [[ -n "${RRKIT_SERVE_SCRIPT:-}" ]]; then
    args+=(--script "$RRKIT_SERVE_SCRIPT")
fi
if [[ -n "${RRKIT_SERVE_ARGS:-}" ]]; then
    read -r -d '' -a extra <<<"$RRKIT_SERVE_ARGS" || true # every line, split on blanks
    args+=("${extra[@]}")
fi
args+=("$@")

# rrkit in the background of a subshell that waits for it and keeps its exit status; every descriptor away from
# this step's output, so that the step ends while the server runs on
(
    set +e
    "$rrkit" "${args[@]}" </dev/null >"$log" 2>&1 &
    echo "$!" >"$dir/launched-pid"
    wait "$!"
    echo "$?" >"$status.tmp" && mv "$status.tmp" "$status"
) </dev/null >/dev/null 2>&1 &

show_log() {
    echo "::group::rrkit log ($log)"
    cat "$log" 2>/dev/null || true
    echo "::endgroup::"
}

waits=$((timeout * 10)) # of 0.1 s: at least the timeout, however the clock ticks
until [[ -s "$ready" ]]; do
    if [[ -s "$status" ]]; then
        show_log
        fail "rrkit exited with status $(cat "$status") before it listened: its log is above"
    fi
    if ((waits-- <= 0)); then
        show_log
        if [[ -s "$dir/launched-pid" ]]; then
            launched="$(cat "$dir/launched-pid")"
            kill -TERM "$launched" 2>/dev/null || true
            for ((i = 0; i < 100; i++)); do
                [[ -s "$status" ]] && break
                sleep 0.1
            done
            [[ -s "$status" ]] || kill -KILL "$launched" 2>/dev/null || true
        fi
        fail "rrkit did not listen within $timeout s (stopped): its log is above"
    fi
    sleep 0.1
done

# the ready file, one JSON object: {"port", "http_url", "ws_url", "admin_url", "pid"}
mapfile -t facts < <("$python" -c '
import json, sys
ready = json.load(open(sys.argv[1], encoding="utf-8"))
for key in ("http_url", "ws_url", "admin_url", "port", "pid"):
    print(ready[key])
' "$ready")
http_url="${facts[0]}" ws_url="${facts[1]}" admin_url="${facts[2]}" port="${facts[3]}" pid="${facts[4]}"

{
    echo "RRKIT_HTTP_URL=$http_url"
    echo "RRKIT_WS_URL=$ws_url"
    echo "RRKIT_ADMIN_URL=$admin_url"
    echo "OPENAI_BASE_URL=$http_url"
    echo "RRKIT_PID=$pid"
    echo "RRKIT_READY_FILE=$ready"
    echo "RRKIT_LOG=$log"
    echo "RRKIT_SERVE_DIR=$dir"
} >>"${GITHUB_ENV:-/dev/null}"
{
    echo "http_url=$http_url"
    echo "ws_url=$ws_url"
    echo "admin_url=$admin_url"
    echo "port=$port"
    echo "pid=$pid"
    echo "log_file=$log"
} >>"${GITHUB_OUTPUT:-/dev/null}"

echo "rrkit serve listening at $http_url (WebSocket $ws_url, admin $admin_url), pid $pid, log $log"
echo "stop it with: bash $here/stop.sh   (or kill $pid)"
