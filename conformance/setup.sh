#!/usr/bin/env bash
# setup.sh — install, from Debian packages only, what the A2A TCK (a2aproject/a2a-tck, branch
# 1.0-dev) needs to run under Debian's own python3 (/usr/bin/python3). Idempotent: when
# everything is already importable it changes nothing. Run as root (or with sudo available).
#
# Why not pip: PyPI is not reachable here. Why two Debian releases: the kit wants pytest >= 8,
# pytest-asyncio, httpx >= 0.27 and googleapis-common-protos, which Debian 12 (bookworm) lacks or
# has too old; Debian 13 (trixie) has them as pure-Python (Architecture: all) packages that work
# with bookworm's python3.11. On bookworm this script therefore adds a trixie apt source that is
# pinned to priority 50 (never used unless asked for) and raises exactly those packages to 990.
# Everything compiled (grpcio, protobuf, jsonschema's deps) stays bookworm's.
#
# What Debian cannot provide, and how run.sh copes:
#   - the kit's checked-in protobuf stubs need protobuf >= 6.30 (Debian has 3.21.12): run.sh
#     regenerates them with Debian's protoc + grpc_python_plugin (installed here) into a cache;
#   - pytest-html is not packaged: run.sh loads a tiny plugin that accepts --html and
#     --self-contained-html, which the kit's run_tck.py always passes.
#
# Environment: PYTHON (default /usr/bin/python3), A2A_TCK_APT_SUITE (default trixie),
# A2A_TCK_APT_MIRROR (default: the mirror of the system's own Debian source), A2A_TCK_FORCE=1
# (run apt even when everything is already there).
set -euo pipefail

PYTHON=${PYTHON:-/usr/bin/python3}
SUITE=${A2A_TCK_APT_SUITE:-trixie}
SOURCES=/etc/apt/sources.list.d/a2awebcap-tck-$SUITE.sources
PREFS=/etc/apt/preferences.d/a2awebcap-tck-$SUITE

# Packages taken from $SUITE on bookworm (pure Python, Architecture: all).
PINNED=(python3-pytest python3-pluggy python3-iniconfig python3-pytest-asyncio
	python3-httpx python3-httpcore python3-googleapis-common-protos)
# Everything run.sh needs, installed in one apt-get call.
PACKAGES=(python3 python3-pytest python3-pytest-asyncio python3-httpx python3-grpcio
	python3-protobuf python3-googleapis-common-protos python3-jsonschema python3-jinja2
	protobuf-compiler protobuf-compiler-grpc libprotobuf-dev)

die() {
	echo "setup.sh: error: $*" >&2
	exit 1
}
log() { echo "setup.sh: $*"; }

SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "must run as root (or have sudo) to install Debian packages"
	SUDO=sudo
fi

# check prints nothing and succeeds when every dependency is usable.
check() {
	[ -x "$PYTHON" ] || return 1
	command -v protoc >/dev/null 2>&1 || return 1
	command -v grpc_python_plugin >/dev/null 2>&1 || return 1
	[ -f /usr/include/google/protobuf/descriptor.proto ] || return 1
	"$PYTHON" - <<'EOF' 2>/dev/null || return 1
import sys
import pytest, pytest_asyncio, httpx, grpc, jsonschema, jinja2
import google.protobuf, google.api.annotations_pb2, google.rpc.status_pb2, google.rpc.error_details_pb2
major = int(pytest.__version__.split(".")[0])
if major < 8:
    sys.exit(1)
import os
api = os.path.dirname(google.api.annotations_pb2.__file__)
if not os.path.exists(os.path.join(api, "annotations.proto")):
    sys.exit(1)
EOF
}

report() {
	"$PYTHON" - <<'EOF'
import sys, pytest, pytest_asyncio, httpx, grpc, jsonschema, google.protobuf
print(f"  python         {sys.version.split()[0]} ({sys.executable})")
print(f"  pytest         {pytest.__version__}")
print(f"  pytest-asyncio {pytest_asyncio.__version__}")
print(f"  httpx          {httpx.__version__}")
print(f"  grpcio         {grpc.__version__}")
print(f"  protobuf       {google.protobuf.__version__}")
from importlib.metadata import version
print(f"  jsonschema     {version('jsonschema')}")
EOF
	echo "  protoc         $(protoc --version 2>/dev/null | awk '{print $2}')"
	echo "  grpc plugin    $(command -v grpc_python_plugin)"
}

if [ "${A2A_TCK_FORCE:-}" != 1 ] && check; then
	log "already set up; nothing to do (A2A_TCK_FORCE=1 re-runs apt)"
	report
	exit 0
fi

[ -r /etc/os-release ] || die "cannot read /etc/os-release: this script supports Debian 12 (bookworm) and later"
# shellcheck disable=SC1091
. /etc/os-release
[ "${ID:-}" = debian ] || die "this script supports Debian only (found ID=${ID:-unknown})"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found"

case "${VERSION_CODENAME:-}" in
bookworm)
	log "Debian 12 (bookworm): adding a pinned $SUITE source for ${PINNED[*]}"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || die "$keyring missing (install debian-archive-keyring)"
	# Use the same mirror as the system's own Debian source (or A2A_TCK_APT_MIRROR).
	mirror=$(grep -hoE '^URIs:[[:space:]]*https?://[^[:space:]]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		head -n1 | awk '{print $2}' || true)
	if [ -z "$mirror" ]; then
		mirror=$(grep -hoE '^deb[[:space:]]+https?://[^[:space:]]+/debian/?[[:space:]]' /etc/apt/sources.list 2>/dev/null |
			head -n1 | awk '{print $2}' || true)
	fi
	mirror=${A2A_TCK_APT_MIRROR:-$mirror}
	[ -n "$mirror" ] || die "cannot find the system's Debian mirror in /etc/apt/sources.list{,.d}; set A2A_TCK_APT_MIRROR to its URL"
	want_sources="Types: deb
URIs: $mirror
Suites: $SUITE
Components: main
Signed-By: $keyring"
	want_prefs="# Written by a2aWebCap conformance/setup.sh: $SUITE is used only for the packages below.
Package: *
Pin: release n=$SUITE
Pin-Priority: 50

Package: ${PINNED[*]}
Pin: release n=$SUITE
Pin-Priority: 990"
	if [ "$(cat "$SOURCES" 2>/dev/null || true)" != "$want_sources" ]; then
		printf '%s\n' "$want_sources" | $SUDO tee "$SOURCES" >/dev/null || die "cannot write $SOURCES"
	fi
	if [ "$(cat "$PREFS" 2>/dev/null || true)" != "$want_prefs" ]; then
		printf '%s\n' "$want_prefs" | $SUDO tee "$PREFS" >/dev/null || die "cannot write $PREFS"
	fi
	;;
"")
	die "unknown Debian release (no VERSION_CODENAME in /etc/os-release)"
	;;
*)
	log "Debian ${VERSION_CODENAME}: installing from the system's own sources"
	;;
esac

log "apt-get update"
$SUDO apt-get update -qq || die "apt-get update failed (is the Debian mirror reachable?)"

# Refuse to go on if the pinning would pull the interpreter or libc from another release.
if [ "${VERSION_CODENAME:-}" = bookworm ]; then
	plan=$($SUDO apt-get -s install --no-install-recommends "${PACKAGES[@]}" 2>&1) ||
		die "apt-get cannot resolve the packages:
$plan"
	if grep -E '^Inst (python3|python3\.[0-9]+|python3-minimal|libc6|libpython3[^ ]*) .*Debian:1[3-9]' <<<"$plan" >/dev/null; then
		die "refusing: the install would take the Python interpreter or libc from $SUITE:
$(grep '^Inst' <<<"$plan")"
	fi
fi

log "apt-get install ${PACKAGES[*]}"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" ||
	die "apt-get install failed"

check || die "packages installed, but the dependency check still fails; run: $PYTHON -c 'import pytest, httpx, grpc, google.api.annotations_pb2'"
log "done"
report
