#!/usr/bin/env bash
# fuzz-smoke: run every fuzz target of the pure-Go build briefly, so that each
# one really fuzzes (new inputs, not only its seeds) on every `make test`.
# Targets are discovered, not listed: a new Fuzz function is picked up as is.
# Usage: scripts/fuzz-smoke.sh [fuzztime] [minimizetime]   (defaults 5s, 2s)
set -euo pipefail
GO=${GO:-go}
fuzztime=${1:-5s}
mintime=${2:-2s}
n=0
for pkg in $($GO list ./...); do
	for name in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $name ($fuzztime)"
		$GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$mintime" "$pkg" >/tmp/fuzz-smoke.$$.log 2>&1 || {
			cat /tmp/fuzz-smoke.$$.log
			rm -f /tmp/fuzz-smoke.$$.log
			echo "fuzz-smoke: $pkg $name failed (a failing input is saved under testdata/fuzz/$name in that package)"
			exit 1
		}
		n=$((n + 1))
	done
done
rm -f /tmp/fuzz-smoke.$$.log
echo "fuzz-smoke: $n targets, $fuzztime each"
[ "$n" -gt 0 ] || { echo "fuzz-smoke: no fuzz targets found"; exit 1; }
