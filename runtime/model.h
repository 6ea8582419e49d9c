// A model ready to run: checkpoint → family (dispatch) → template → IR with
// the config and flags → weights bound → a program for one backend.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/instantiate.h"
#include "runtime/interpreter.h"
#include "runtime/load_progress.h"
#include "importer/checkpoint.h"

namespace arch {

struct LoadOptions {
  std::string families;                 // families directory (default: families_dir())
  std::string template_path;            // run this template, skipping dispatch
  std::map<std::string, bool> flags;    // override flags
  std::string backend = "cpu";          // fast kernels where there are some; "reference": plain ones only
  bool plan = true;                     // the planner's rewrites (runtime/planner.h) on a fast backend
  LoadProgress progress;                // bytes of weights read so far, of all (runtime/load_progress.h)
};

struct Model {
  Checkpoint checkpoint;
  std::string family;
  std::string template_path;
  std::string reason;                   // why this family was chosen
  dsl::Template tmpl;
  dsl::Instance instance;               // config, flags, graph
  std::vector<std::string> unused_tensors;
  Program program;                      // points into instance.graph: Model is not moved
  // The same program with `logits` for the last position only (generation
  // asks for nothing else), sharing its weights and KV-cache slots; absent
  // (no graph) when the template's logits are not reached row by row.
  Program last_logits;

  const Graph& graph() const { return instance.graph; }
  int64_t config_int(const std::string& name, int64_t fallback) const;
};

Result<std::shared_ptr<Model>> load_model(const std::string& dir, const LoadOptions& opt = {});

}  // namespace arch
