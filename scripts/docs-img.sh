#!/usr/bin/env bash
# docs-img.sh LESSIM (make docs-img): redraw the pictures of docs/img/ with the
# commands the pages quote beside them. Plots are PNG and SVG; the pages use
# the PNG. The replay-sweep plot needs the BigMoeOnEdge trace in
# ../shared/reference (not shipped) and is skipped without it. The validation
# scatter (validation-16l-3x3.png) is a measurement of the real engine on one
# machine, not redrawn here: `lessim validate` writes it
# (docs/record-live-validate.md).
set -euo pipefail
lessim=$(realpath "${1:?usage: docs-img.sh LESSIM}")
img=$(realpath docs/img)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# plot NAME CMD...: run CMD with --plot into the scratch folder, keep the PNG.
plot() {
	local name=$1
	shift
	"$lessim" "$@" --plot "$tmp/$name" >/dev/null
	mv "$tmp/$name.png" "$img/$name.png"
	echo "drew docs/img/$name.png: lessim $*"
}

# docs/simulate.md: LES against stock llama.cpp, iPhone 17 Pro Max, 3 GiB.
plot les-iphone17-3gib simulate --cache 3GiB
plot stock-iphone17-3gib simulate --cache 3GiB --policy ondemand --layout gguf-mmap --cached-first=false
# docs/ablate.md: the demo's ablation.
plot ablation-iphone18-3gib ablate --device iphone-18-pro-max --cache 3GiB

# docs/sweeps.md: the 27-point replay sweep's throughput plot.
ref=../shared/reference/traces/qwen.route.csv
if [ -f "$ref" ]; then
	refabs=$(realpath "$ref")
	cp docs/examples/replay-sweep.yaml "$tmp/"
	(cd "$tmp" &&
		"$lessim" trace import --format bmoe-route-csv "$refabs" --out qwen.parquet --quiet >/dev/null &&
		"$lessim" sweep --config replay-sweep.yaml --out results --quiet >/dev/null 2>&1 &&
		"$lessim" report results --out report >/dev/null)
	mv "$tmp/report/throughput.png" "$img/replay-sweep-throughput.png"
	echo "drew docs/img/replay-sweep-throughput.png: lessim sweep --config docs/examples/replay-sweep.yaml, lessim report"
else
	echo "kept docs/img/replay-sweep-throughput.png: $ref not found"
fi
