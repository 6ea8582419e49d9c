#!/usr/bin/env bash
# archrun bench and llama.cpp's llama-bench on the same weights, one after
# the other per weight type, so both see the same machine (docs/performance.md).
#
#   tools/bench/side_by_side.sh LLAMA_BENCH ARCHRUN NAME=MODEL.gguf:MODEL ...
#
# Decode is timed from an empty context on both sides (llama-bench's tg).
# Each NAME pairs a GGUF file (tools/bench/to_gguf.py, then llama-quantize
# --pure) with the same weights for archrun (a checkpoint directory or an
# `archrun import` file). Prints one line per pair: prompt and decode tok/s,
# and the read bandwidth beside each side's decode runs (the machine's
# varies by up to 2x within minutes): archrun's probes around its runs,
# and one taken by archrun just before llama-bench's.
# ARCHRUN_ARGS adds options to archrun's side (e.g. --bf16-activations).
# A pair named bf16... also gets a line for archrun's prompt with
# --bf16-activations (llama.cpp's arithmetic: activations rounded to bf16)
# beside the f32-grade default; decode is the same either way.
set -euo pipefail
llama_bench=$1 archrun=$2
shift 2
prompt=${PROMPT:-512} decode=${DECODE:-64} threads=${THREADS:-2} repeat=${REPEAT:-3}
read -r -a extra <<<"${ARCHRUN_ARGS:-}"
printf '%-10s %14s %14s %14s %14s %14s %14s\n' type llama.cpp_pp archrun_pp llama.cpp_tg archrun_tg llama_GB/s archrun_GB/s
for pair in "$@"; do
  name=${pair%%=*} rest=${pair#*=}
  gguf=${rest%%:*} ours=${rest#*:}
  llama_ts() {  # tok/s of llama-bench's one test (pp or tg)
    "$llama_bench" -m "$gguf" -t "$threads" -p "$1" -n "$2" -r "$repeat" -o json 2>/dev/null |
      python3 -c 'import json,sys; print(round(json.load(sys.stdin)[0]["avg_ts"],1))'
  }
  # llama-bench times decoding from an empty context (tg), apart from the
  # prompt (pp): so archrun's decode figure here follows a 1-token prompt.
  ours_json() {
    "$archrun" bench "$ours" -p "$1" -n "$2" --threads "$threads" --repeat "$repeat" "${extra[@]}" --json 2>/dev/null |
      tail -1
  }
  lpp=$(llama_ts "$prompt" 0)
  app=$(ours_json "$prompt" 1 | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["prompt_tok_s"],1))')
  # The read bandwidth just before llama-bench's decode (archrun's probe,
  # beside a 2-token run), then the decodes; archrun's JSON has its own.
  lbw=$(ours_json 1 2 | python3 -c 'import json,sys; print(round(json.load(sys.stdin).get("read_bandwidth_gb_s",0),1))')
  ltg=$(llama_ts 0 "$decode")
  read -r atg abw < <(ours_json 1 "$decode" | python3 -c 'import json,sys; j=json.load(sys.stdin)
print(round(j["decode_tok_s"],1), round(j.get("read_bandwidth_gb_s",0),1))')
  printf '%-10s %14s %14s %14s %14s %14s %14s\n' "$name" "$lpp" "$app" "$ltg" "$atg" "$lbw" "$abw"
  if [[ $name == bf16* && " ${extra[*]} " != *" --bf16-activations "* ]]; then
    extra+=(--bf16-activations)
    app=$(ours_json "$prompt" 1 | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["prompt_tok_s"],1))')
    unset 'extra[${#extra[@]}-1]'
    printf '%-10s %14s %14s %14s %14s %14s %14s\n' "$name/act" "$lpp" "$app" - - - -
  fi
done
