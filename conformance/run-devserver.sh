#!/usr/bin/env bash
# run-devserver.sh — build conformance/devserver (the Conformance agent on a2a-go's own default
# handler, JSON-RPC + HTTP+JSON + gRPC, loopback only), start it, run the kit against it with
# run.sh, and stop it.
#
#   conformance/run-devserver.sh TCK_DIR [run.sh options] [-- extra pytest args]
#
# Environment: DEVSERVER_ADDR (default 127.0.0.1:9999), DEVSERVER_GRPC_ADDR (default
# 127.0.0.1:10000; empty for no gRPC), DEVSERVER_FLAGS (more devserver flags, e.g. "-user anon"
# so that a2a-go's in-memory store lets callers list tasks, or "-push=false").
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
tck_dir=$1
shift
addr=${DEVSERVER_ADDR:-127.0.0.1:9999}
grpc_addr=${DEVSERVER_GRPC_ADDR-127.0.0.1:10000}

work=$(mktemp -d)
pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$here/.." && go build -o "$work/devserver" ./conformance/devserver)
# shellcheck disable=SC2086 # DEVSERVER_FLAGS is a list of flags
"$work/devserver" -addr "$addr" -grpc-addr "$grpc_addr" ${DEVSERVER_FLAGS:-} >"$work/devserver.log" 2>&1 &
pid=$!

for _ in $(seq 50); do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "run-devserver.sh: the devserver exited:" >&2
		cat "$work/devserver.log" >&2
		exit 3
	fi
	if "${PYTHON:-/usr/bin/python3}" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
		"http://$addr/.well-known/agent-card.json" 2>/dev/null; then
		break
	fi
	sleep 0.2
done

opts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	opts+=("$1")
	shift
done
set +e
"$here/run.sh" ${opts[@]+"${opts[@]}"} "$tck_dir" "http://$addr" "$@"
status=$?
set -e
echo "--- devserver log (last 20 lines) ---"
tail -n 20 "$work/devserver.log"
exit "$status"
