#!/usr/bin/env bash
# The layering rule, checked rather than drawn: every C++ file belongs to one
# part of the tree, and each of its `#include "..."` lines names a file of its
# own part or of a part below it (the table's parts and, transitively, theirs).
# An include that runs back up or sideways, one that names no part (an old
# path), a file that names no file, and a source file in a folder the table
# does not place are each reported as file:line and fail the check.
#   bash tools/check_layers.sh [ROOT]      ROOT: a checkout (default: this one)
set -euo pipefail
ROOT=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$ROOT"

# part: the parts directly below it. A file belongs to the longest part that
# prefixes its path. Bottom up, as docs/design.md draws them.
LAYERS='
engine/core:
dsl: engine/core
kernels/reference: engine/core
kernels/cpu: kernels/reference
kernels: kernels/cpu
importer/checkpoint: engine/core
importer/image: engine/core
importer/text: engine/core
importer/audio: engine/core
engine/runtime: dsl kernels importer/checkpoint importer/text importer/audio importer/image
engine/npu2: importer/checkpoint
engine/serve: engine/runtime
engine/distributed: engine/runtime
tools/toolkit: engine/runtime engine/npu2
tools: tools/toolkit engine/serve engine/distributed importer/image
tests: tools
'

# Every C++ source, outside build trees and hidden folders.
SOURCES=$(find . \( -name 'build*' -o -name '.?*' -o -name node_modules \) -prune -o \
  -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cc' \) -print | sed 's|^\./||' | LC_ALL=C sort)
[ -n "$SOURCES" ] || { echo "check_layers: no C++ sources under $ROOT" >&2; exit 2; }

{
  printf '%s\n' "$LAYERS" | sed -n 's/^\([^ :]*\):\(.*\)$/LAYER \1 \2/p'
  printf '%s\n' "$SOURCES" | sed 's/^/FILE /'
  printf '%s\n' "$SOURCES" | tr '\n' '\0' | xargs -0 grep -n -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
    sed -E 's/^([^:]*):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*$/INCLUDE \1 \2 \3/' || true
} | awk '
  function part_of(path,   i, best) {
    best = ""
    for (i = 1; i <= nparts; i++)
      if ((path == parts[i] || index(path, parts[i] "/") == 1) && length(parts[i]) > length(best)) best = parts[i]
    return best
  }
  # below[p, q] = 1 when q lies under p, through the table (transitively).
  function close_below(   changed, p, q, r, i, j, k) {
    do {
      changed = 0
      for (i = 1; i <= nparts; i++) for (j = 1; j <= nparts; j++) {
        p = parts[i]; q = parts[j]
        if (!((p, q) in below)) continue
        for (k = 1; k <= nparts; k++) {
          r = parts[k]
          if (((q, r) in below) && !((p, r) in below)) { below[p, r] = 1; changed = 1 }
        }
      }
    } while (changed)
  }
  $1 == "LAYER" { parts[++nparts] = $2; for (i = 3; i <= NF; i++) below[$2, $i] = 1; next }
  $1 == "FILE" {
    if (!closed) { close_below(); closed = 1 }
    exists[$2] = 1; nfiles++
    if (part_of($2) == "") { print $2 ": lies in no layer: place its folder in tools/check_layers.sh (and docs/design.md)"; bad++ }
    next
  }
  $1 == "INCLUDE" {
    file = $2; line = $3; target = $4; nincludes++
    from = part_of(file); to = part_of(target)
    if (from == "") next  # said once, above
    if (to == "") { print file ":" line ": includes \"" target "\", which names no part of the tree (includes are paths from the repository root)"; bad++; next }
    if (!(target in exists)) { print file ":" line ": includes \"" target "\", which is no file"; bad++; next }
    if (from == to || ((from, to) in below)) next
    how = ((to, from) in below) ? "runs back up from " from " to " to : "runs sideways from " from " to " to ", which is not below it"
    print file ":" line ": includes \"" target "\": " how; bad++
  }
  END {
    if (bad) { print bad " layering fault(s) in " nfiles " files; the layers are in tools/check_layers.sh and docs/design.md"; exit 1 }
    print "the layers hold: " nincludes " includes in " nfiles " files"
  }'
