// A graph that hands work to other processes and then waits for what they
// send back (a pipeline's first stage: its layers, sends, then recvs and
// the head) cut in two where it first waits, so a prompt's chunks can all
// be handed on before the first answer is waited for (Session::step).
#pragma once

#include "engine/core/graph.h"
#include "engine/core/op.h"

namespace arch {

// The part before the first node whose op waits (OpDef::waits), and the
// part from there on; false (nothing set) where there is no such node
// after another, where the second part reads a value the first makes, or
// where it keeps state of its own.
bool cut_at_wait(const Graph& g, const OpTable& ops, Graph& front, Graph& back);

}  // namespace arch
