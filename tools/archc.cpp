// archc: the template compiler's command line.
//   archc --check FILES...            lint templates (exit 1 on any error)
//   archc dump TEMPLATE --config config.json [--model DIR]
//                                     the instantiated IR as stable text
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "engine/graph.h"
#include "engine/graph_dot.h"
#include "importer/checkpoint.h"
#include "importer/config.h"
#include "kernels/kernels.h"

using namespace arch;

namespace {

// Instantiation options from --config / --model (shared by check and dump).
struct ConfigSource {
  std::string config, model;
  std::vector<std::string> flags;
};

Result<dsl::InstantiateOptions> instantiate_options(const ConfigSource& c, std::shared_ptr<Checkpoint>& ckpt) {
  dsl::InstantiateOptions opt;
  if (!c.model.empty()) {
    ARCH_TRY(Checkpoint loaded, load_checkpoint(c.model));
    ckpt = std::make_shared<Checkpoint>(std::move(loaded));
    opt.config = ckpt->config;
    opt.tensor_exists = [ckpt](const std::string& n) { return ckpt->has(n); };
  }
  if (!c.config.empty()) {
    ARCH_TRY(opt.config, read_config(c.config));
  }
  for (const auto& f : c.flags) {
    auto eq = f.find('=');
    std::string v = eq == std::string::npos ? "true" : f.substr(eq + 1);
    if (v != "true" && v != "false") return error("--flag " + f + ": the value must be true or false");
    opt.flag_overrides[f.substr(0, eq)] = v == "true";
  }
  return opt;
}

int check_files(const std::vector<std::string>& files, bool quiet, const ConfigSource& cs) {
  int problems = 0;
  std::shared_ptr<Checkpoint> ckpt;
  std::optional<dsl::InstantiateOptions> opt;
  if (!cs.config.empty() || !cs.model.empty()) {
    auto o = instantiate_options(cs, ckpt);
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
      auto inst = dsl::instantiate(*t, *opt, op_table());
      if (!inst.ok()) {
        std::fprintf(stderr, "%s\n", inst.error().message.c_str());
        ++problems;
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

int dump(const std::string& tmpl_path, const ConfigSource& cs) {
  if (cs.config.empty() && cs.model.empty())
    return std::fprintf(stderr, "archc: error: dump needs --config config.json or --model DIR\n"), 1;
  auto t = dsl::parse_template_file(tmpl_path);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message.c_str()), 1;
  std::shared_ptr<Checkpoint> ckpt;
  auto opt = instantiate_options(cs, ckpt);
  if (!opt.ok()) return std::fprintf(stderr, "archc: error: %s\n", opt.error().message.c_str()), 1;
  auto inst = dsl::instantiate(*t, *opt, op_table());
  if (!inst.ok()) return std::fprintf(stderr, "%s\n", inst.error().message.c_str()), 1;
  std::printf("# config\n");
  for (auto& [n, v] : inst->config) std::printf("#   %s = %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("# flags\n");
  for (auto& [n, v] : inst->flags) std::printf("#   %s = %s\n", n.c_str(), v ? "true" : "false");
  std::printf("%s", print_graph(inst->graph).c_str());
  return 0;
}

int graph(const std::string& tmpl_path, const ConfigSource& cs, bool svg, const std::string& out_path) {
  if (cs.config.empty() && cs.model.empty())
    return std::fprintf(stderr, "archc: error: graph needs --config config.json or --model DIR\n"), 1;
  auto t = dsl::parse_template_file(tmpl_path);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message.c_str()), 1;
  std::shared_ptr<Checkpoint> ckpt;
  auto opt = instantiate_options(cs, ckpt);
  if (!opt.ok()) return std::fprintf(stderr, "archc: error: %s\n", opt.error().message.c_str()), 1;
  auto inst = dsl::instantiate(*t, *opt, op_table());
  if (!inst.ok()) return std::fprintf(stderr, "%s\n", inst.error().message.c_str()), 1;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"archc: check .arch templates and show what they instantiate to"};
  std::vector<std::string> check;
  bool quiet = false;
  ConfigSource check_cs;
  app.add_option("--check", check, "lint these templates: syntax, names, calls, weight references")->expected(1, -1);
  app.add_flag("-q,--quiet", quiet, "print nothing when clean");
  app.add_option("--config", check_cs.config, "with --check: also instantiate with this config.json (checks shapes)");
  app.add_option("--model", check_cs.model, "with --check: also instantiate with this checkpoint's config and tensors");

  std::string tmpl;
  ConfigSource cs;
  auto* d = app.add_subcommand("dump", "print the IR a template instantiates to for a config");
  d->add_option("template", tmpl, "the .arch file")->required();
  d->add_option("--config", cs.config, "config.json to fill the template with");
  d->add_option("--model", cs.model, "checkpoint directory: its config, and tensor presence for flags");
  d->add_option("--flag", cs.flags, "override a flag: NAME=true|false")->take_all();

  std::string gtmpl, gout;
  ConfigSource gcs;
  bool gdot = false, gsvg = false;
  auto* gr = app.add_subcommand("graph", "draw the instantiated graph: Graphviz source (--dot) or SVG (--svg, needs Graphviz)");
  gr->add_option("template", gtmpl, "the .arch file")->required();
  gr->add_option("--config", gcs.config, "config.json to fill the template with");
  gr->add_option("--model", gcs.model, "checkpoint directory: its config, and tensor presence for flags");
  gr->add_option("--flag", gcs.flags, "override a flag: NAME=true|false")->take_all();
  gr->add_flag("--dot", gdot, "Graphviz source (the default)");
  gr->add_flag("--svg", gsvg, "SVG, rendered by Graphviz's dot");
  gr->add_option("-o,--out", gout, "file to write (default: standard output)");

  CLI11_PARSE(app, argc, argv);
  if (d->parsed()) return dump(tmpl, cs);
  if (gr->parsed()) return graph(gtmpl, gcs, gsvg && !gdot, gout);
  if (!check.empty()) return check_files(check, quiet, check_cs);
  std::fprintf(stderr, "%s", app.help().c_str());
  return 2;
}
