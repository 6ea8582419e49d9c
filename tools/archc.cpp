// archc: the template compiler's command line.
//   archc --check FILES...            lint templates (exit 1 on any error)
//   archc dump TEMPLATE --config config.json [--model DIR]
//                                     the instantiated IR as stable text
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cmath>
#include <sstream>
#include <map>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "tools/toolkit/checkpoint_check.h"
#include "engine/core/graph.h"
#include "engine/runtime/model.h"
#include "importer/checkpoint/safetensors.h"
#include "tools/toolkit/compare.h"
#include "tools/toolkit/diff.h"
#include "tools/toolkit/graph_dot.h"
#include "engine/npu2/estimate.h"
#include "engine/runtime/dispatch.h"
#include "tools/toolkit/npu2_lowering.h"
#include "tools/toolkit/tool_environment.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/config.h"
#include "kernels/kernels.h"

using namespace arch;

namespace {

// Instantiation options from --config / --model (shared by check and dump).
struct ConfigSource {
  std::string config, model;
  std::vector<std::string> flags;
  std::string graph;  // which of the template's graphs (empty: the first)
};

Result<dsl::InstantiateOptions> instantiate_options(const ConfigSource& c, std::shared_ptr<Checkpoint>& ckpt,
                                                    std::vector<dsl::UnreadDecl>& wrapper_unread) {
  dsl::InstantiateOptions opt;
  if (!c.model.empty()) {
    ARCH_TRY(Checkpoint loaded, load_checkpoint(c.model));
    ARCH_TRY(wrapper_unread, apply_family_view(loaded));  // nested text model, family tensor prefixes
    ckpt = std::make_shared<Checkpoint>(std::move(loaded));
    opt.config = ckpt->config;
    opt.tensor_exists = [ckpt](const std::string& n) { return ckpt->has(n); };
    opt.tensor_shape = [ckpt](const std::string& n) { return ckpt->shape_of(n); };
  }
  if (!c.config.empty()) {
    ARCH_TRY(opt.config, read_config(c.config));
  }
  ARCH_TRY(opt.flag_overrides, dsl::parse_flag_overrides(c.flags));
  opt.graph = c.graph;
  return opt;
}

int check_files(const std::vector<std::string>& files, bool quiet, const ConfigSource& cs) {
  int problems = 0;
  std::shared_ptr<Checkpoint> ckpt;
  std::vector<dsl::UnreadDecl> wrapper_unread;  // the registry's notes on a wrapper's own tensors
  std::optional<dsl::InstantiateOptions> opt;
  if (!cs.config.empty() || !cs.model.empty()) {
    auto o = instantiate_options(cs, ckpt, wrapper_unread);
    if (!o.ok()) return std::fprintf(stderr, "archc: error: %s\n", o.error().message.c_str()), 1;
    opt = *o;
  }
  for (const auto& f : files) {
    auto t = dsl::parse_template_file(f);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.error().message.c_str());
      ++problems;
      continue;
    }
    auto errors = dsl::check_template(*t, op_table());
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.message.c_str());
    problems += int(errors.size());
    // With a config, shapes are known: instantiate to check them too.
    if (errors.empty() && opt) {
      // Every graph of the template, instantiated.
      std::vector<Graph> graphs;
      bool all_made = true;
      for (const auto& gd : t->graphs) {
        dsl::InstantiateOptions one = *opt;
        one.graph = gd.name;
        auto inst = dsl::instantiate(*t, one, op_table());
        if (!inst.ok()) {
          std::fprintf(stderr, "%s\n", inst.error().message.c_str());
          ++problems;
          all_made = false;
        } else {
          graphs.push_back(std::move(inst->graph));
        }
      }
      if (ckpt && all_made) {
        // With a checkpoint: every weight, shape, unread tensor and norm
        // convention, over all the graphs together.
        std::vector<const Graph*> all;
        for (const auto& g : graphs) all.push_back(&g);
        std::vector<dsl::UnreadDecl> unread = dsl::all_unread(*t);
        unread.insert(unread.end(), wrapper_unread.begin(), wrapper_unread.end());
        auto found = check_against_checkpoint(all, *ckpt, unread);
        for (const auto& e : found.errors) std::fprintf(stderr, "%s\n", e.c_str());
        for (const auto& w : found.warnings) std::fprintf(stderr, "%s\n", w.c_str());
        for (const auto& n : found.notes) std::fprintf(stderr, "%s\n", n.c_str());
        problems += int(found.errors.size());
      }
    }
  }
  if (problems) {
    std::fprintf(stderr, "%d problem%s in %zu template%s\n", problems, problems == 1 ? "" : "s",
                 files.size(), files.size() == 1 ? "" : "s");
    return 1;
  }
  if (!quiet) std::printf("%zu template%s checked: no problems\n", files.size(), files.size() == 1 ? "" : "s");
  return 0;
}

// The template instantiated for --config / --model, or the message printed.
std::optional<dsl::Instance> instantiated(const char* command, const std::string& tmpl_path, const ConfigSource& cs) {
  if (cs.config.empty() && cs.model.empty()) {
    std::fprintf(stderr, "archc: error: %s needs --config config.json or --model DIR\n", command);
    return std::nullopt;
  }
  auto t = dsl::parse_template_file(tmpl_path);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message.c_str()), std::nullopt;
  std::shared_ptr<Checkpoint> ckpt;
  std::vector<dsl::UnreadDecl> wrapper_unread;  // a dump reads no tensors' absence
  auto opt = instantiate_options(cs, ckpt, wrapper_unread);
  if (!opt.ok()) return std::fprintf(stderr, "archc: error: %s\n", opt.error().message.c_str()), std::nullopt;
  auto inst = dsl::instantiate(*t, *opt, op_table());
  if (!inst.ok()) return std::fprintf(stderr, "%s\n", inst.error().message.c_str()), std::nullopt;
  return std::move(*inst);
}

int dump(const std::string& tmpl_path, const ConfigSource& cs) {
  auto inst = instantiated("dump", tmpl_path, cs);
  if (!inst) return 1;
  std::printf("# config\n");
  for (auto& [n, v] : inst->config) std::printf("#   %s = %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("# flags\n");
  for (auto& [n, v] : inst->flags) std::printf("#   %s = %s\n", n.c_str(), v ? "true" : "false");
  std::printf("%s", print_graph(inst->graph).c_str());
  return 0;
}

int graph(const std::string& tmpl_path, const ConfigSource& cs, bool svg, const std::string& out_path) {
  auto inst = instantiated("graph", tmpl_path, cs);
  if (!inst) return 1;
  std::string dot = graph_to_dot(inst->graph);
  if (!svg) {
    if (out_path.empty()) std::fputs(dot.c_str(), stdout);
    else if (!(std::ofstream(out_path) << dot)) return std::fprintf(stderr, "archc: error: cannot write %s\n", out_path.c_str()), 1;
    return 0;
  }
  // SVG through Graphviz's dot, when it is installed.
  std::string cmd = "dot -Tsvg" + (out_path.empty() ? std::string() : " -o '" + out_path + "'");
  FILE* p = popen(cmd.c_str(), "w");
  if (!p) return std::fprintf(stderr, "archc: error: cannot run Graphviz's dot\n"), 1;
  std::fputs(dot.c_str(), p);
  int rc = pclose(p);
  if (rc != 0)
    return std::fprintf(stderr, "archc: error: Graphviz's dot failed (is the graphviz package installed? --dot writes the source)\n"), 1;
  return 0;
}

// A template named PATH or PATH@REV (a git revision: written beside PATH
// so that its imports resolve, and removed afterwards).
struct TemplateFile {
  std::string path;
  bool temporary = false;
  ~TemplateFile() {
    if (temporary) std::remove(path.c_str());
  }
};

Result<std::unique_ptr<TemplateFile>> template_file(const std::string& spec) {
  auto f = std::make_unique<TemplateFile>();
  size_t at = spec.rfind('@');
  if (at == std::string::npos) {
    f->path = spec;
    return f;
  }
  namespace fs = std::filesystem;
  fs::path file = spec.substr(0, at);
  std::string rev = spec.substr(at + 1);
  fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  f->path = (dir / (".archc-diff-" + std::to_string(getpid()) + "-" + file.filename().string())).string();
  f->temporary = true;
  std::string cmd = "git -C '" + dir.string() + "' show '" + rev + ":./" + file.filename().string() + "' > '" +
                    f->path + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0)
    return error(spec + ": git has no " + file.filename().string() + " at revision " + rev);
  return f;
}

Result<std::shared_ptr<Model>> model_with(const std::string& dir, const std::string& tmpl) {
  LoadOptions opt;
  opt.template_path = tmpl;
  return load_model(dir, opt);
}

// A small self-contained page: the changes, and a bar per layer of the
// largest relative difference (log scale).
std::string diff_html(const std::string& old_spec, const std::string& new_spec,
                      const std::vector<GraphChange>& changes, const NumericDiff& nd) {
  std::map<std::string, double> by_layer;  // "layers.3" -> max rel
  std::vector<std::string> order;
  for (const auto& v : nd.values) {
    size_t a = v.value.find('.'), b = a == std::string::npos ? a : v.value.find('.', a + 1);
    std::string layer = b == std::string::npos ? "(top)" : v.value.substr(0, b);
    if (!by_layer.count(layer)) order.push_back(layer);
    by_layer[layer] = std::max(by_layer[layer], v.rel);
  }
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return o;
  };
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>archc diff</title><style>"
    << "body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}code{font-size:90%}"
    << "</style></head><body><h1>" << esc(old_spec) << " &rarr; " << esc(new_spec) << "</h1>";
  h << "<h2>Divergence by layer (largest relative difference)</h2>";
  const int width = 640, bar = 18;
  h << "<svg width=\"" << width + 220 << "\" height=\"" << bar * (order.size() + 1) << "\" xmlns=\"http://www.w3.org/2000/svg\">";
  for (size_t i = 0; i < order.size(); ++i) {
    double rel = by_layer[order[i]];
    // log10 scale from 1e-8 (nothing) to 1 (everything changed)
    double x = rel <= 1e-8 ? 0 : std::min(1.0, (std::log10(rel) + 8) / 8);
    int y = int(i) * bar;
    h << "<text x=\"0\" y=\"" << y + 13 << "\" font-size=\"12\">" << esc(order[i]) << "</text>"
      << "<rect x=\"120\" y=\"" << y + 2 << "\" width=\"" << int(x * width) << "\" height=\"" << bar - 4
      << "\" fill=\"" << (rel > 1e-4 ? "#c0392b" : "#2e86c1") << "\"/>"
      << "<text x=\"" << 125 + int(x * width) << "\" y=\"" << y + 13 << "\" font-size=\"11\">" << rel << "</text>";
  }
  h << "</svg><h2>Structure</h2><table><tr><th></th><th>value</th><th>change</th></tr>";
  for (const auto& c : changes)
    h << "<tr><td>" << (c.kind == GraphChange::Added ? "+" : c.kind == GraphChange::Removed ? "&minus;" : "~")
      << "</td><td><code>" << esc(c.value) << "</code></td><td>" << esc(c.detail) << "</td></tr>";
  h << "</table><h2>Outputs</h2><table><tr><th>output</th><th>max abs</th><th>rel</th></tr>";
  for (const auto& o : nd.outputs)
    h << "<tr><td><code>" << esc(o.value) << "</code></td><td>" << o.max_abs << "</td><td>" << o.rel << "</td></tr>";
  h << "</table>";
  if (!nd.first_beyond.empty()) h << "<p>First value beyond its op's tolerance: <code>" << esc(nd.first_beyond) << "</code></p>";
  if (nd.greedy_total) h << "<p>Greedy tokens agreeing: " << nd.greedy_agree << " of " << nd.greedy_total << "</p>";
  h << "</body></html>\n";
  return h.str();
}

int diff(const std::string& old_spec, const std::string& new_spec, const std::string& model_dir,
         const std::string& ids_text, const std::string& inputs_path, bool as_json, const std::string& html) {
  auto fail = [](const Error& e) { return std::fprintf(stderr, "archc: error: %s\n", e.message.c_str()), 1; };
  auto fa = template_file(old_spec);
  if (!fa.ok()) return fail(fa.error());
  auto fb = template_file(new_spec);
  if (!fb.ok()) return fail(fb.error());
  auto ma = model_with(model_dir, (*fa)->path);
  if (!ma.ok()) return fail(ma.error());
  auto mb = model_with(model_dir, (*fb)->path);
  if (!mb.ok()) return fail(mb.error());
  auto changes = diff_graphs((*ma)->graph(), (*mb)->graph());
  std::map<std::string, Tensor> inputs;
  if (!inputs_path.empty()) {
    auto f = read_safetensors(inputs_path);
    if (!f.ok()) return fail(f.error());
    inputs = f->tensors;
  } else if (!ids_text.empty()) {
    std::vector<int32_t> ids;
    std::stringstream ss(ids_text);
    for (std::string item; std::getline(ss, item, ',');) {
      try {
        ids.push_back(std::stoi(item));
      } catch (const std::exception&) {
        return fail(error("--ids: '" + item + "' is not a token id"));
      }
    }
    Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), t.i32());
    inputs["input_ids"] = t;
  } else if (std::filesystem::exists(model_dir + "/inputs.json") || std::filesystem::exists(model_dir + "/inputs.safetensors")) {
    auto g = golden_inputs(model_dir);  // a golden directory brings its own inputs
    if (!g.ok()) return fail(g.error());
    inputs = *g;
  } else {
    return fail(error("give the inputs: --ids 1,2,3 or --inputs IN.safetensors"));
  }
  auto nd = diff_runs(**ma, **mb, inputs);
  if (!nd.ok()) return fail(nd.error());
  if (!html.empty() && !(std::ofstream(html) << diff_html(old_spec, new_spec, changes, *nd)))
    return fail(error("cannot write " + html));
  if (as_json) {
    nlohmann::json j;
    j["structure"] = nlohmann::json::array();
    for (const auto& c : changes)
      j["structure"].push_back({{"kind", c.kind == GraphChange::Added ? "added" : c.kind == GraphChange::Removed ? "removed" : "changed"},
                                {"value", c.value}, {"detail", c.detail}});
    for (const auto& v : nd->values)
      j["values"].push_back({{"value", v.value}, {"max_abs", v.max_abs}, {"rel", v.rel}, {"within_tolerance", v.within()}});
    for (const auto& v : nd->outputs) j["outputs"].push_back({{"output", v.value}, {"max_abs", v.max_abs}, {"rel", v.rel}});
    j["first_beyond_tolerance"] = nd->first_beyond.empty() ? nlohmann::json(nullptr) : nlohmann::json(nd->first_beyond);
    if (nd->greedy_total) j["greedy"] = {{"tokens", nd->greedy_total}, {"agree", nd->greedy_agree}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  size_t added = 0, removed = 0, changed = 0;
  for (const auto& c : changes) (c.kind == GraphChange::Added ? added : c.kind == GraphChange::Removed ? removed : changed)++;
  std::printf("structure: %zu changed, %zu added, %zu removed\n", changed, added, removed);
  for (const auto& c : changes)
    std::printf("  %s %s: %s\n", c.kind == GraphChange::Added ? "+" : c.kind == GraphChange::Removed ? "-" : "~",
                c.value.c_str(), c.detail.c_str());
  std::printf("numbers:\n");
  if (nd->first_beyond.empty()) std::printf("  every aligned value within its op's tolerance\n");
  for (const auto& v : nd->values)
    if (v.value == nd->first_beyond)
      std::printf("  first value beyond its op's tolerance: %s (max abs %.3g > %.3g, rel %.3g)\n", v.value.c_str(),
                  v.max_abs, v.bound, v.rel);
  for (const auto& o : nd->outputs)
    std::printf("  output %-24s max abs %.3g, rel %.3g\n", o.value.c_str(), o.max_abs, o.rel);
  if (nd->greedy_total) std::printf("  greedy tokens: %d of %d agree\n", nd->greedy_agree, nd->greedy_total);
  return 0;
}

struct LowerArgs {
  std::string target = "npu2", model, out, profile, tmpl, families, device;
  int64_t context = 0, chunk = 64, at = -1;
  bool estimate = false, json = false;
};

// archc lower: a checkpoint's step graph as the NPU2 engine's program.
int lower(const LowerArgs& a) {
  LoadOptions lo;
  lo.backend = "reference";
  lo.plan = false;
  lo.programs = false;  // the IR and the checkpoint's tensor names are all lowering reads
  lo.template_path = a.tmpl;
  lo.families = a.families;
  auto m = load_model(a.model, lo);
  if (!m.ok()) return std::fprintf(stderr, "archc: error: %s\n", m.error().message.c_str()), 1;
  Npu2Options o;
  o.max_context = a.context;
  o.chunk = a.chunk;
  o.profile = a.profile;
  auto l = lower_model(**m, o);
  if (!l.ok()) return std::fprintf(stderr, "archc: error: %s\n", l.error().message.c_str()), 1;
  if (!l->refusals.empty()) {
    if (a.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : l->refusals)
        j.push_back({{"block", r.block}, {"op", r.op}, {"at", r.at}, {"reason", r.reason}, {"needs", r.needed}});
      std::printf("%s\n", nlohmann::json{{"refused", j}}.dump(2).c_str());
    }
    std::fprintf(stderr, "archc: error: %s", refusal_message(a.model, *l).c_str());
    return 1;
  }
  const std::string text = npu2::program_yaml(l->program);
  if (a.estimate) {
    const std::string device = a.device.empty() ? families_dir(a.families) + "/devices/npu2.yaml" : a.device;
    auto d = npu2::read_device(device);
    if (!d.ok()) return std::fprintf(stderr, "archc: error: %s\n", d.error().message.c_str()), 1;
    const int64_t at = a.at >= 0 ? std::min(a.at, l->program.max_context - 1) : l->program.max_context / 2;
    const npu2::Estimate e = npu2::estimate(l->program, *d, at);
    if (a.json) {
      nlohmann::json j = {{"device", d->name}, {"position", at}, {"step_ms", e.seconds * 1e3},
                          {"tokens_per_second", e.tokens_per_second()}, {"commands", e.commands},
                          {"constant_bytes", e.weight_bytes}, {"unfused_step_ms", e.unfused_seconds * 1e3},
                          {"unfused_commands", e.unfused_commands}, {"state_bytes", e.state_bytes},
                          {"cache_bytes", e.cache_bytes}};
      for (const auto& [k, t] : e.by_kind) j["by_kind_ms"][k] = t * 1e3;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::fputs(npu2::estimate_text(*d, e).c_str(), stdout);
    }
  }
  if (a.out.empty() || a.out == "-") {
    if (!a.estimate) std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream f(a.out);
    f << text;
    if (!f) return std::fprintf(stderr, "archc: error: %s: cannot write the program\n", a.out.c_str()), 1;
    std::fprintf(stderr, "%s: %zu units, %zu buffers, %zu KV caches of %lld positions (profile %s)\n", a.out.c_str(),
                 l->program.units.size(), l->program.buffers.size(), l->program.caches.size(),
                 (long long)l->program.max_context, l->program.profile.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"archc: check .arch templates and show what they instantiate to"};
  std::vector<std::string> check;
  bool quiet = false;
  ConfigSource check_cs;
  app.add_option("--check", check, "lint these templates: syntax, names, calls, weight references")->expected(1, -1);
  app.add_flag("-q,--quiet", quiet, "print nothing when clean");
  app.fallthrough();  // --limit after a command's name too
  std::vector<std::string> limits;
  app.add_option("--limit", limits, "raise (or lower) a limit on what input files may ask for: NAME=N");
  app.footer(limits_help());
  app.add_option("--config", check_cs.config, "with --check: also instantiate with this config.json (checks shapes)");
  app.add_option("--model", check_cs.model, "with --check: also instantiate with this checkpoint's config and tensors");

  std::string tmpl;
  ConfigSource cs;
  auto* d = app.add_subcommand("dump", "print the IR a template instantiates to for a config");
  d->add_option("template", tmpl, "the .arch file")->required();
  d->add_option("--config", cs.config, "config.json to fill the template with");
  d->add_option("--model", cs.model, "checkpoint directory: its config, and tensor presence for flags");
  d->add_option("--flag", cs.flags, "override a flag: NAME=true|false")->take_all();
  d->add_option("--graph", cs.graph, "which of the template's graphs (default: the first)");

  std::string gtmpl, gout;
  ConfigSource gcs;
  bool gdot = false, gsvg = false;
  auto* gr = app.add_subcommand("graph", "draw the instantiated graph: Graphviz source (--dot) or SVG (--svg, needs Graphviz)");
  gr->add_option("template", gtmpl, "the .arch file")->required();
  gr->add_option("--config", gcs.config, "config.json to fill the template with");
  gr->add_option("--model", gcs.model, "checkpoint directory: its config, and tensor presence for flags");
  gr->add_option("--flag", gcs.flags, "override a flag: NAME=true|false")->take_all();
  gr->add_option("--graph", gcs.graph, "which of the template's graphs (default: the first)");
  gr->add_flag("--dot", gdot, "Graphviz source (the default)");
  gr->add_flag("--svg", gsvg, "SVG, rendered by Graphviz's dot");
  gr->add_option("-o,--out", gout, "file to write (default: standard output)");

  std::string dold, dnew, dmodel, dids, dinputs, dhtml;
  bool djson = false;
  auto* df = app.add_subcommand("diff", "two versions of a template on one checkpoint: what changed, and how far the numbers moved");
  df->add_option("old", dold, "the old template (PATH or PATH@GIT_REVISION)")->required();
  df->add_option("new", dnew, "the new template (PATH or PATH@GIT_REVISION)")->required();
  df->add_option("--model", dmodel, "checkpoint directory both run on")->required();
  df->add_option("--ids", dids, "input token ids, comma-separated");
  df->add_option("--inputs", dinputs, "inputs safetensors, as archrun forward takes them");
  df->add_flag("--json", djson, "machine-readable output");
  df->add_option("--html", dhtml, "also write a self-contained HTML page with a plot of divergence by layer");

  LowerArgs la;
  auto* lw = app.add_subcommand("lower", "lower a checkpoint's step graph into the NPU2 engine's program (YAML), or say by name why not");
  lw->add_option("model", la.model, "checkpoint directory")->required();
  lw->add_option("--target", la.target, "the engine: npu2")->check(CLI::IsMember({"npu2"}));
  lw->add_option("-o,--out", la.out, "file to write the program to (default: standard output)");
  lw->add_option("--context", la.context, "positions the KV caches hold (default: max_position_embeddings, at most 4096)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  lw->add_option("--chunk", la.chunk, "rows of the prompt version")->check(CLI::Range(int64_t(1), int64_t(4096)));
  lw->add_option("--profile", la.profile, "numeric profile (default: the .npu2.yaml beside the template)");
  lw->add_option("--template", la.tmpl, "lower this template's graph instead of dispatching");
  lw->add_option("--families", la.families, "directory of family templates and registry.toml");
  lw->add_flag("--json", la.json, "refusals (and the estimate) as JSON");
  lw->add_flag("--estimate", la.estimate, "price a decode step on the device description: tok/s, where the time goes, what the fusions save");
  lw->add_option("--device", la.device, "device description (default: families/devices/npu2.yaml)");
  lw->add_option("--at", la.at, "with --estimate: the position the decode step runs at (default: half the context)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 24));

  CLI11_PARSE(app, argc, argv);
  if (auto st = prepare_tool_environment(limits); !st) {
    std::fprintf(stderr, "archc: error: %s\n", st.error().message.c_str());
    return 1;
  }
  if (lw->parsed()) return lower(la);
  if (df->parsed()) return diff(dold, dnew, dmodel, dids, dinputs, djson, dhtml);
  if (d->parsed()) return dump(tmpl, cs);
  if (gr->parsed()) return graph(gtmpl, gcs, gsvg && !gdot, gout);
  if (!check.empty()) return check_files(check, quiet, check_cs);
  std::fprintf(stderr, "%s", app.help().c_str());
  return 2;
}
