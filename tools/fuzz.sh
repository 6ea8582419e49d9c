#!/usr/bin/env bash
# Fuzzing the parsers with clang's libFuzzer (build-fuzz/, AddressSanitizer +
# UBSan). Seed corpora are ../shared's files, read in place.
#   tools/fuzz.sh --list              the targets
#   tools/fuzz.sh TARGET [SECONDS]    build TARGET and fuzz it (default 60 s)
# Crashes land in build-fuzz/crashes/TARGET/; the corpus grows in
# build-fuzz/corpus/TARGET/. Each finding becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=../shared

declare -A WHAT=(
  [arch_template]="the .arch parser, checker and instantiation (text before a NUL: the config)"
  [safetensors_header]="a safetensors header and its checks: offsets, overlaps, dtype x shape = bytes"
  [config_json]="config.json read and normalised"
  [canonical_model]="a file read as a canonical model (archrun import's layout)"
  [tokenizer_json]="tokenizer.json loaded, a text encoded and decoded (text before a NUL)"
  [tokenizer_model]="a SentencePiece tokenizer.model loaded, a text encoded"
  [chat_template]="a chat template parsed and rendered on a small conversation"
  [image_decode]="PNG, JPEG, BMP and GIF decoding"
  [audio_decode]="a sound file read by libsndfile, mixed down and resampled"
  [serve_request]="the server's completion and chat request bodies"
)
ORDER=(arch_template safetensors_header config_json canonical_model tokenizer_json tokenizer_model chat_template
       image_decode audio_decode serve_request)

# Seeds: files of ../shared (and the templates) the target reads.
seeds() {
  case "$1" in
    arch_template) echo families ;;
    safetensors_header | canonical_model) find "$SHARED/golden" -name '*.safetensors' -size -2097152c | head -40 ;;
    config_json) find "$SHARED/golden" -name config.json | head -60 ;;
    tokenizer_json) find "$SHARED/tokenizers" -name tokenizer.json -size -4194304c ;;
    tokenizer_model) find "$SHARED" -name tokenizer.model -size -4194304c ;;
    chat_template) find "$SHARED/tokenizers" -name '*.jinja' ; echo tests/text/chat_template ;;
    image_decode) find "$SHARED" \( -name '*.png' -o -name '*.jpg' -o -name '*.bmp' -o -name '*.gif' \) -size -1048576c | head -40 ;;
    audio_decode) find "$SHARED" \( -name '*.wav' -o -name '*.flac' -o -name '*.ogg' \) -size -4194304c | head -20 ;;
    serve_request) echo tests/serve ;;
  esac
}

if [ "${1:-}" = "--list" ] || [ -z "${1:-}" ]; then
  for t in "${ORDER[@]}"; do printf '  %-20s %s\n' "$t" "${WHAT[$t]}"; done
  [ -n "${1:-}" ] && exit 0
  echo "usage: tools/fuzz.sh TARGET [SECONDS]" >&2
  exit 2
fi
TARGET=$1
SECONDS_TO_RUN=${2:-60}
# Inputs past this are cut: a header's faults lie in its first bytes, and a
# megabyte input costs a hundred small ones.
case "$TARGET" in
  safetensors_header | canonical_model | audio_decode | image_decode) MAX_LEN=65536 ;;
  *) MAX_LEN=1048576 ;;
esac
if [ -z "${WHAT[$TARGET]:-}" ]; then
  echo "tools/fuzz.sh: no target '$TARGET' (tools/fuzz.sh --list)" >&2
  exit 2
fi

if ! command -v clang++ > /dev/null; then
  echo "tools/fuzz.sh: clang++ is needed (libFuzzer): apt-get install clang" >&2
  exit 2
fi
FLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_COMPILER=clang++ -DARCHETYPE_FUZZ=ON \
    -DCMAKE_CXX_FLAGS="$FLAGS" > /dev/null
fi
cmake --build build-fuzz -j"${JOBS:-2}" --target "fuzz_$TARGET"

CORPUS=build-fuzz/corpus/$TARGET
CRASHES=build-fuzz/crashes/$TARGET
mkdir -p "$CORPUS" "$CRASHES"
mapfile -t SEEDS < <(seeds "$TARGET" | while read -r f; do [ -e "$f" ] && echo "$f"; done)
SEED_DIR=build-fuzz/seeds/$TARGET
rm -rf "$SEED_DIR" && mkdir -p "$SEED_DIR"
for s in "${SEEDS[@]}"; do
  if [ -d "$s" ]; then find "$s" -type f -size -1048576c -exec ln -sf "$PWD/{}" "$SEED_DIR/" \; 2>/dev/null || true
  else ln -sf "$(realpath "$s")" "$SEED_DIR/$(echo "${s#../}" | tr '/' '_')"; fi
done
echo "== fuzzing $TARGET for $SECONDS_TO_RUN s (${WHAT[$TARGET]}); seeds: $(ls "$SEED_DIR" | wc -l) files"
LOG=build-fuzz/$TARGET.log
set +e
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "build-fuzz/fuzz/fuzz_$TARGET" "$CORPUS" "$SEED_DIR" \
  -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -timeout=10 -max_len="$MAX_LEN" -print_final_stats=1 \
  -artifact_prefix="$CRASHES/" > "$LOG" 2>&1
STATUS=$?
set -e
grep -E "^#[0-9]+.*(DONE|cov:)" "$LOG" | tail -1
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$LOG" || true
FOUND=$(ls "$CRASHES" | wc -l)
echo "$TARGET: exit $STATUS, $FOUND crash/timeout/oom files in $CRASHES (log: $LOG)"
[ "$STATUS" -eq 0 ] && [ "$FOUND" -eq 0 ]
