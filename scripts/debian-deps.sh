#!/usr/bin/env bash
# debian-deps.sh COMMAND=PACKAGE...: installs, with Debian's apt-get, the
# package of every COMMAND not on PATH (apt-get update once, only when
# something is missing). Used by make build-arm64 (the aarch64 cross
# compilers, qemu's user-mode emulator) and make test-adb (adb).
set -euo pipefail
missing=()
for pair in "$@"; do
	cmd=${pair%%=*} pkg=${pair#*=}
	command -v "$cmd" >/dev/null || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "missing ${missing[*]}: install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "installing ${missing[*]} (Debian packages)" >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
