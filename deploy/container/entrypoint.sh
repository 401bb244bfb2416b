#!/bin/sh
# The rrkit container's entrypoint (deploy/container/Dockerfile; docs/guide/service.md): `rrkit serve` on every
# interface at $RRKIT_PORT, writing the ready file the image's HEALTHCHECK reads. exec'd, so that rrkit is the
# process the container's signals reach: `docker stop` (SIGTERM) stops it at once, exit status 0.
#
#   RRKIT_PORT        the port to listen on (default 8080)
#   RRKIT_HOST        the address to bind (default 0.0.0.0: reachable from other containers)
#   RRKIT_READY_FILE  where rrkit writes its URLs, pid and admin token once it listens (default /tmp/rrkit.ready)
#   RRKIT_SCRIPT      a script file, or fixture:NAME, passed as --script
#   RRKIT_ARGS        more `rrkit serve` options, blank-separated (no quoting): "--quiet --keep 500"
#   RRKIT_ADMIN_TOKEN the admin API's token (rrkit reads it itself); unset, rrkit makes one up (bound beyond
#                     loopback) and writes it into the ready file, where the HEALTHCHECK finds it
#
# The container's arguments (compose `command:`, `docker run IMAGE ARGS...`) come last: any `rrkit serve` option,
# a later one of the same name winning over the settings above.
set -eu

if [ -n "${RRKIT_ARGS:-}" ]; then
    set -f # split on blanks, never globbed
    # shellcheck disable=SC2086
    set -- $RRKIT_ARGS "$@"
    set +f
fi
if [ -n "${RRKIT_SCRIPT:-}" ]; then
    set -- --script "$RRKIT_SCRIPT" "$@"
fi

exec rrkit serve \
    --host "${RRKIT_HOST:-0.0.0.0}" \
    --port "${RRKIT_PORT:-8080}" \
    --ready-file "${RRKIT_READY_FILE:-/tmp/rrkit.ready}" \
    "$@"
