// What archrun bench's kinds of model share (tools/archrun/bench.cpp): the
// header lines, a graph's shapes for one call and its multiply-adds; and
// the benchmark of an encoder (bench_encoder.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/core/graph.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"

namespace arch::cli {

// The first lines of a model's benchmark: what ran where, and its load.
void print_header(const Model& m, double load_ms);

// The graph's value shapes for one call's inputs: each node's shape rule
// re-run where its output has a `_` (an image of any size), as the
// interpreter does at the call. A value-shaped op's output takes
// `value_rows` as its first dim; < 0: left unknown.
std::vector<Shape> shapes_for(const Graph& g, const NamedTensors& in, int64_t value_rows = -1);

// GFLOP of a graph's products (matmul, attention, convolutions) whose shapes
// are known (`bound`: run-time dims' sizes; `shapes`: shapes_for's); 0
// where one is not.
double graph_gflop(const Graph& g, const std::map<int, int64_t>& bound = {}, const std::vector<Shape>* shapes = nullptr);

// An encoder (text or vision, no token graph): one input of the size it
// takes (text: `tokens` random ids, at most its positions; an image: its
// config's image_size where the size is free), the median of `repeat`
// passes: inputs per second and the share of the GEMM rate measured beside.
int bench_encoder(const Model& m, double load_ms, int tokens, bool as_json, bool profile, int repeat);

}  // namespace arch::cli
