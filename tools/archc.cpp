// archc: the template compiler's command line.
//   archc --check FILES...            lint templates (exit 1 on any error)
//   archc dump TEMPLATE --config config.json [--model DIR]
//                                     the instantiated IR as stable text
#include <CLI/CLI.hpp>

#include <cstdio>

#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "engine/graph.h"
#include "importer/checkpoint.h"
#include "importer/config.h"
#include "kernels/kernels.h"

using namespace arch;

namespace {

int check_files(const std::vector<std::string>& files, bool quiet) {
  int problems = 0;
  for (const auto& f : files) {
    auto t = dsl::parse_template_file(f);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.error().message.c_str());
      ++problems;
      continue;
    }
    for (const auto& e : dsl::check_template(*t, op_table())) {
      std::fprintf(stderr, "%s\n", e.message.c_str());
      ++problems;
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

int dump(const std::string& tmpl_path, const std::string& config_path, const std::string& model_dir,
         const std::vector<std::string>& flags) {
  auto t = dsl::parse_template_file(tmpl_path);
  if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message.c_str()), 1;
  dsl::InstantiateOptions opt;
  Checkpoint ckpt;
  if (!model_dir.empty()) {
    auto c = load_checkpoint(model_dir);
    if (!c.ok()) return std::fprintf(stderr, "archc: error: %s\n", c.error().message.c_str()), 1;
    ckpt = std::move(*c);
    opt.config = ckpt.config;
    opt.tensor_exists = [&](const std::string& n) { return ckpt.has(n); };
  }
  if (!config_path.empty()) {
    auto c = read_config(config_path);
    if (!c.ok()) return std::fprintf(stderr, "archc: error: %s\n", c.error().message.c_str()), 1;
    opt.config = *c;
  }
  if (config_path.empty() && model_dir.empty())
    return std::fprintf(stderr, "archc: error: dump needs --config config.json or --model DIR\n"), 1;
  for (const auto& f : flags) {
    auto eq = f.find('=');
    opt.flag_overrides[f.substr(0, eq)] = eq == std::string::npos || f.substr(eq + 1) == "true";
  }
  auto inst = dsl::instantiate(*t, opt, op_table());
  if (!inst.ok()) return std::fprintf(stderr, "%s\n", inst.error().message.c_str()), 1;
  std::printf("# config\n");
  for (auto& [n, v] : inst->config) std::printf("#   %s = %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("# flags\n");
  for (auto& [n, v] : inst->flags) std::printf("#   %s = %s\n", n.c_str(), v ? "true" : "false");
  std::printf("%s", print_graph(inst->graph).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"archc: check .arch templates and show what they instantiate to"};
  std::vector<std::string> check;
  bool quiet = false;
  app.add_option("--check", check, "lint these templates: syntax, names, calls, weight references")->expected(1, -1);
  app.add_flag("-q,--quiet", quiet, "print nothing when clean");

  std::string tmpl, config, model;
  std::vector<std::string> flags;
  auto* d = app.add_subcommand("dump", "print the IR a template instantiates to for a config");
  d->add_option("template", tmpl, "the .arch file")->required();
  d->add_option("--config", config, "config.json to fill the template with");
  d->add_option("--model", model, "checkpoint directory: its config, and tensor presence for flags");
  d->add_option("--flag", flags, "override a flag: NAME=true|false")->take_all();

  CLI11_PARSE(app, argc, argv);
  if (d->parsed()) return dump(tmpl, config, model, flags);
  if (!check.empty()) return check_files(check, quiet);
  std::fprintf(stderr, "%s", app.help().c_str());
  return 2;
}
