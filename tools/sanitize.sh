#!/usr/bin/env bash
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer, in
# build-asan/ (gcc; any report fails its test: UB does not recover, leaks
# are reported at exit).
#   tools/sanitize.sh                          build everything, run every test
#   tools/sanitize.sh -R 'Template|Safetensors' run a subset (ctest's -R; test
#                                              names are Suite.Test: ctest -N)
#   SANITIZE_TARGETS="test_dsl test_checkpoint" tools/sanitize.sh ...
#                                              build only those test programs;
#                                              the others' tests are skipped
#                                              (their _NOT_BUILT placeholders
#                                              excluded unless -E is given)
# JOBS=N sets the parallelism (2 by default); builds run under nice.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

FLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
START=$SECONDS
if [ -n "${SANITIZE_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  nice -n 10 cmake --build build-asan -j"$JOBS" --target $SANITIZE_TARGETS
else
  nice -n 10 cmake --build build-asan -j"$JOBS"
fi
echo "== tools/sanitize.sh: built in $((SECONDS - START)) s"
# The openai client the server's node test drives (tools/setup.sh installs
# it into build/): a copy beside this build's test, or it skips.
if [ -d build/serve-client/node_modules ] && [ -d build-asan/serve-client ] && [ ! -d build-asan/serve-client/node_modules ]; then
  cp -r build/serve-client/node_modules build-asan/serve-client/
fi
# Leaks are errors; oneDNN's and OpenMP's thread pools live past main.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ARGS=("$@")
if [ -n "${SANITIZE_TARGETS:-}" ] && [[ " $* " != *" -E "* ]]; then
  # What runs a program that was not built: its placeholder, the capped
  # re-runs of test_kernels and test_golden, the node client and the
  # two-host MPI run (archrun).
  SKIP="_NOT_BUILT$"
  for s in kernels golden; do [[ " $SANITIZE_TARGETS " == *" test_$s "* ]] || SKIP+="|^${s}_on_"; done
  [[ " $SANITIZE_TARGETS " == *" archrun "* ]] || SKIP+="|^serve_openai_client$|^distributed_two_hosts$"
  ARGS+=(-E "$SKIP")
fi
ctest --test-dir build-asan --output-on-failure -j"$JOBS" "${ARGS[@]}"
