// The graph as Graphviz: one cluster per layer (values named layers.N...),
// weights shown by their checkpoint names, edges along data flow.
#pragma once

#include <string>

#include "engine/core/graph.h"

namespace arch {

std::string graph_to_dot(const Graph& g);

}  // namespace arch
