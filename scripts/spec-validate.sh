#!/usr/bin/env bash
# spec-validate.sh MODEL PROFILE OUT: speculative decoding measured on the live
# engine against lessim's prediction (issue 36; docs/model.md, "Speculative
# decoding"). Run it on a quiet machine (timings), with LESSIM the llama.cpp
# build (default: lessim on PATH) and PROFILE from `lessim calibrate --model`.
#
#  1. for each block B in 2 4 and α in 0.5 0.9, record decodes live's prompt
#     with the controlled drafter (seed 1): every verify pass, rejected drafts
#     included, is in that trace; the live runs below make exactly those passes;
#  2. in each of REPEATS rounds, validate first fits PROFILE to two plain live
#     runs (ondemand at 40%, les at 15%) and records the plain greedy trace;
#     then every point (policies ondemand and les, caches 15% and 40%, plain
#     and each speculative setting) runs live once;
#  3. each point is simulated with that round's fitted profile twice: from the
#     recorded passes (--spec-from-trace: the passes, drafts and rejected
#     drafts' experts as recorded) and with the acceptance model (--spec-accept
#     α on the plain trace: geometric acceptance, rejected drafts' experts
#     drawn). A point's prediction is the mean over the rounds. (A fit per
#     round, minutes before its points: this machine's flash speed moves by
#     tens of percent over a quarter of an hour.)
#
# It prints one line per point and the MAPE of each prediction, and per
# speculative point whether "faster than plain" is predicted as measured (or
# both differences lie within the measured spread), and the MAPE of the
# speed relative to plain at the same point (speculative ÷ plain, predicted
# against measured: free of drift that moves both). Raw numbers go to
# OUT/points.tsv (`spec-validate.sh --summary OUT` prints the table again).
# TOKENS (default 24) and REPEATS (default 2) size the run. With
# DRAFT_MODEL=FILE the drafter is that draft model (--drafter model) instead
# of the controlled one: the blocks are 2 and 4 (α is the model's, shown as
# -), PROFILE must come from `calibrate --draft-model FILE` (its measured
# compute.draft_token is what the replay charges), and the acceptance model
# runs at the α the recorded passes give (--spec-accept-from-trace).
set -euo pipefail

# summarize POINTS.TSV prints the table and the verdicts.
summarize() {
awk -F'\t' '
{ k = $1 " " $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  if ($5 == "measured") { m[k] += $6; m2[k] += $6 * $6; c[k]++; if (c[k] == 1 || $6 < lo[k]) lo[k] = $6; if (c[k] == 1 || $6 > hi[k]) hi[k] = $6 }
  else { ps[k, $5] += $6; pn[k, $5]++; p[k, $5] = ps[k, $5] / pn[k, $5] } }
END {
  printf "%-9s %5s %5s %5s %12s %12s %28s %8s %8s\n", "policy", "cache", "block", "alpha", "pred replay", "pred model", "measured tok/s (mean ± sd)", "err rep", "err mod"
  for (i = 1; i <= n; i++) { k = order[i]; split(k, f, " ")
    mean[k] = m[k] / c[k]; sd[k] = c[k] > 1 ? sqrt((m2[k] - c[k] * mean[k] ^ 2) / (c[k] - 1)) : 0
    er = 100 * (p[k, "replay"] - mean[k]) / mean[k]; em = 100 * (p[k, "model"] - mean[k]) / mean[k]
    printf "%-9s %5s %5s %5s %12.2f %12.2f %18.2f ± %-7.2f %+7.1f%% %+7.1f%%\n", f[1], f[2], f[3], f[4], p[k, "replay"], p[k, "model"], mean[k], sd[k], er, em
    if (f[3] != 1) { sr += (er < 0 ? -er : er); sm += (em < 0 ? -em : em); ns++ }
    ar += (er < 0 ? -er : er); na++ }
  printf "MAPE over the %d speculative points: %.1f%% from the recorded passes, %.1f%% from the acceptance model; over all %d points (recorded passes): %.1f%%\n", ns, sr / ns, sm / ns, na, ar / na
  ok = 0
  for (i = 1; i <= n; i++) { k = order[i]; split(k, f, " "); if (f[3] == 1) continue
    b = f[1] " " f[2] " 1 0"
    dp = p[k, "replay"] - p[b, "replay"]; dm = mean[k] - mean[b]; spread = (hi[k] - lo[k]) + (hi[b] - lo[b])
    same = (dp > 0) == (dm > 0); within = (dm < 0 ? -dm : dm) <= spread
    v = same ? "predicted as measured" : (within ? "measured the other way within the spread" : "WRONG")
    if (same || within) ok++
    printf "%s %s block %s α %s: speculative vs plain predicted %+.2f tok/s, measured %+.2f (spread %.2f): %s\n", f[1], f[2], f[3], f[4], dp, dm, spread, v }
  printf "faster-than-plain right (or within the spread) at %d of %d points\n", ok, ns
  for (i = 1; i <= n; i++) { k = order[i]; split(k, f, " "); if (f[3] == 1) continue
    b = f[1] " " f[2] " 1 0"; rp = p[k, "replay"] / p[b, "replay"]; rm = mean[k] / mean[b]
    e = 100 * (rp - rm) / rm; sq += (e < 0 ? -e : e) }
  printf "MAPE of speculative ÷ plain speed at the same point (recorded passes): %.1f%% over %d points\n", sq / ns, ns
}' "$1"
}
if [ "${1:-}" = --summary ]; then # spec-validate.sh --summary OUT: the table again
	summarize "${2:?usage: spec-validate.sh --summary OUT}/points.tsv"
	exit
fi
model=${1:?usage: spec-validate.sh MODEL PROFILE OUT}
profile=${2:?usage: spec-validate.sh MODEL PROFILE OUT}
out=${3:?usage: spec-validate.sh MODEL PROFILE OUT}
L=${LESSIM:-lessim}
tokens=${TOKENS:-24}
repeats=${REPEATS:-2}
prompt="The history of the printing press begins" # live's default prompt
mkdir -p "$out"

specs=("1 0")
alphas="0.5 0.9"
[ -n "${DRAFT_MODEL:-}" ] && alphas=-
for b in 2 4; do for a in $alphas; do specs+=("$b $a"); done; done
# drafter B A: the drafter's flags for block B at α A.
drafter() {
	if [ -n "${DRAFT_MODEL:-}" ]; then
		echo --spec-block "$1" --drafter model --draft-model "$DRAFT_MODEL"
	else
		echo --spec-block "$1" --drafter controlled --spec-accept "$2" --accept-seed 1
	fi
}
for s in "${specs[@]}"; do
	read -r b a <<<"$s"
	[ "$b" = 1 ] && continue
	# shellcheck disable=SC2046 # the drafter's flags hold no spaces
	"$L" record --model "$model" --prompt "$prompt" --tokens "$tokens" --temperature 0 --logits=false \
		$(drafter "$b" "$a") --quiet --out "$out/spec-$b-$a.parquet" >/dev/null
done

tsv=$out/points.tsv
: >"$tsv"
for r in $(seq "$repeats"); do
	round=$out/round-$r
	"$L" validate --model "$model" --device-file "$profile" --policies ondemand,les --caches 15%,40% --tokens "$tokens" \
		--repeats 1 --fit ondemand:40%,les:15% --quiet --out "$round" >"$round.txt"
	fitted=$round/fit/fitted.yaml plain=$round/trace/trace.parquet
	lanes=$(awk '/^  lanes:/ { getline; gsub(/"/, "", $2); print $2; exit }' "$fitted")
	for pol in ondemand les; do for cache in 15% 40%; do for s in "${specs[@]}"; do
		read -r b a <<<"$s"
		flags=()
		[ "$b" != 1 ] && read -ra flags <<<"$(drafter "$b" "$a")"
		v=$("$L" live --model "$model" --policy "$pol" --cache "$cache" --tokens "$tokens" --lanes "$lanes" --prompt "$prompt" \
			"${flags[@]}" --format json | jq -r '.result.tokens_per_sec')
		printf '%s\t%s\t%s\t%s\tmeasured\t%s\n' "$pol" "$cache" "$b" "$a" "$v" >>"$tsv"
	done; done; done
	sim=(--device-file "$fitted" --layout per-expert --cached-first=false --barrier --prefill --format json)
	for pol in ondemand les; do for cache in 15% 40%; do for s in "${specs[@]}"; do
		read -r b a <<<"$s"
		if [ "$b" = 1 ]; then
			v=$("$L" simulate --trace "$plain" --policy "$pol" --cache "$cache" "${sim[@]}" | jq -r '.result.tokens_per_sec')
			printf '%s\t%s\t%s\t%s\treplay\t%s\n%s\t%s\t%s\t%s\tmodel\t%s\n' "$pol" "$cache" 1 0 "$v" "$pol" "$cache" 1 0 "$v" >>"$tsv"
			continue
		fi
		d=(--drafter controlled)
		acc=$a
		if [ -n "${DRAFT_MODEL:-}" ]; then
			d=(--drafter model --drafter-bytes "$(awk '/^  draft_bytes:/ { getline; print $2; exit }' "$fitted")B")
			acc=$("$L" simulate --trace "$out/spec-$b-$a.parquet" --spec-block "$b" --spec-accept-from-trace "${d[@]}" "${sim[@]}" | jq -r '.spec.speculative.accept')
		fi
		v=$("$L" simulate --trace "$out/spec-$b-$a.parquet" --policy "$pol" --cache "$cache" --spec-from-trace "${d[@]}" "${sim[@]}" | jq -r '.result.tokens_per_sec')
		printf '%s\t%s\t%s\t%s\treplay\t%s\n' "$pol" "$cache" "$b" "$a" "$v" >>"$tsv"
		v=$("$L" simulate --trace "$plain" --policy "$pol" --cache "$cache" --spec-block "$b" --spec-accept "$acc" "${d[@]}" \
			--accept-seed 1 "${sim[@]}" | jq -r '.result.tokens_per_sec')
		printf '%s\t%s\t%s\t%s\tmodel\t%s\n' "$pol" "$cache" "$b" "$a" "$v" >>"$tsv"
	done; done; done
done
summarize "$tsv"
