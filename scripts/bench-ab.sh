#!/usr/bin/env bash
# bench-ab.sh BASE [ROUNDS] (make bench-ab BASE=<commit>): wall time of the
# simulator at commit BASE against the working tree, interleaved, compared by
# benchstat.
#
# This project's hosts are shared and noisy: the same binary's time per run
# drifts by 10-30% within minutes, so two binaries timed minutes apart say
# nothing about a change. Here the two are alternated ROUNDS times (default
# 10) for each of lru, les and oracle on BenchmarkSimulateReference (20 runs
# each time): whatever the host does during those minutes, it does to both.
# benchstat (golang.org/x/perf, $BENCHSTAT) then gives each side's median with
# its confidence interval and the change with its p-value; "~" means no
# significant difference.
#
# Each test binary is built with its own tree's PGO profile
# (cmd/lessim/default.pgo), as make bench builds it. Instruction counts
# (make bench-instr) repeat exactly but miss what decides wall time here:
# cache misses, mispredicted branches and store-forwarding stalls; this
# measures them together.
set -euo pipefail
GO=${GO:-go}
BENCHSTAT=${BENCHSTAT:?the benchstat module@version to go run (the Makefile sets it)}
base=${1:?usage: bench-ab.sh BASE [ROUNDS]}
rounds=${2:-10}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/base" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

git worktree add -q --detach "$dir/base" "$base"
(cd "$dir/base/sim" && "$GO" test -c -pgo=../cmd/lessim/default.pgo -o "$dir/base.test" .)
(cd sim && "$GO" test -c -pgo=../cmd/lessim/default.pgo -o "$dir/tree.test" .)

# bench BIN POLICY: one 20-run benchmark, its result line in Go's benchmark format.
bench() {
	(cd sim && "$1" -test.run '^$' -test.bench "Reference/$2\$" -test.benchtime 20x 2>/dev/null) |
		grep -E '^(Benchmark|goos|goarch|pkg|cpu)'
}

: >"$dir/base.txt" && : >"$dir/tree.txt"
for _ in $(seq "$rounds"); do
	for p in lru les oracle; do
		bench "$dir/base.test" "$p" >>"$dir/base.txt"
		bench "$dir/tree.test" "$p" >>"$dir/tree.txt"
	done
done
echo "# make bench-ab BASE=$base ROUNDS=$rounds: $(git rev-parse --short "$base") against the working tree of $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (modified)'), $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$GO" run "$BENCHSTAT" "$base=$dir/base.txt" "tree=$dir/tree.txt"
