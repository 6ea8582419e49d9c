// The instantiator's state and steps, shared by the files that implement
// them (not part of the dsl's interface: see instantiate.h):
//   instantiate_config.cpp      config fields and flags
//   instantiate_expr.cpp        expressions, builtins, block calls
//   instantiate_weights.cpp     weight paths matched to declarations, bound
//   instantiate_ops.cpp         op calls: arguments, attributes, shape rules
//   instantiate.cpp             statements, the graph, the entry point
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dsl/diagnostic.h"
#include "dsl/instantiate.h"

namespace arch::dsl::detail {

// The names in scope: a graph's or a block's own, over the ones it sees
// (the graph's inputs, the config and the flags).
struct Env {
  std::map<std::string, Val> vars;
  const Env* globals = nullptr;

  const Val* find(const std::string& n) const {
    auto it = vars.find(n);
    if (it != vars.end()) return &it->second;
    return globals ? globals->find(n) : nullptr;
  }
};

// "layers.3" + "mlp" -> "layers.3.mlp" (either may be empty).
inline std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : name.empty() ? prefix : prefix + "." + name;
}

// The template being instantiated, or one it imports under a name of its
// own (ast.h's Namespace): its template, config, flags and weight prefix.
// Names resolve in the space whose text is being run.
struct Space {
  const Template* t = nullptr;
  std::string name;                 // "" for the instantiated template itself
  int parent = -1;                  // the space that imported it
  std::string weight_prefix;        // its weights' names in the checkpoint start with it
  nlohmann::json config;            // its config.json (a sub-object for an import)
  std::map<std::string, bool> flag_overrides;
  Env globals;                      // its config fields and flags
  Env inputs;                       // the graph's inputs (and seq) over its globals: what its blocks see
  std::set<std::string> resolving;  // config fields being resolved (cycle check)
  bool config_done = false;
};

class Instantiator {
 public:
  Instantiator(const Template& t, const InstantiateOptions& opt, const OpTable& ops)
      : root_(t), opt_(opt), ops_(ops) {}

  Result<Instance> run();

 private:
  using R = Result<Val>;

  // Every template read shares the root's list of files (dsl/parse.cpp).
  Error fail(Loc loc, const std::string& msg) const { return diag(root_, loc, msg); }
  SourceLoc sloc(Loc loc) const { return {file_of(root_, loc), loc.line, loc.col}; }
  const Template& tpl() const { return *cur_->t; }
  Status make_spaces(int parent);
  Status resolve_space(Space& s);
  // The namespace `name` that the current space imported (null: none).
  Space* space_named(const std::string& name) const;
  int index_of(const Space* s) const;
  // exists(): the checkpoint asked by the name a path in space `s` stands for.
  bool tensor_exists(const Space& s, const std::string& path) const;
  // A block `name` as space `s` calls it: a redefinition by the template
  // that imported s (`block vision.embed_image`) first, then s's own; the
  // space it runs in is set in `runs_in`.
  const BlockDef* find_block(Space* s, const std::string& name, Space** runs_in) const;

  Status resolve_config();
  Status resolve_field(const ConfigField& f);
  Status resolve_flags();
  Status run_graph(const GraphDef& gd);
  Status exec(const Body& body, Env& env, Val* returned);
  Status exec_stmt(const Stmt& s, Env& env, Val* returned, bool& did_return);

  R eval(const Expr& e, Env& env);
  R eval_path(const Expr& e, Env& env);
  R eval_in_space(const Expr& e, Env& env, Space& ns);
  R extend_path(const Expr& e, Env& env, Val out, size_t from);
  R json_member(const Expr& e, Val out, size_t from);
  R eval_binary(const Expr& e, const Val& a, const Val& b);
  R eval_call(const Expr& e, Env& env);
  R call_builtin(const Expr& e, std::vector<Val>& args);
  R call_block(const Expr& e, const BlockDef& b, std::vector<Val>& args, Space* space);
  R call_op(const std::string& op, Loc loc, std::vector<Val> args,
            const std::vector<std::pair<std::string, Val>>& kwargs,
            const std::vector<Loc>& kwarg_locs);
  // `reader` says what reads a weight (`rms_norm's weight`), for the
  // weight's read_at; empty: `what`.
  Result<int> as_input(const Val& v, Loc loc, const std::string& what, bool optional,
                       const std::string& reader = "");
  // "READER in norm (llama.arch:76:10) <- norm_of (llama.arch:82:10) <-
  // step (llama.arch:170:9)": `loc` in the innermost block being called,
  // then each caller at the place it called it.
  std::string read_chain(const std::string& reader, Loc loc);
  // An op's shape rule refused `inputs`, one of them a checkpoint weight
  // whose shape is known: the error names that tensor and its shape first.
  std::optional<Error> weight_shape_error(const std::string& op, Loc loc, const std::vector<int>& inputs,
                                          const std::string& refusal);
  Result<int> bind_weight(const std::vector<std::string>& path, Loc loc);
  Result<bool> weight_declared(const std::vector<std::string>& path, Loc loc,
                               const WeightDecl** decl, std::map<std::string, long long>& vars,
                               bool strict = true);
  Result<std::optional<std::vector<std::string>>> alias_target(const std::vector<std::string>& path);
  Result<bool> condition_holds(const WeightDecl& w, const std::map<std::string, long long>& vars);
  void finish_statement(size_t first_value, int result, const std::string& target);
  std::string unique_name(const std::string& base);

  const Template& root_;
  const InstantiateOptions& opt_;
  const OpTable& ops_;

  std::vector<std::unique_ptr<Space>> spaces_;  // [0]: the root
  Space* cur_ = nullptr;                        // the space whose text runs
  Instance out_;
  Graph& g() { return out_.graph; }
  std::vector<std::string> provisional_;  // op name of each value until it is named
  std::unordered_set<std::string> used_names_;
  std::unordered_map<std::string, int> next_suffix_;  // base -> the next base#k to try
  std::set<std::pair<std::string, int>> outputs_set_;  // (name, index) of the outputs so far
  std::map<std::string, int> weight_ids_;  // tensor name → value id
  std::string prefix_;  // names of new values start with it (layers.3.mlp)
  std::string scope_;   // the loop scopes alone (layers.3)
  int block_depth_ = 0;
  std::vector<std::pair<const BlockDef*, Loc>> calls_;  // the blocks being called, outermost first, each with its call
  long long loop_iterations_ = 0;  // of every loop so far: nested loops are bounded together
};

// "model.layers.3" from its segments.
std::string joined(const std::vector<std::string>& p);

}  // namespace arch::dsl::detail
