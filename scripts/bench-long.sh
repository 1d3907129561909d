#!/usr/bin/env bash
# bench-long.sh [TOKENS]: the long-trace benchmark (make bench-long).
#
# Writes a TOKENS-token (default 1,000,000) synthetic trace of the default
# model (40 layers x 256 experts, top-8) with depth-1 lookahead stored
# compactly (its 8 best candidates per row) with `lessim trace synth` to a
# temporary folder, then runs `lessim simulate` on it under lru and les
# (3 GiB cache; the trace streams) and reports, per child process, wall
# time, CPU time (user + system) and peak resident memory (ru_maxrss, from
# /usr/bin/time), and the file's bytes per token.
#
# LESSIM_LONG_TRACE=path reuses a trace of TOKENS tokens written before
# (generating 1,000,000 tokens takes about 45 minutes on 2 shared cores).
set -euo pipefail
GO=${GO:-go}
TOKENS=${1:-1000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$GO" build -o "$dir/lessim" ./cmd/lessim

# run LABEL CMD...: runs CMD with its output in $dir/out and prints a row.
run() {
	local label=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$dir/time" "$@" >"$dir/out"
	read -r wall user sys rss <"$dir/time"
	printf '%-10s wall %8.1f s   cpu %8.1f s   peak RSS %7.0f MiB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$(echo "$rss / 1024" | bc)"
}

trace=${LESSIM_LONG_TRACE:-}
if [ -z "$trace" ]; then
	trace=$dir/long.parquet
	run synth "$dir/lessim" trace synth --tokens "$TOKENS" --lookahead-top 8 --seed 11 --quiet --out "$trace"
fi
size=$(stat -c %s "$trace")
steps=$TOKENS
printf '%-10s %s: %d tokens, %d bytes, %.0f bytes per token\n' file "$(basename "$trace")" "$steps" "$size" "$(echo "$size / $steps" | bc -l)"
for pol in lru les; do
	run "$pol" "$dir/lessim" simulate --trace "$trace" --policy "$pol" --cache 3GiB
	grep -E '^(throughput|hits|memory)' "$dir/out" | sed 's/^/           /' || true
done
