#!/usr/bin/env bash
# archrun bench and whisper.cpp's whisper-bench on the same weights,
# alternated run by run so both see the same machine (docs/performance.md,
# "beside the peers"). whisper.cpp is built outside the repository.
#
#   tools/bench/whisper_side_by_side.sh WHISPER_BENCH ARCHRUN NAME=MODEL.bin:OURS ...
#
# Each NAME pairs a whisper.cpp model file (tools/bench/to_whisper_ggml.py,
# then whisper.cpp's quantize) with the same weights for archrun (the
# checkpoint, or archrun import --dtype bf16|q8|q4). Per pair: the encoder's
# time for one 30 s window, and decoding in tokens a second over 256 steps
# (whisper-bench decodes one token at each of the positions 0..255; archrun
# bench draws 256 tokens after a one-token prompt), each side's best of
# REPEAT runs, and archrun's ratio (above 1: archrun is ahead).
set -euo pipefail
whisper_bench=$1 archrun=$2
shift 2
threads=${THREADS:-2} repeat=${REPEAT:-3}
printf '%-8s %16s %16s %8s %16s %16s %8s\n' type whisper.cpp_enc_ms archrun_enc_ms ratio whisper.cpp_tok_s archrun_tok_s ratio
for pair in "$@"; do
  name=${pair%%=*} rest=${pair#*=}
  ggml=${rest%%:*} ours=${rest#*:}
  best() { python3 -c 'import sys; v=[float(x) for x in sys.argv[2:]]; print(round(min(v) if sys.argv[1]=="min" else max(v), 1))' "$@"; }
  wenc=() wtok=() aenc=() atok=()
  for ((r = 0; r < repeat; r++)); do
    out=$("$whisper_bench" -m "$ggml" -t "$threads" -w 0 2>&1)
    wenc+=("$(sed -n 's/.*encode time = *\([0-9.]*\) ms.*/\1/p' <<<"$out")")
    wtok+=("$(sed -n 's/.*decode time = .*( *\([0-9.]*\) ms per run).*/\1/p' <<<"$out" | python3 -c 'import sys; print(1000/float(sys.stdin.read()))')")
    read -r e t < <("$archrun" bench "$ours" -n 256 --threads "$threads" --json 2>/dev/null | tail -1 |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["encode_ms"], j["decode_tok_s"])')
    aenc+=("$e") atok+=("$t")
  done
  we=$(best min "${wenc[@]}") ae=$(best min "${aenc[@]}") wt=$(best max "${wtok[@]}") at=$(best max "${atok[@]}")
  printf '%-8s %16s %16s %8s %16s %16s %8s\n' "$name" "$we" "$ae" "$(python3 -c "print(round($we/$ae,2))")" \
    "$wt" "$at" "$(python3 -c "print(round($at/$wt,2))")"
done
