#!/usr/bin/env bash
# tools/check_layers.sh against this checkout's sources copied to a scratch
# folder: the copy as it is passes; each planted fault (an include running
# back up, one running sideways, an old root-less path, a folder no layer
# places) fails it, naming the file and line.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CHECK="$SRC/tools/check_layers.sh"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
passed=0 failed=0

fresh_copy() {
  rm -rf "$SCRATCH/tree" && mkdir "$SCRATCH/tree"
  (cd "$SRC" && find engine dsl kernels importer tools tests -type f \( -name '*.h' -o -name '*.cpp' \) -print0 |
     xargs -0 cp --parents -t "$SCRATCH/tree")
}

# expect NAME CODE PATTERN: the check on the scratch tree exits CODE and says PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3 out rc
  out=$(bash "$CHECK" "$SCRATCH/tree" 2>&1); rc=$?
  if [ "$rc" -eq "$code" ] && grep -q -E -- "$pattern" <<< "$out"; then
    passed=$((passed + 1)); echo "ok: $name"
  else
    failed=$((failed + 1)); echo "FAILED: $name (exit $rc, wanted $code and /$pattern/):"; echo "$out" | head -5
  fi
}

plant() {  # plant FILE LINE-TEXT: appended after the file's first line
  sed -i "1a $2" "$SCRATCH/tree/$1"
}

fresh_copy
expect "the tree as it is" 0 "the layers hold"

fresh_copy; plant engine/core/tensor.h '#include "engine/runtime/model.h"'
expect "the core including the runtime" 1 '^engine/core/tensor.h:2: includes "engine/runtime/model.h": runs back up from engine/core to engine/runtime'

fresh_copy; plant importer/text/tokenizer/tokenizer.h '#include "importer/checkpoint/checkpoint.h"'
expect "text including checkpoints, beside it" 1 '^importer/text/tokenizer/tokenizer.h:2: .*runs sideways from importer/text to importer/checkpoint'

fresh_copy; plant kernels/reference/attention.cpp '#include "kernels/cpu/cpu_kernels.h"'
expect "a reference kernel including the fast ones" 1 '^kernels/reference/attention.cpp:2: .*runs back up from kernels/reference to kernels/cpu'

fresh_copy; plant engine/runtime/session.h '#include "tools/toolkit/compare.h"'
expect "the runtime including the toolkit" 1 'runs back up from engine/runtime to tools/toolkit'

fresh_copy; plant engine/npu2/lower.h '#include "engine/runtime/model.h"'
expect "the NPU2 backend including the runtime beside it" 1 'runs sideways from engine/npu2 to engine/runtime'

fresh_copy; plant dsl/parse.h '#include "core/error.h"'
expect "a path from before the move" 1 '^dsl/parse.h:2: includes "core/error.h", which names no part'

fresh_copy; plant dsl/parse.h '#include "engine/core/no_such_file.h"'
expect "an include of no file" 1 'no_such_file.h", which is no file'

fresh_copy; mkdir -p "$SCRATCH/tree/engine/elsewhere"; echo '#include "engine/core/error.h"' > "$SCRATCH/tree/engine/elsewhere/x.cpp"
# engine/elsewhere lies under no part but engine/ itself, which is no part either.
expect "a folder no layer places" 1 '^engine/elsewhere/x.cpp: lies in no layer'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
