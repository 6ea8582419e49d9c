#!/usr/bin/env bash
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer, in
# build-asan/ (gcc; any report fails its test: UB does not recover, leaks
# are reported at exit).
#   tools/sanitize.sh                          build everything, run every test
#   tools/sanitize.sh -R 'Template|Safetensors' run a subset (ctest -R)
#   SANITIZE_TARGETS="test_dsl test_importer" tools/sanitize.sh -R ...
#                                              build only those test programs
set -euo pipefail
cd "$(dirname "$0")/.."

FLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
if [ -n "${SANITIZE_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build build-asan -j"${JOBS:-2}" --target $SANITIZE_TARGETS
else
  cmake --build build-asan -j"${JOBS:-2}"
fi
# Leaks are errors; oneDNN's and OpenMP's thread pools live past main.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir build-asan --output-on-failure -j"${JOBS:-2}" "$@"
