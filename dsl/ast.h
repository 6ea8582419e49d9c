// The syntax tree of one .arch file. Every node keeps where it was written
// so later checks can point at the template text.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace arch::dsl {

struct Loc {
  int line = 0;
  int col = 0;
  int file = 0;  // index into Template::files (imports bring more files)
};

struct SourceFile {
  std::string path;                          // as given, for diagnostics
  std::shared_ptr<const std::string> text;   // the parse tree pointed into it
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

// One segment of a weight path: a name, a literal index, or `{expression}`
// (in a weights declaration, `{i}` binds the pattern variable i).
struct PathSeg {
  enum Kind { Name, Index, Interp, Any } kind = Name;  // Any: `*` in a weight pattern
  std::string name;   // Name; or the variable of a pattern `{i}`
  long long index = 0;
  ExprPtr expr;       // Interp in a body path
};

struct Expr {
  enum Kind { Number, String, Bool, Null, List, Path, Call, Binary, Unary, Transpose, Index, Cond };
  Kind kind = Null;
  Loc loc;
  double number = 0;
  bool is_int = false;
  bool boolean = false;
  std::string text;                 // String value; Binary/Unary operator; Call callee
  std::vector<PathSeg> path;        // Path
  std::vector<ExprPtr> args;        // operands / call positional args / list items
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call keyword args
  std::vector<Loc> kwarg_locs;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  enum Kind { Assign, Output, If, For, Return, Call };
  Kind kind = Assign;
  Loc loc;
  std::string name;       // Assign target (the first), Output name, For variable
  std::vector<std::string> names;  // Assign: every target (a, b = ...)
  std::string scope;      // For: the name prefix of values made inside ("layers")
  ExprPtr index;          // Output name[index]
  ExprPtr suffix;         // Output name{suffix}: the value joins the name
  ExprPtr value;          // Assign/Output/Return value; If condition; For start; Call
  ExprPtr end;            // For end (exclusive)
  Body body;              // If then-branch; For body
  Body else_body;         // If else-branch
};

struct TypeRef {
  std::string elem;  // int float bool str json
  bool list = false;
  std::string str() const { return list ? "[" + elem + "]" : elem; }
};

struct ConfigField {
  std::string name;
  TypeRef type;
  ExprPtr default_value;  // null: required
  Loc loc;
};

struct FlagDecl {
  std::string name;
  ExprPtr value;
  Loc loc;
};

struct WeightDecl {
  std::vector<PathSeg> pattern;  // Name / Index / Interp(name = pattern variable)
  std::vector<ExprPtr> shape;    // WeightDecl only
  bool shape_from_checkpoint = false;  // `[*]`: the checkpoint's shape
  ExprPtr condition;             // declared only when true
  bool optional = false;         // may be absent from the checkpoint
  bool alias = false;            // alias PATTERN = TARGET
  std::vector<PathSeg> target;   // alias target
  Loc loc;
};

struct BlockDef {
  std::string name;
  std::vector<std::string> params;
  Body body;
  Loc loc;
};

struct GraphInput {
  std::string name;
  bool held = false;  // `state NAME: ...`: the session holds it once given
  std::string dtype;
  std::vector<ExprPtr> shape;
  ExprPtr default_value;  // `= expr`: what a call that leaves it out gets (null: required)
  Loc loc;
};

struct GraphDef {
  std::string name;
  std::vector<GraphInput> inputs;
  Body body;
  Loc loc;
};

// `unread posterior_encoder: "..."`: checkpoint tensors under the pattern
// (its segments a prefix of the name; `*` and `{i}` any one) that no graph
// reads, and the reason, for `archrun info` to say instead of listing them.
struct UnreadDecl {
  std::vector<PathSeg> pattern;
  std::string reason;
  Loc loc;
};
bool unread_matches(const UnreadDecl& u, const std::string& tensor);

struct Template;

// `import "clip_vision.arch" as vision(config: vision_config, weights:
// vision_tower.vision_model)`: a template kept whole under a name of its
// own, beside the importing one, not merged into it. Its config is the
// config's `vision_config` object, its weights the checkpoint's names
// under the prefix; the importing file reads its fields
// (`vision.hidden_size`), calls its blocks (`vision.embed_image(x)`),
// passes its weights (`vision.encoder.layers.{i}`) and may redefine its
// blocks (`block vision.embed_image(p) { ... }`, run in the importing
// file's names).
struct Namespace {
  std::string name;
  std::string file;                     // as the import wrote it
  std::string config_field;
  std::vector<std::string> weight_prefix;
  std::shared_ptr<Template> t;          // null until the import is resolved
  Loc loc;
};

struct Template {
  std::string path;                     // the template's own file, as given
  std::shared_ptr<const std::string> source;
  std::vector<SourceFile> files;        // [0] is this file; then what it imports
  std::string family;
  Loc family_loc;
  std::vector<std::pair<std::string, Loc>> imports;
  std::vector<Namespace> spaces;        // imports under a name of their own
  std::vector<ConfigField> config;
  std::vector<FlagDecl> flags;
  std::vector<WeightDecl> weights;
  std::vector<UnreadDecl> unread;
  std::vector<BlockDef> blocks;
  std::vector<GraphDef> graphs;
};

// The namespace `name` of `t`, if it has one.
const Namespace* find_space(const Template& t, const std::string& name);
// t's `unread` declarations and those of the templates it imports under
// names of their own, theirs under their weight prefixes.
std::vector<UnreadDecl> all_unread(const Template& t);
std::string path_str(const std::vector<PathSeg>& p);  // model.layers.{i}.mlp
// The names a graph input's shape writes bare (`seq`, `src`, a config
// field): those the config does not define are the graph's run-time dims.
std::vector<std::string> bare_dim_names(const GraphInput& in);
std::string file_of(const Template& t, Loc loc);      // the path a location is in

}  // namespace arch::dsl
