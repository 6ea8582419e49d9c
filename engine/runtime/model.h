// A model ready to run: checkpoint → family (dispatch) → template → one IR
// graph per graph the template defines (`step`; `encode` and `decode`;
// `denoise`), with the config and flags → weights bound → a program for one
// backend per graph, over one shared set of weights.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/instantiate.h"
#include "importer/checkpoint/checkpoint.h"
#include "engine/runtime/interpreter.h"
#include "engine/runtime/load_progress.h"
#include "engine/runtime/session_mirror.h"

namespace arch {

// A rewrite of an instantiated graph (given its template's path).
using GraphRewrite = std::function<Result<Graph>(const Graph&, const std::string& template_path)>;

struct LoadOptions {
  std::string families;                 // families directory (default: families_dir())
  std::string template_path;            // run this template, skipping dispatch
  // Run this family (a name, or one of its templates' file names) whatever
  // the checkpoint's model_type and tensors say; the model then carries a
  // warning.
  std::string force_family;
  std::map<std::string, bool> flags;    // override flags
  std::string backend = "cpu";          // fast kernels where there are some; "reference": plain ones only
  bool plan = true;                     // the planner's rewrites (engine/runtime/planner.h) on a fast backend
  KernelOptions kernels;                // bf16 activations, F16 KV cache: this model's, not the process's
  LoadProgress progress;                // bytes of weights read so far, of all (engine/runtime/load_progress.h)
  // A rewrite of each instantiated graph before its weights are bound (the
  // NPU2 numerics' rounding, engine/npu2/numerics.h); null: as instantiated.
  GraphRewrite rewrite;
  // Called with the checkpoint once it is read, before any rewrite: what a
  // rewrite needs to know of how the weights are stored (a split's cuts
  // fall on whole quantized blocks).
  std::function<void(const Checkpoint&)> inspect;
  // False: instantiate the graphs only, binding no weights and making no
  // programs (what reads a model's IR and checkpoint alone: the NPU2 lowering).
  bool programs = true;
  // Checkpoint tensors no graph reads and no `unread` declaration explains
  // refuse the load (false: the model carries a warning naming them).
  bool strict = false;
};

// One of a template's graphs, instantiated, bound and ready to run.
struct ModelGraph {
  Graph graph;                          // as the template instantiates it
  Program program;                      // points into graph: a ModelGraph is never moved
  // The same program with `logits` for the last position only (generation
  // asks for nothing else), sharing its weights and KV-cache slots; absent
  // (no graph) when the template's logits are not reached row by row.
  Program last_logits;
  bool has_kv_cache = false;            // runs at a session's position, advancing it
  // Sequence lengths past which an op's outputs at earlier positions change
  // (LongRoPE's long factors): a session's caches are recomputed there.
  std::vector<int64_t> history_changes_past;
  // The graph cut where it first waits for another process (a pipeline's
  // first stage: graph_parts.h), each part a program of its own; null
  // where it does not wait.
  std::unique_ptr<ModelGraph> front, back;

  const std::string& name() const { return graph.name; }
};

struct Model {
  Checkpoint checkpoint;
  std::string family;
  std::string template_path;
  std::string reason;                   // why this family was chosen
  dsl::Template tmpl;
  dsl::Instance instance;               // config and flags (the graphs are in `graphs`)
  std::vector<std::string> unused_tensors;  // read by no graph
  // What says why some are unread: the template's `unread` declarations,
  // then the registry's for a wrapper's own tensors (an image tower).
  std::vector<dsl::UnreadDecl> unread_declared;
  // Of unused_tensors, those nothing explains (warned of; --strict refuses).
  std::vector<std::string> unexplained_tensors;
  // config.json's fields the template does not declare (the registry's
  // generic ones aside): where a checkpoint was matched by its tensors
  // alone, they are what tells another architecture.
  std::vector<std::string> unread_config;
  std::vector<std::string> warnings;    // for the tools to print (a forced family, unread tensors)
  std::vector<std::unique_ptr<ModelGraph>> graphs;  // in template order; the first is the default
  KernelOptions kernel_options;         // as loaded
  // A prompt through a token graph cut where it waits (ModelGraph::front,
  // back) runs in `prompt_chunks` chunks of at least `prompt_chunk` rows:
  // every chunk handed on before the first answer is waited for, so
  // pipeline stages overlap (more, smaller chunks overlap more; fewer rows
  // than some hundred multiply slower). 0: whole.
  int64_t prompt_chunk = 0;
  int prompt_chunks = 1;
  // Set on rank 0 of a model split over several processes: where its
  // sessions tell the others what they do (session_mirror.h).
  std::shared_ptr<SessionMirror> mirror;

  const ModelGraph& main() const { return *graphs.front(); }
  // The graph named `name` (empty: the first); an error names the ones there are.
  Result<const ModelGraph*> find_graph(const std::string& name) const;
  std::vector<std::string> graph_names() const;
  // The graph generation steps through: the first with a `tokens` input
  // (a decoder's step; an encoder-decoder's decode), or null.
  const ModelGraph* token_graph() const;
  // The graph with an output named `name` (null: none): what feeds a
  // state input of that name (an encoder's output, a decoder's state).
  const ModelGraph* producer_of(const std::string& name) const;
  // Whether generation must first run other graphs: the token graph holds
  // state inputs that an earlier graph makes (T5, Whisper).
  bool is_encoder_decoder() const;
  // The token graph's state inputs that another graph makes and that it
  // runs without too (`state image_features: ... = null`: a vision-language
  // model's image): encode() makes them when there is such an input.
  std::vector<std::string> optional_state() const;
  // The first graph's, as most commands need.
  const Graph& graph() const { return main().graph; }
  const Program& program() const { return main().program; }
  int64_t config_int(const std::string& name, int64_t fallback) const;
};

Result<std::shared_ptr<Model>> load_model(const std::string& dir, const LoadOptions& opt = {});

}  // namespace arch
