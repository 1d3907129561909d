#!/usr/bin/env bash
# The main job on embedded defaults: MiniCPM-V 4.7 35B-A3B on an iPhone 17 Pro
# Max with a 3 GiB expert cache, from the stock llama.cpp baseline through each
# LES step, on a deterministic synthetic trace (2,000 tokens, seed 1).
set -euo pipefail
lessim=${1:-bin/lessim-sim}
common=(--device iphone-17-pro-max --cache 3GiB --tokens 2000 --seed 1)

step() {
	local title=$1; shift
	printf '%-44s ' "$title"
	"$lessim" simulate "${common[@]}" "$@" |
		awk '/^throughput/ {tp = $2 " " $3} /^flash/ {fl = $2 " " $3} /^cache +hit rate/ {hr = $4}
		     END {printf "%11s   hit rate %s   flash %s\n", tp, hr, fl}'
}

echo "lessim demo: $("$lessim" --version)"
echo "model minicpm-v-4.7-35b-a3b, device iphone-17-pro-max, expert cache 3 GiB, synthetic trace (2000 tokens, seed 1)"
echo
step "stock llama.cpp (mmap, on demand)"        --policy ondemand --layout gguf-mmap --cached-first=false
step "+ lookahead prefetch"                     --policy les --layout gguf-mmap --cached-first=false
step "+ per-expert layout, cached experts first" --policy les --layout per-expert
step "+ mixed precision (Q3_K experts)"         --policy les --layout per-expert --variant mixed-q3k-experts
step "+ speculative decoding (block 4, α 0.7)"  --policy les --layout per-expert --variant mixed-q3k-experts --spec-block 4 --spec-accept 0.7
step "oracle (hit-rate reference, Q3_K)"        --policy oracle --layout per-expert --variant mixed-q3k-experts
echo
echo "full result of the LES configuration:"
echo
"$lessim" simulate "${common[@]}" --policy les --layout per-expert --variant mixed-q3k-experts
