#!/usr/bin/env bash
# bench-instr.sh [POLICY...]: instructions per simulator run (make bench-instr).
# With BY_FUNC=1 each policy's line is followed by its heaviest functions.
#
# Wall time on this project's shared 2-core hosts drifts by 10-15% within an
# hour and by 2x or more between hosts, so a speed-up is judged here by
# counting: Valgrind's cachegrind counts the instructions the process runs
# (a simulation is deterministic, so the count repeats to within a few
# thousandths). For each policy it runs BenchmarkSimulateReference (the
# reference shape: 40 layers x 256 experts, top-8, 2,000 tokens, 3 GiB cache)
# for 2 and for 6 iterations and reports the difference divided by 4: the
# instructions of one run without the set-up (trace synthesis, indexes),
# and that per expert selection (2,000 x 40 x 8 = 640,000), with the first
# level's data cache misses. GOGC=off and GOMAXPROCS=1 keep the garbage
# collector and the scheduler out of the difference. GODEBUG=cpu.rdtscp=off:
# Debian's valgrind (3.19) cannot decode RDTSCP, which Go's runtime runs when
# a thread sleeps on a contended lock; without it runs died now and then with
# SIGILL (more often on a loaded host).
#
# Valgrind is Debian's package: installed with apt-get when missing. The
# test binary is built with the profile lessim's binary uses (PGO, as make
# bench). A run takes about a minute per policy (cachegrind is ~50x slower).
set -euo pipefail
GO=${GO:-go}
PGO=${PGO:-$(pwd)/cmd/lessim/default.pgo}
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(lru les oracle)

if ! command -v valgrind >/dev/null; then
	echo "installing valgrind (Debian package)" >&2
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$GO" test -pgo="$PGO" -c -o "$dir/sim.test" ./sim/

# count N POLICY: "instructions D1-misses" of N iterations (and the set-up);
# the per-function counts go to $dir/POLICY.N.out.
count() {
	(cd sim && GODEBUG=cpu.rdtscp=off GOGC=off GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=yes \
		--cachegrind-out-file="$dir/$2.$1.out" "$dir/sim.test" -test.run '^$' \
		-test.bench "Reference/$2\$" -test.benchtime "$1x" 2>&1) |
		awk '/I *refs:/ {gsub(",", "", $4); i=$4} /D1  misses:/ {gsub(",", "", $4); d=$4} END {print i, d}'
}

# by_func POLICY: the functions taking at least 1% of one run's instructions
# (the 6-run count minus the 2-run one, over 4), in millions per run. Inlined
# code counts in the function it was inlined into, under the file it came from.
by_func() {
	cg_diff "$dir/$1.2.out" "$dir/$1.6.out" >"$dir/$1.diff" 2>/dev/null
	cg_annotate --show=Ir --auto=no --threshold=1 "$dir/$1.diff" |
		awk -v root="$(pwd)/" '/^-+$/ {sep++; next} sep >= 4 && NF >= 3 && $1 ~ /^[0-9,]+$/ {
			n = $1; gsub(",", "", n); fn = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", fn); sub(root, "", fn); sub(/:github.com\/lessim\/lessim\//, ":", fn)
			printf "    %7.1f M  %s\n", n / 4e6, fn
		}'
}

for p in "${policies[@]}"; do
	read -r i2 d2 < <(count 2 "$p")
	read -r i6 d6 < <(count 6 "$p")
	awk -v p="$p" -v i2="$i2" -v i6="$i6" -v d2="$d2" -v d6="$d6" 'BEGIN {
		i = (i6 - i2) / 4; d = (d6 - d2) / 4
		printf "%-8s %8.1f M instructions per run  %6.0f per selection  %6.2f M D1 misses per run\n", p, i / 1e6, i / 640000, d / 1e6
	}'
	if [ -n "${BY_FUNC:-}" ]; then by_func "$p"; fi
done
