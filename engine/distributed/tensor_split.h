// Tensor parallelism, derived from the instantiated graph rather than
// written per family: one process's share of a graph split over `ranks`.
//
// Each matmul on a weight whose output is needed whole is a candidate to
// run rows-parallel: each process takes its range of the contraction (an
// o_proj's input features, a down_proj's intermediate columns) and an
// all_reduce sums the partial outputs. Its input's part is then asked of
// the ops before it, backwards, by each op's split rule (OpDef::split):
// through per-head and per-column ops (reshape, rope, kv_cache, attention,
// silu, mul, ...) back to the matmuls that make those columns, which then
// run columns-parallel on their weights' matching rows. A candidate whose
// input cannot be made in part that way (an op between mixes what the part
// cuts) stays whole; so does everything else. Outputs made by a weight's
// matmul (logits) are made in parts by vocabulary rows and gathered.
//
// Weights are bound in part (WeightRef::part): each process reads only its
// rows (a view of the mapped file) or columns (a copy of just those).
#pragma once

#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/op.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

struct TensorSplitReport {
  int all_reduces = 0;        // per run of the graph
  int all_gathers = 0;
  int weights_in_part = 0;    // weights each process holds a part of
  // Weights every process holds whole where a matmul reads them, each with
  // why its matmul could not be split ("router_logits ... softmax mixes ...").
  std::vector<std::string> whole;
};

// Process `rank`'s share of `g` split over `ranks` processes. An error
// where a large weight (an eighth of the largest or more) would be held
// whole by every process, naming the op that stopped its split.
// `granule`: the values a quantized block holds (32, 256; 1: unquantized):
// the contraction ranges a rows-parallel matmul cuts its weights' rows at
// fall on its multiples where they can.
Result<Graph> split_tensors(const Graph& g, const OpTable& ops, int rank, int ranks,
                            TensorSplitReport* report = nullptr, int64_t granule = 1);

// The values of the largest quantized block among a checkpoint's tensors
// (256 for the k-quants, 64 for Q4_0's paired rows, 32 for Q8_0; 1: none):
// split_tensors' granule.
int64_t block_granule(const Checkpoint& c);

// Even ranges of n over `ranks`: rank r's [r * n / ranks, (r + 1) * n / ranks),
// aligned to `step` where n divides into steps.
std::pair<int64_t, int64_t> even_range(int64_t n, int rank, int ranks, int64_t step = 1);

}  // namespace arch
