#!/usr/bin/env bash
# Fuzzing the parsers with clang's libFuzzer (build-fuzz/, AddressSanitizer +
# UBSan; tests/fuzz/). Seed corpora are ../shared's files, read in place.
#   tools/fuzz.sh --list              the targets
#   tools/fuzz.sh TARGET [SECONDS]    build TARGET and fuzz it (default 60 s)
#   FUZZ_FORK=1 tools/fuzz.sh ...     go on past a crash (libFuzzer's fork mode)
#   FUZZ_RUNS=N tools/fuzz.sh ...     stop after N executions (or SECONDS, whichever first)
#   FUZZ_TIMEOUT=S tools/fuzz.sh ...  an input running past S seconds is a hang (default 10)
#   tools/fuzz.sh --minimize TARGET FILE   the smallest input that still crashes
# Crashes land in build-fuzz/crashes/TARGET/; the corpus grows in
# build-fuzz/corpus/TARGET/. Each finding becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=../shared
JOBS=${JOBS:-2}

declare -A WHAT=(
  [arch_template]="the .arch parser, checker and instantiation (text before a NUL: the config)"
  [safetensors_header]="a safetensors header and its checks: offsets, overlaps, dtype x shape = bytes"
  [gguf]="a GGUF file: header, metadata, tensor infos, each tensor as the kernels read it, the name map, the tokenizer"
  [torch_pickle]="a torch.save file (zip or legacy) through the restricted unpickler: opcodes, allow-list, strides"
  [config_json]="config.json read and normalised"
  [canonical_model]="a file read as a canonical model (archrun import's layout: metadata, quantized entries)"
  [tokenizer_json]="tokenizer.json loaded, a text encoded and decoded (text before a NUL)"
  [tokenizer_model]="a SentencePiece tokenizer.model loaded, a text encoded"
  [chat_template]="a chat template parsed and rendered on a small conversation"
  [image_decode]="PNG, JPEG, BMP and GIF decoding"
  [audio_decode]="a sound file read by libsndfile, mixed down and resampled"
  [serve_request]="the server's completion and chat request bodies"
)
ORDER=(arch_template safetensors_header gguf torch_pickle config_json canonical_model tokenizer_json tokenizer_model chat_template
       image_decode audio_decode serve_request)

if [ "${1:-}" = "--list" ] || [ -z "${1:-}" ]; then
  for t in "${ORDER[@]}"; do printf '  %-20s %s\n' "$t" "${WHAT[$t]}"; done
  [ -n "${1:-}" ] && exit 0
  echo "usage: tools/fuzz.sh TARGET [SECONDS] | --list | --minimize TARGET FILE" >&2
  exit 2
fi
MINIMIZE=
if [ "$1" = "--minimize" ]; then
  MINIMIZE=${3:?usage: tools/fuzz.sh --minimize TARGET CRASH_FILE}
  shift
fi
TARGET=$1
SECONDS_TO_RUN=${2:-60}
if [ -z "${WHAT[$TARGET]:-}" ]; then
  echo "tools/fuzz.sh: no target '$TARGET' (tools/fuzz.sh --list)" >&2
  exit 2
fi
if ! command -v clang++ > /dev/null; then
  echo "tools/fuzz.sh: clang++ is needed (libFuzzer): apt-get install clang" >&2
  exit 2
fi

# The instrumentation comes from ARCHETYPE_FUZZ (tests/fuzz/instrument.cmake);
# -O1 -g: fast enough, and stacks that name lines.
FLAGS="-O1 -g"
if ! grep -qx "CMAKE_CXX_FLAGS:STRING=$FLAGS" build-fuzz/CMakeCache.txt 2> /dev/null ||
   ! grep -qx "ARCHETYPE_FUZZ:BOOL=ON" build-fuzz/CMakeCache.txt; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_COMPILER=clang++ -DARCHETYPE_FUZZ=ON \
    -DCMAKE_CXX_FLAGS="$FLAGS" > /dev/null
else
  cmake -S . -B build-fuzz > /dev/null  # a target added since the last configure
fi
set +e
nice -n 10 cmake --build build-fuzz -j"$JOBS" --target "fuzz_$TARGET" | grep -Ev '^\[ *[0-9]+%\] (Building|Built|Linking)'
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "tools/fuzz.sh: fuzz_$TARGET did not build" >&2; exit 1; }
set -e
BIN=build-fuzz/fuzz/fuzz_$TARGET
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Where an allocation was made is not recorded: unwinding every malloc's
# stack cost a third of the parsers' time. A finding's full report comes
# from running the binary on it alone (FUZZ_ALLOC_STACKS=1 keeps them here).
[ -z "${FUZZ_ALLOC_STACKS:-}" ] && export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}

if [ -n "$MINIMIZE" ]; then
  OUT=$MINIMIZE.min
  "$BIN" "$MINIMIZE" -minimize_crash=1 -max_total_time="$SECONDS_TO_RUN" -exact_artifact_path="$OUT" \
    -rss_limit_mb=2048 -timeout=10 > "build-fuzz/$TARGET.minimize.log" 2>&1 || true
  echo "$TARGET: minimised to $OUT ($(stat -c %s "$OUT" 2> /dev/null || echo '?') bytes; log build-fuzz/$TARGET.minimize.log)"
  "$BIN" "$OUT" 2>&1 | grep -E "ERROR|SUMMARY|runtime error|#[0-9] " | head -12 || true
  exit 0
fi

# Seeds: files of ../shared (and the repository) the target reads, linked
# where they are; a few made here (a template with its config, images,
# sounds, canonical models), all under build-fuzz/seeds/TARGET.
SEED_DIR=build-fuzz/seeds/$TARGET
rm -rf "$SEED_DIR" && mkdir -p "$SEED_DIR"
link() { for f in "$@"; do [ -f "$f" ] && ln -sf "$(realpath "$f")" "$SEED_DIR/$(echo "${f#../}" | tr '/' '_')"; done; true; }
case "$TARGET" in
  arch_template)
    link families/*.arch
    # A template with a real config before a NUL: instantiation past its defaults.
    for a in families/*.arch; do
      n=$(basename "$a" .arch)
      c=$SHARED/golden/$n/config.json
      [ -f "$c" ] && { cat "$c"; printf '\0'; cat "$a"; } > "$SEED_DIR/with-config-$n"
    done ;;
  safetensors_header) link $(find "$SHARED/golden" -name '*.safetensors' -size -2097152c | head -40) ;;
  gguf)
    # Files of a few kilobytes (a real one is megabytes of tensor data the
    # fuzzer would only truncate): a vocabulary and a tensor of each type.
    command -v python3 > /dev/null && { python3 tests/fuzz/small_gguf.py "$SEED_DIR" || true; } ;;
  torch_pickle)
    # Small files Python's pickler writes with stand-ins for torch's names
    # (zip at protocols 2 and 4, legacy); a real one is 600 KB of storages.
    command -v python3 > /dev/null && { python3 tests/fuzz/small_torch_file.py "$SEED_DIR" || true; } ;;
  canonical_model)
    link $(find "$SHARED/golden" -name '*.safetensors' -size -262144c | head -20)
    if [ -x build/archrun ]; then  # archrun import's own files: metadata and quantized entries
      for q in q8 q4 bf16; do
        build/archrun import "$SHARED/golden/llama" -o "$SEED_DIR/llama-$q.safetensors" --dtype "$q" > /dev/null 2>&1 || true
      done
    fi ;;
  config_json) link $(find "$SHARED/golden" -name config.json | head -60) ;;
  tokenizer_json)
    # Each real tokenizer cut to a few kilobytes, every component kept: a
    # seed of megabytes would cost the fuzzer a tenth of a second a run.
    for f in $(find "$SHARED/tokenizers" -name tokenizer.json); do
      python3 tests/fuzz/small_tokenizer.py "$f" "$SEED_DIR/$(basename "$(dirname "$f")").json" 256 || true
    done ;;
  tokenizer_model)
    # Small models trained here (spm_train, Debian's sentencepiece), each
    # kind the loader takes: a real 500 KB model costs two runs a millisecond.
    if command -v spm_train > /dev/null; then
      for kind in unigram:120:false bpe:400:true; do
        IFS=: read -r type size fallback <<< "$kind"
        spm_train --input=README.md --model_prefix="$SEED_DIR/$type" --vocab_size="$size" --model_type="$type" \
          --byte_fallback="$fallback" --normalization_rule_name=identity > /dev/null 2>&1 || true
        rm -f "$SEED_DIR/$type.vocab"
      done
    else
      link $(find "$SHARED" -name tokenizer.model -size -4194304c)
    fi ;;
  chat_template)
    link $(find "$SHARED/tokenizers" -name '*.jinja')
    # The templates tokenizer_config.json files carry (a string, or a list
    # of named ones), each a seed of its own.
    if command -v python3 > /dev/null; then
      for c in $(find "$SHARED/tokenizers" -name tokenizer_config.json); do
        python3 - "$c" "$SEED_DIR/$(echo "${c#../}" | tr '/' '_')" << 'PY' || true
import json, sys
t = json.load(open(sys.argv[1])).get("chat_template")
items = t if isinstance(t, list) else [{"template": t}] if isinstance(t, str) else []
for i, item in enumerate(items):
    if isinstance(item, dict) and isinstance(item.get("template"), str):
        open(f"{sys.argv[2]}.{i}.jinja", "w").write(item["template"])
PY
      done
    fi ;;
  image_decode)
    # ImageMagick (apt-get install imagemagick), where there is one: each
    # kind stb_image takes. Its versioned name first: a "convert" earlier on
    # PATH may be something else.
    CONVERT=$(command -v convert-im6.q16 || command -v magick || command -v convert || true)
    if [ -n "$CONVERT" ]; then
      for spec in "png:gray" "png:rgb" "png:rgba" "png8:palette" "jpg:rgb" "jpg:progressive" "bmp:rgb" "bmp3:rgb" "gif:rgb"; do
        fmt=${spec%%:*} kind=${spec#*:}
        args=(-size 7x5 gradient:red-blue)
        case $kind in gray) args+=(-colorspace Gray) ;; rgba) args+=(-alpha set -channel A -evaluate set 50%) ;;
                      progressive) args+=(-interlace Plane) ;; esac
        "$CONVERT" "${args[@]}" "$fmt:$SEED_DIR/$fmt-$kind" 2> /dev/null || true
      done
    fi ;;
  audio_decode)
    w=$SHARED/golden/whisper_mel/speech1.wav
    link "$w"
    if command -v sox > /dev/null && [ -f "$w" ]; then  # short cuts in other containers and encodings
      for out in a.wav:-b8 b.wav:-eulaw c.flac: d.ogg: e.aiff: f.au: g.wav:-c2; do
        name=${out%%:*} opt=${out#*:}
        sox "$w" $opt "$SEED_DIR/$name" trim 0 0.05 2> /dev/null || true
      done
    fi ;;
  serve_request) ;;  # the dictionary and the body below
esac
[ "$TARGET" = serve_request ] &&
  printf '%s' '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":8,"temperature":0.5,"top_p":0.9,"seed":7,"stop":["a","b"],"stream":true,"n":1,"prompt":[[1,2,3]],"ignore_eos":false,"logprobs":null}' \
    > "$SEED_DIR/request.json"

CORPUS=build-fuzz/corpus/$TARGET
CRASHES=build-fuzz/crashes/$TARGET
mkdir -p "$CORPUS" "$CRASHES"
# Inputs past this are cut: a header's faults lie in its first bytes, and a
# megabyte input costs a hundred small ones.
case "$TARGET" in
  safetensors_header | image_decode | tokenizer_json | tokenizer_model) MAX_LEN=65536 ;;
  torch_pickle) MAX_LEN=16384 ;;  # the seeds are a kilobyte or so: a state dict's pickle and a few storages
  gguf) MAX_LEN=16384 ;;  # the seeds are 5 KB: metadata, a vocabulary, seven small tensors
  audio_decode) MAX_LEN=16384 ;;  # a twentieth of a second of 16 kHz sound, any container
  canonical_model) MAX_LEN=262144 ;;  # room for an imported tiny model, whole
  arch_template) MAX_LEN=24576 ;;  # the longest template with its config (vits.arch: 16 KB)
  *) MAX_LEN=1048576 ;;
esac
EXTRA=()
[ -f "tests/fuzz/$TARGET.dict" ] && EXTRA+=(-dict="tests/fuzz/$TARGET.dict")
# libFuzzer's entropic schedule weighs every coverage feature at every new
# one: with the template parser's 40,000 features that bookkeeping took 60%
# of each run (260 runs a second; 1,000 without it).
[ "$TARGET" = arch_template ] && EXTRA+=(-entropic=0)
# One fuzzer a corpus: libFuzzer's default rereads the whole corpus folder
# every second for what other processes added (a sixth of the template
# fuzzer's time over 3,000 inputs).
EXTRA+=(-reload=0)
[ -n "${FUZZ_FORK:-}" ] && EXTRA+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
[ -n "${FUZZ_RUNS:-}" ] && EXTRA+=(-runs="$FUZZ_RUNS")
echo "== fuzzing $TARGET for $SECONDS_TO_RUN s (${WHAT[$TARGET]}); seeds: $(ls "$SEED_DIR" | wc -l) files"
LOG=build-fuzz/$TARGET.log
BEFORE=$(ls "$CRASHES" | wc -l)
set +e
"$BIN" "$CORPUS" "$SEED_DIR" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-10}" -max_len="$MAX_LEN" \
  -print_final_stats=1 -artifact_prefix="$CRASHES/" "${EXTRA[@]}" > "$LOG" 2>&1
STATUS=$?
set -e

# The summary: libFuzzer's last status line (cov, ft, corp, exec/s) and its final stats.
LAST=$(grep -E "^#[0-9]+[[:space:]].*cov: " "$LOG" | tail -1 || true)
EXECS=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$LOG" | grep -oE "[0-9]+$" | tail -1 || true)
[ -z "$EXECS" ] && EXECS=$(echo "$LAST" | grep -oE "^#[0-9]+" | tr -d "#" || true)
field() { echo "$LAST" | grep -oE "$1: *[0-9]+" | grep -oE "[0-9]+$" | head -1 || true; }
FOUND=$(($(ls "$CRASHES" | wc -l) - BEFORE))
echo "$TARGET: execs ${EXECS:-?}, exec/s $(field exec/s), cov $(field cov), ft $(field ft), corpus $(field corp)," \
  "new crash/timeout/oom files: $FOUND in $CRASHES (exit $STATUS; log $LOG)"
grep -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|^Test unit written|ERROR: libFuzzer" "$LOG" | head -10 || true
[ "$FOUND" -eq 0 ]
