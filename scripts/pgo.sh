#!/usr/bin/env bash
# pgo.sh: regenerates cmd/lessim/default.pgo (make pgo), the CPU profile Go's
# profile-guided optimization builds lessim with (go build picks up a main
# package's default.pgo by itself; make bench and bench-sweep pass it to the
# benchmarks so they measure the code the binary runs).
#
# The profile is of the work lessim spends its time on: the simulator under
# lru, les and oracle on the reference shape (BenchmarkSimulateReference),
# every policy's event handling (BenchmarkReplay) and reading a trace file
# (BenchmarkRead). Regenerate it after large changes to those paths; a stale
# profile is still safe (Go ignores what no longer matches), only less useful.
set -euo pipefail
GO=${GO:-go}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# prof PKG PATTERN: one CPU profile of PKG's benchmarks matching PATTERN.
prof() {
	local out
	out="$dir/$(echo "$1$2" | tr -c 'a-zA-Z0-9' _).prof"
	"$GO" test -run '^$' -bench "$2" -benchtime 20x -cpuprofile "$out" -o "$dir/t.test" "$1" >/dev/null
}

prof ./sim/ 'BenchmarkSimulateReference/(lru|les|oracle)$'
prof ./policies/ 'BenchmarkReplay'
prof ./traces/ 'BenchmarkRead$'
"$GO" tool pprof -proto "$dir"/*.prof >"$dir/merged.pgo" 2>/dev/null
mv "$dir/merged.pgo" cmd/lessim/default.pgo
echo "cmd/lessim/default.pgo: $(wc -c <cmd/lessim/default.pgo) bytes"
