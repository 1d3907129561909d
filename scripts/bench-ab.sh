#!/usr/bin/env bash
# bench-ab.sh BASE [ROUNDS] (make bench-ab BASE=<commit>): wall time of the
# simulator at commit BASE against the working tree, interleaved.
#
# This project's hosts are shared and noisy: the same binary's time per run
# drifts by 10-30% within minutes, so two binaries timed minutes apart say
# nothing about a change. Here the two are alternated ROUNDS times (default 6)
# for each of lru, les and oracle on BenchmarkSimulateReference (20 runs each
# time) and the medians of ms per run are printed side by side, with their
# ratio: whatever the host does during those minutes, it does to both.
#
# Each test binary is built with its own tree's PGO profile
# (cmd/lessim/default.pgo), as make bench builds it. Instruction counts
# (make bench-instr) repeat exactly but miss what decides wall time here:
# cache misses, mispredicted branches and store-forwarding stalls; this
# measures them together.
set -euo pipefail
GO=${GO:-go}
base=${1:?usage: bench-ab.sh BASE [ROUNDS]}
rounds=${2:-6}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/base" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

git worktree add -q --detach "$dir/base" "$base"
(cd "$dir/base/sim" && "$GO" test -c -pgo=../cmd/lessim/default.pgo -o "$dir/base.test" .)
(cd sim && "$GO" test -c -pgo=../cmd/lessim/default.pgo -o "$dir/tree.test" .)

# ms BIN POLICY: milliseconds per run of one 20-run benchmark.
ms() {
	(cd sim && "$1" -test.run '^$' -test.bench "Reference/$2\$" -test.benchtime 20x 2>/dev/null) |
		awk '/^BenchmarkSimulateReference/ {printf "%.2f\n", $3 / 1e6}'
}

# median: the median of the numbers on stdin.
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf "%-8s %12s %12s %8s   (%s rounds, ms per reference run, medians)\n" policy "$base" tree ratio "$rounds"
for p in lru les oracle; do
	: >"$dir/a" && : >"$dir/b"
	for _ in $(seq "$rounds"); do
		ms "$dir/base.test" "$p" >>"$dir/a"
		ms "$dir/tree.test" "$p" >>"$dir/b"
	done
	a=$(median <"$dir/a") b=$(median <"$dir/b")
	awk -v p="$p" -v a="$a" -v b="$b" 'BEGIN {printf "%-8s %12.1f %12.1f %8.3f\n", p, a, b, b / a}'
done
