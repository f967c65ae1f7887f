#!/usr/bin/env bash
# run.sh — run the A2A TCK (a2aproject/a2a-tck, branch 1.0-dev) from a checkout against a server.
#
#   conformance/run.sh [options] TCK_DIR SUT_URL [-- extra pytest args]
#
#   TCK_DIR   a checkout of the kit (the directory holding run_tck.py); it is not modified except
#             for the reports/ folder that run_tck.py writes there
#   SUT_URL   the server's base URL; the kit reads SUT_URL/.well-known/agent-card.json and tests
#             every transport the card's supportedInterfaces declare (JSONRPC, HTTP+JSON, GRPC)
#
# Options (passed to the kit's own CLI, run_tck.py):
#   --transport LIST   jsonrpc, http_json, grpc, or a comma-separated list (default: all declared)
#   --level LEVEL      must, should or may (default: all three)
#   -v | --verbose     verbose pytest output
#   --verbose-log      -v -s --log-cli-level=INFO
#   --reports DIR      also copy the kit's reports/ (compatibility.json, junitreport.xml) to DIR
#
# Environment: PYTHON (default /usr/bin/python3: the interpreter setup.sh provisions),
# A2A_TCK_CACHE (where regenerated protobuf stubs are kept; default ~/.cache/a2awebcap-tck),
# A2A_TCK_USE_KIT_STUBS=1 (use the kit's checked-in stubs: needs protobuf >= 6.30).
#
# Exit status: the kit's (pytest's): 0 when every selected test passed or xfailed, 1 when a test
# failed, 2 on a usage error here, 3 when the environment is not ready (run setup.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}

usage() {
	sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit 2
}
die() {
	echo "run.sh: error: $*" >&2
	exit "${2:-2}"
}

kit_args=()
reports_out=
positional=()
while [ $# -gt 0 ]; do
	case "$1" in
	--transport | --level)
		[ $# -ge 2 ] || die "$1 needs a value"
		kit_args+=("$1" "$2")
		shift 2
		;;
	--transport=* | --level=*) kit_args+=("$1"); shift ;;
	-v | --verbose | --verbose-log) kit_args+=("$1"); shift ;;
	--reports)
		[ $# -ge 2 ] || die "--reports needs a directory"
		reports_out=$2
		shift 2
		;;
	--reports=*) reports_out=${1#--reports=}; shift ;;
	-h | --help) usage ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) positional+=("$1"); shift ;;
	esac
done
[ ${#positional[@]} -eq 2 ] || usage
tck_dir=$(cd "${positional[0]}" 2>/dev/null && pwd) || die "no such directory: ${positional[0]}"
sut_url=${positional[1]%/}
if [ ! -f "$tck_dir/run_tck.py" ] || [ ! -d "$tck_dir/tests/compatibility" ]; then
	die "$tck_dir does not look like an a2a-tck checkout (no run_tck.py or tests/compatibility/)"
fi
case "$sut_url" in http://* | https://*) ;; *) die "SUT_URL must start with http:// or https:// (got $sut_url)" ;; esac

# The environment setup.sh provides.
"$PYTHON" -c 'import pytest, httpx, grpc, google.protobuf, google.api.annotations_pb2, jsonschema, pytest_asyncio; assert int(pytest.__version__.split(".")[0]) >= 8' 2>/dev/null ||
	die "$PYTHON lacks the kit's dependencies (pytest >= 8, httpx, grpcio, protobuf, googleapis-common-protos, jsonschema, pytest-asyncio): run $here/setup.sh" 3

# Protobuf stubs: regenerate the kit's a2a.proto with the installed protoc so that the stubs
# match the installed protobuf and grpcio runtimes.
pb2_dir=
if [ "${A2A_TCK_USE_KIT_STUBS:-}" != 1 ]; then
	proto=$tck_dir/specification/a2a.proto
	[ -f "$proto" ] || die "$proto not found"
	command -v protoc >/dev/null 2>&1 || die "protoc not found: run $here/setup.sh" 3
	plugin=$(command -v grpc_python_plugin) || die "grpc_python_plugin not found: run $here/setup.sh" 3
	api_protos=$("$PYTHON" -c 'import os, google.api.annotations_pb2 as m; print(os.path.dirname(os.path.dirname(os.path.dirname(m.__file__))))')
	cache=${A2A_TCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/a2awebcap-tck}
	key=$( (cat "$proto"; protoc --version; "$plugin" --version 2>/dev/null || true) | sha256sum | cut -c1-16)
	pb2_dir=$cache/pb2-$key
	if [ ! -f "$pb2_dir/a2a_pb2_grpc.py" ]; then
		mkdir -p "$cache"
		tmp=$(mktemp -d "$cache/tmp.XXXXXX")
		protoc -I "$tck_dir/specification" -I /usr/include -I "$api_protos" \
			--python_out="$tmp" --grpc_out="$tmp" --plugin=protoc-gen-grpc="$plugin" a2a.proto ||
			die "protoc failed on $proto" 3
		rm -rf "$pb2_dir"
		mv "$tmp" "$pb2_dir"
	fi
	export A2A_TCK_PB2_DIR=$pb2_dir
fi

export PYTHONPATH=$here/pyshim${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1 # keep __pycache__ out of this repository
# The shim plugin; and pytest-asyncio >= 0.24 warns unless its loop scope is set (the kit's
# pyproject does not set it).
export PYTEST_ADDOPTS="-p a2awebcap_tck_shim -o asyncio_default_fixture_loop_scope=function${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"

# Is the server there?
if ! "$PYTHON" - "$sut_url" <<'EOF'; then
import sys, httpx
url = sys.argv[1] + "/.well-known/agent-card.json"
try:
    r = httpx.get(url, timeout=10)
    r.raise_for_status()
    card = r.json()
except Exception as e:  # noqa: BLE001
    print(f"run.sh: error: cannot fetch the agent card at {url}: {e}", file=sys.stderr)
    sys.exit(1)
ifaces = ", ".join(f"{i.get('protocolBinding')} {i.get('url')}" for i in card.get("supportedInterfaces", []))
print(f"run.sh: agent {card.get('name')!r}: {ifaces or 'no supportedInterfaces'}")
EOF
	exit 3
fi

cd "$tck_dir"
rm -f reports/compatibility.json
set +e
"$PYTHON" run_tck.py --sut-host "$sut_url" ${kit_args[@]+"${kit_args[@]}"} -- "$@"
status=$?
set -e

echo
echo "=== a2aWebCap summary (requirement results per transport) ==="
if [ -f reports/compatibility.json ]; then
	"$PYTHON" "$here/summarize.py" reports/compatibility.json || true
else
	echo "no reports/compatibility.json was written (pytest exit status $status)"
fi
if [ -n "$reports_out" ]; then
	mkdir -p "$reports_out"
	cp -f reports/compatibility.json reports/junitreport.xml "$reports_out"/ 2>/dev/null || true
	echo "reports copied to $reports_out"
fi
exit "$status"
