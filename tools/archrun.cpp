// archrun: run a model from a checkpoint directory.
//   archrun generate MODEL --ids 1,2,3 -n 16 --greedy --json
//   archrun forward MODEL --inputs IN.safetensors --out OUT.safetensors
//   archrun info MODEL
// MODEL may be omitted (or be "toy"): the embedded default, a tiny
// random-weight Llama the tool writes itself, needing no download.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <optional>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/compare.h"
#include "engine/forward.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/session.h"
#include "importer/chat_template/load.h"
#include "importer/image.h"
#include "importer/image_preprocess.h"
#include "importer/safetensors.h"
#include "importer/text_stream.h"
#include "importer/tokenizer/tokenizer.h"
#include "importer/toy_checkpoint.h"

namespace fs = std::filesystem;
using namespace arch;

namespace {

struct Common {
  std::string model = "toy";
  std::string families;
  std::string template_path;
  std::vector<std::string> flags;
};

void add_common(CLI::App* cmd, Common& c) {
  cmd->add_option("model", c.model, "checkpoint directory (config.json + *.safetensors); 'toy' or nothing: the embedded default");
  cmd->add_option("--families", c.families, "directory of family templates and registry.toml");
  cmd->add_option("--template", c.template_path, "run this .arch template instead of dispatching");
  cmd->add_option("--flag", c.flags, "override a template flag: NAME=true|false")->take_all();
}

Result<std::shared_ptr<Model>> open_model(const Common& c) {
  LoadOptions opt;
  opt.families = c.families;
  opt.template_path = c.template_path;
  for (const auto& f : c.flags) {
    auto eq = f.find('=');
    std::string v = eq == std::string::npos ? "true" : f.substr(eq + 1);
    if (v != "true" && v != "false") return error("--flag " + f + ": the value must be true or false");
    opt.flags[f.substr(0, eq)] = v == "true";
  }
  if (c.model != "toy") return load_model(c.model, opt);
  // The embedded default: written fresh (it is tiny) to a directory of this
  // process's own, loaded, and removed; the mapping outlives the files.
  fs::path dir = fs::temp_directory_path() / ("archetype-toy-" + std::to_string(getpid()));
  ARCH_TRY_STATUS(write_toy_checkpoint(dir.string(), 0));
  auto m = load_model(dir.string(), opt);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (m.ok()) (*m)->checkpoint.dir = "toy (the embedded default, seed 0)";
  return m;
}

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception&) {
      return error("--ids: '" + item + "' is not a token id (expected e.g. --ids 1,2,3)");
    }
  }
  if (ids.empty()) return error("--ids: no token ids given");
  return ids;
}

int fail(const Error& e) {
  std::fprintf(stderr, "archrun: error: %s\n", e.message.c_str());
  return 1;
}

// ---- generate ----------------------------------------------------------------

struct GenerateArgs {
  Common common;
  std::string prompt, ids;
  int n = 16;
  bool greedy = false, json = false, ignore_eos = false;
  float temperature = 1.0f, top_p = 1.0f;
  int top_k = 0;
  uint64_t seed = 0;
};

// The checkpoint's tokenizer (MODEL may hold only tokenizer files).
Result<std::shared_ptr<const Tokenizer>> open_tokenizer(const std::string& model) {
  if (model == "toy") return error("the embedded default model has no tokenizer: give token ids with --ids");
  return load_tokenizer(model);
}

int run_generate(const GenerateArgs& a) {
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the prompt as -p TEXT or as --ids 1,2,3 (one of them)"));
  std::shared_ptr<const Tokenizer> tok;
  std::vector<int32_t> prompt;
  if (!a.prompt.empty()) {
    auto t = open_tokenizer(a.common.model);
    if (!t.ok()) return fail(t.error());
    tok = *t;
    prompt = tok->encode(a.prompt, true);
  } else {
    auto ids = parse_ids(a.ids);
    if (!ids.ok()) return fail(ids.error());
    prompt = *ids;
  }
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  GenerateOptions opt;
  opt.max_new_tokens = a.n;
  opt.sampling.greedy = a.greedy;
  opt.sampling.temperature = a.temperature;
  opt.sampling.top_k = a.top_k;
  opt.sampling.top_p = a.top_p;
  opt.sampling.seed = a.seed;
  if (!a.ignore_eos) {
    opt.stop_ids = eos_ids(**m);
    if (tok && tok->eos_id()) opt.stop_ids.push_back(*tok->eos_id());
  }
  // Text streams as it is generated; ids print as they come.
  std::optional<TextStream> stream;
  if (tok) stream.emplace(tok, true);
  if (!a.json)
    opt.on_token = [&](int32_t t) {
      if (stream) std::fputs(stream->push(t).c_str(), stdout);
      else std::printf("%d ", t);
      std::fflush(stdout);
    };
  else if (stream)
    opt.on_token = [&](int32_t t) { stream->push(t); };
  auto r = generate(**m, prompt, opt);
  if (!r.ok()) return fail(r.error());
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = r->tokens;
    if (tok) {
      j["prompt_tokens"] = prompt;
      j["text"] = tok->decode(r->tokens, true);
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    if (stream) std::fputs(stream->finish().c_str(), stdout);
    std::printf("\n");
    double tps = r->decode_seconds > 0 ? double(r->tokens.size() - 1) / r->decode_seconds : 0;
    std::fprintf(stderr, "%s (%s): %zu prompt tokens in %.3f s, %zu new tokens, %.1f tok/s decoding; stopped by %s\n",
                 (*m)->family.c_str(), (*m)->template_path.c_str(), prompt.size(), r->prompt_seconds,
                 r->tokens.size(), tps, r->stop_reason.c_str());
  }
  return 0;
}

// ---- forward -----------------------------------------------------------------

struct ForwardArgs {
  Common common;
  std::string inputs, out;
  std::vector<std::string> outputs;
  bool all_outputs = false;
};

int run_forward(const ForwardArgs& a) {
  auto in = read_safetensors(a.inputs);
  if (!in.ok()) return fail(in.error());
  // Batch 1 without padding: a mask of all ones is the same as none.
  if (auto mask = in->tensors.find("attention_mask"); mask != in->tensors.end()) {
    const Tensor& m = mask->second;
    for (int64_t k = 0; k < m.numel(); ++k) {
      int64_t v = m.dtype == DType::I64 ? static_cast<const int64_t*>(m.data)[k]
                  : m.dtype == DType::I32 ? static_cast<const int32_t*>(m.data)[k] : 1;
      if (v != 1) return fail(error(a.inputs + ": attention_mask with padding is not supported (batch 1, all ones)"));
    }
    in->tensors.erase(mask);
  }
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  std::vector<std::string> names = a.outputs;
  if (a.all_outputs) names = output_names((*m)->graph());
  if (names.empty()) {
    // logits where the model has them, else last_hidden_state, else its last output
    auto all = output_names((*m)->graph());
    for (const char* pref : {"logits", "last_hidden_state"})
      if (names.empty() && std::find(all.begin(), all.end(), pref) != all.end()) names = {pref};
    if (names.empty()) names = {all.back()};
  }
  auto outs = forward(**m, in->tensors, names);
  if (!outs.ok()) return fail(error(a.inputs + ": " + outs.error().message));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& n : names) {
    Tensor v = outs->at(n);
    Dims shape = v.shape;
    shape.insert(shape.begin(), 1);  // batch 1, as transformers returns it
    tensors.emplace_back(n, v.reshaped(shape));
  }
  Status st = write_safetensors(a.out, tensors);
  if (!st.ok()) return fail(st.error());
  return 0;
}

// ---- embed ------------------------------------------------------------------

struct EmbedArgs {
  Common common;
  std::string prompt, ids;
  bool normalize = false, json = false;
};

int run_embed(const EmbedArgs& a) {
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the text as -p TEXT or as --ids 101,2023,102 (one of them)"));
  Result<std::vector<int32_t>> ids = std::vector<int32_t>{};
  if (!a.prompt.empty()) {
    auto tok = open_tokenizer(a.common.model);
    if (!tok.ok()) return fail(tok.error());
    ids = (*tok)->encode(a.prompt, true);  // [CLS] ... [SEP], as the encoder was trained
  } else {
    ids = parse_ids(a.ids);
  }
  if (!ids.ok()) return fail(ids.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids->size())});
  std::copy(ids->begin(), ids->end(), t.i32());
  auto outs = forward(**m, {{"input_ids", t}}, {"mean_pooled"});
  if (!outs.ok()) return fail(outs.error());
  const Tensor& v = outs->at("mean_pooled");
  std::vector<float> vec(v.f32(), v.f32() + v.numel());
  if (a.normalize) {
    double norm = 0;
    for (float x : vec) norm += double(x) * x;
    norm = std::max(std::sqrt(norm), 1e-12);  // as torch.nn.functional.normalize
    for (float& x : vec) x = float(x / norm);
  }
  if (a.json) {
    nlohmann::json j;
    j["embedding"] = vec;
    j["dim"] = vec.size();
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (size_t i = 0; i < vec.size(); ++i) std::printf("%s%.7g", i ? " " : "", vec[i]);
    std::printf("\n");
  }
  return 0;
}

// ---- classify ---------------------------------------------------------------

int run_classify(const Common& c, const std::string& image_path, int top_k, bool as_json) {
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  const Model& model = **m;
  auto rgb = load_image(image_path);
  if (!rgb.ok()) return fail(rgb.error());
  auto pre = read_preprocessor_config(c.model, model.checkpoint.config);
  if (!pre.ok()) return fail(pre.error());
  Tensor pixels = preprocess(*rgb, *pre);
  auto outs = forward(model, {{"pixel_values", pixels}}, {"logits"});
  if (!outs.ok()) return fail(error(image_path + ": " + outs.error().message));
  const Tensor& logits = outs->at("logits");
  // Softmax probabilities, best first.
  std::vector<std::pair<double, int>> ranked;
  double maxv = -INFINITY, total = 0;
  for (int64_t i = 0; i < logits.numel(); ++i) maxv = std::max(maxv, double(logits.f32()[i]));
  for (int64_t i = 0; i < logits.numel(); ++i) total += std::exp(double(logits.f32()[i]) - maxv);
  for (int64_t i = 0; i < logits.numel(); ++i)
    ranked.emplace_back(std::exp(double(logits.f32()[i]) - maxv) / total, int(i));
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
  ranked.resize(std::min<size_t>(ranked.size(), size_t(std::max(top_k, 1))));
  auto labels = model.checkpoint.config.value("id2label", nlohmann::json::object());
  auto label = [&](int id) {
    auto it = labels.find(std::to_string(id));
    return it != labels.end() && it->is_string() ? it->get<std::string>() : "LABEL_" + std::to_string(id);
  };
  if (as_json) {
    nlohmann::json j = nlohmann::json::array();
    for (auto& [p, id] : ranked) j.push_back({{"id", id}, {"label", label(id)}, {"probability", p}});
    std::printf("%s\n", nlohmann::json{{"top", j}}.dump().c_str());
  } else {
    for (auto& [p, id] : ranked) std::printf("%6.2f%%  %s (%d)\n", 100 * p, label(id).c_str(), id);
  }
  return 0;
}

// ---- text: tokenize, detokenize, template, chat ----------------------------------

int run_tokenize(const std::string& model, std::string text, const std::string& file, bool no_special, bool as_json) {
  auto tok = open_tokenizer(model);
  if (!tok.ok()) return fail(tok.error());
  if (!file.empty()) {
    std::ifstream f(file, std::ios::binary);
    if (!f) return fail(error(file + ": cannot read"));
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto ids = (*tok)->encode(text, !no_special);
  if (as_json) {
    std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
  }
  return 0;
}

int run_detokenize(const std::string& model, const std::string& ids_text, bool skip_special, bool as_json) {
  auto tok = open_tokenizer(model);
  if (!tok.ok()) return fail(tok.error());
  auto ids = parse_ids(ids_text);
  if (!ids.ok()) return fail(ids.error());
  std::string text = (*tok)->decode(*ids, skip_special);
  if (as_json) std::printf("%s\n", nlohmann::json{{"text", text}}.dump().c_str());
  else std::printf("%s\n", text.c_str());
  return 0;
}

Result<nlohmann::ordered_json> read_messages(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(path + ": cannot read");
  std::string text((std::istreambuf_iterator<char>(f)), {});
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) return error(path + ": not valid JSON");
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) return error(path + ": expected a list of messages ([{\"role\": ..., \"content\": ...}, ...])");
  return j;
}

int run_template(const std::string& model, const std::string& messages_path, bool add_generation_prompt, bool as_json) {
  auto info = load_chat_template(model);
  if (!info.ok()) return fail(info.error());
  auto tok = open_tokenizer(model);
  if (!tok.ok()) return fail(tok.error());
  auto messages = read_messages(messages_path);
  if (!messages.ok()) return fail(messages.error());
  auto rendered = info->chat_template.render(info->context(*messages, add_generation_prompt));
  if (!rendered.ok()) return fail(error(info->path + ": " + rendered.error().message));
  // The template writes the special tokens itself: encode without adding more.
  auto ids = (*tok)->encode(*rendered, false);
  if (as_json) std::printf("%s\n", nlohmann::json{{"rendered", *rendered}, {"ids", ids}}.dump().c_str());
  else std::fputs(rendered->c_str(), stdout);
  return 0;
}

struct ChatArgs {
  Common common;
  std::string system;
  int n = 512;
  float temperature = 0.0f;
  uint64_t seed = 0;
};

// Turns come from standard input, one line each (a pipe or a terminal); each
// reply streams to standard output as it is generated.
int run_chat(const ChatArgs& a) {
  auto tok = open_tokenizer(a.common.model);
  if (!tok.ok()) return fail(tok.error());
  auto info = load_chat_template(a.common.model);
  if (!info.ok()) return fail(info.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  std::vector<int32_t> stop = eos_ids(**m);
  if ((*tok)->eos_id()) stop.push_back(*(*tok)->eos_id());
  bool interactive = isatty(0);
  for (std::string line;;) {
    if (interactive) std::fputs("> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    auto rendered = info->chat_template.render(info->context(messages, true));
    if (!rendered.ok()) return fail(error(info->path + ": " + rendered.error().message));
    GenerateOptions opt;
    opt.max_new_tokens = a.n;
    opt.sampling.greedy = a.temperature <= 0;
    opt.sampling.temperature = a.temperature;
    opt.sampling.seed = a.seed;
    opt.stop_ids = stop;
    TextStream stream(*tok, true);
    opt.on_token = [&](int32_t t) {
      std::fputs(stream.push(t).c_str(), stdout);
      std::fflush(stdout);
    };
    auto r = generate(**m, (*tok)->encode(*rendered, false), opt);
    if (!r.ok()) return fail(r.error());
    std::fputs(stream.finish().c_str(), stdout);
    std::printf("\n");
    std::fflush(stdout);
    std::vector<int32_t> reply = r->tokens;
    if (!reply.empty() && r->stop_reason == "eos") reply.pop_back();
    messages.push_back({{"role", "assistant"}, {"content", (*tok)->decode(reply, true)}});
  }
  return 0;
}

// ---- compare ----------------------------------------------------------------

int run_compare(const Common& c, const std::string& golden, bool as_json) {
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  auto r = compare_with_golden(**m, golden);
  if (!r.ok()) return fail(r.error());
  const TensorDiff* first = r->first_failure();
  size_t agree = 0;
  while (agree < r->want_tokens.size() && agree < r->got_tokens.size() &&
         r->want_tokens[agree] == r->got_tokens[agree])
    ++agree;
  if (as_json) {
    nlohmann::json j;
    for (const auto& t : r->tensors)
      j["tensors"].push_back({{"name", t.name}, {"max_abs", t.max_abs}, {"ref_max", t.ref_max},
                              {"bound", t.bound}, {"ok", t.ok()}});
    j["missing"] = r->missing;
    j["first_failure"] = first ? nlohmann::json(first->name) : nlohmann::json(nullptr);
    if (!r->want_tokens.empty()) {
      j["greedy_tokens"] = r->want_tokens.size();
      j["greedy_tokens_agree"] = agree;
    }
    j["ok"] = r->ok();
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%-32s %12s %12s  %s\n", "tensor", "max abs err", "allowed", "");
    for (const auto& t : r->tensors)
      std::printf("%-32s %12.3g %12.3g  %s\n", t.name.c_str(), t.max_abs, t.bound, t.ok() ? "ok" : "DIFFERS");
    for (const auto& n : r->missing) std::printf("%-32s %12s %12s  MISSING (the model has no such output)\n", n.c_str(), "-", "-");
    if (!r->want_tokens.empty())
      std::printf("greedy tokens: %zu of %zu agree\n", agree, r->want_tokens.size());
    if (first) std::printf("first divergence: %s (max abs err %.3g > %.3g)\n", first->name.c_str(), first->max_abs, first->bound);
    std::printf("%s\n", r->ok() ? "matches the golden" : "does NOT match the golden");
  }
  return r->ok() ? 0 : 1;
}

// ---- info --------------------------------------------------------------------

int run_info(const Common& c, bool as_json) {
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  const Model& model = **m;
  nlohmann::json j;
  j["model"] = model.checkpoint.dir;
  j["family"] = model.family;
  j["template"] = model.template_path;
  j["reason"] = model.reason;
  for (auto& [n, v] : model.instance.config) j["config"][n] = v.to_json();
  for (auto& [n, v] : model.instance.flags) j["flags"][n] = v;
  j["tensors"] = model.checkpoint.tensors.size();
  j["weights_bound"] = model.graph().weights.size();
  j["unused_tensors"] = model.unused_tensors;
  j["ops"] = model.graph().nodes.size();
  j["outputs"] = output_names(model.graph());
  if (as_json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:    %s\nfamily:   %s\ntemplate: %s\nwhy:      %s\n", model.checkpoint.dir.c_str(),
              model.family.c_str(), model.template_path.c_str(), model.reason.c_str());
  std::printf("config:\n");
  for (auto& [n, v] : model.instance.config) std::printf("  %-26s %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("flags:\n");
  for (auto& [n, v] : model.instance.flags) std::printf("  %-26s %s\n", n.c_str(), v ? "true" : "false");
  std::printf("graph:    %zu ops, %zu weights bound of %zu tensors in the checkpoint\n",
              model.graph().nodes.size(), model.graph().weights.size(), model.checkpoint.tensors.size());
  for (auto& u : model.unused_tensors) std::printf("  unused:  %s\n", u.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"archrun: run a Hugging Face checkpoint through its family's .arch template"};
  app.require_subcommand(1);

  GenerateArgs g;
  auto* gen = app.add_subcommand("generate", "generate tokens after a prompt");
  add_common(gen, g.common);
  gen->add_option("-p,--prompt", g.prompt, "prompt text (needs a tokenizer)");
  gen->add_option("--ids", g.ids, "prompt token ids, comma-separated");
  gen->add_option("-n,--max-new-tokens", g.n, "how many tokens to generate")->check(CLI::Range(1, 1 << 20));
  gen->add_flag("--greedy", g.greedy, "argmax decoding (the default when no temperature is given)");
  gen->add_option("--temperature", g.temperature, "sampling temperature")->check(CLI::Range(0.0, 100.0));
  gen->add_option("--top-k", g.top_k, "sample among the k most likely tokens")->check(CLI::Range(0, 1 << 30));
  gen->add_option("--top-p", g.top_p, "sample among the smallest set with this probability mass")->check(CLI::Range(0.0, 1.0));
  gen->add_option("--seed", g.seed, "sampling seed");
  gen->add_flag("--ignore-eos", g.ignore_eos, "keep going after the end-of-sequence token");
  gen->add_flag("--json", g.json, "print {\"tokens\": [...]}");

  ForwardArgs f;
  auto* fwd = app.add_subcommand("forward", "run one forward pass over input_ids; write the outputs");
  add_common(fwd, f.common);
  fwd->add_option("--inputs", f.inputs,
                  "safetensors with the model's inputs: input_ids [1, seq] (int32 or int64), token_type_ids, "
                  "attention_mask, or pixel_values [1, C, H, W]")->required();
  fwd->add_option("--out", f.out, "safetensors to write (float32, batch dim 1 kept)")->required();
  fwd->add_option("--outputs", f.outputs, "outputs to write (default: logits, else last_hidden_state)")->delimiter(',');
  fwd->add_flag("--all-outputs", f.all_outputs, "write every output the template declares");

  Common ic;
  bool info_json = false;
  auto* info = app.add_subcommand("info", "which family a checkpoint dispatches to and why; its config and flags");
  add_common(info, ic);
  info->add_flag("--json", info_json, "machine-readable output");

  EmbedArgs e;
  auto* emb = app.add_subcommand("embed", "a sentence embedding: the mean of the encoder's last hidden states");
  add_common(emb, e.common);
  emb->add_option("-p,--prompt", e.prompt, "the text (tokenized with the checkpoint's tokenizer)");
  emb->add_option("--ids", e.ids, "token ids, comma-separated");
  emb->add_flag("--normalize", e.normalize, "L2-normalise the vector");
  emb->add_flag("--json", e.json, "print {\"embedding\": [...], \"dim\": N}");

  std::string tk_model, tk_text, tk_file;
  bool tk_no_special = false, tk_json = false;
  auto* tkz = app.add_subcommand("tokenize", "text to token ids, as Hugging Face's tokenizer gives them");
  tkz->add_option("model", tk_model, "checkpoint directory (or one with only tokenizer files)")->required();
  tkz->add_option("text", tk_text, "the text");
  tkz->add_option("--file", tk_file, "read the text from a file");
  tkz->add_flag("--no-special", tk_no_special, "do not add special tokens (BOS, [CLS] ...)");
  tkz->add_flag("--json", tk_json, "print {\"ids\": [...]}");

  std::string dt_model, dt_ids;
  bool dt_skip = false, dt_json = false;
  auto* dtk = app.add_subcommand("detokenize", "token ids to text");
  dtk->add_option("model", dt_model, "checkpoint directory (or one with only tokenizer files)")->required();
  dtk->add_option("--ids", dt_ids, "token ids, comma-separated")->required();
  dtk->add_flag("--skip-special", dt_skip, "leave special tokens out");
  dtk->add_flag("--json", dt_json, "print {\"text\": ...}");

  std::string tp_model, tp_messages;
  bool tp_gen = false, tp_json = false;
  auto* tpl = app.add_subcommand("template", "render the checkpoint's chat template for a conversation");
  tpl->add_option("model", tp_model, "checkpoint directory (tokenizer_config.json with a chat_template)")->required();
  tpl->add_option("--messages", tp_messages, "JSON file: [{\"role\": ..., \"content\": ...}, ...]")->required();
  tpl->add_flag("--add-generation-prompt", tp_gen, "end with the assistant's turn opening");
  tpl->add_flag("--json", tp_json, "print {\"rendered\": ..., \"ids\": [...]}");

  ChatArgs ch;
  auto* cht = app.add_subcommand("chat", "chat with a model: one user turn per line of standard input");
  add_common(cht, ch.common);
  cht->add_option("--system", ch.system, "a system message first");
  cht->add_option("-n,--max-new-tokens", ch.n, "most tokens per reply")->check(CLI::Range(1, 1 << 20));
  cht->add_option("--temperature", ch.temperature, "sampling temperature (0: greedy)")->check(CLI::Range(0.0, 100.0));
  cht->add_option("--seed", ch.seed, "sampling seed");

  Common kc;
  std::string image;
  int top_k = 5;
  bool classify_json = false;
  auto* cls = app.add_subcommand("classify", "classify an image (PNG, JPEG, BMP, GIF) with an image classifier");
  add_common(cls, kc);
  cls->add_option("image", image, "the image file")->required();
  cls->add_option("-k,--top-k", top_k, "how many labels to print")->check(CLI::Range(1, 1000));
  cls->add_flag("--json", classify_json, "print {\"top\": [{\"id\", \"label\", \"probability\"}, ...]}");

  Common cc;
  std::string golden;
  bool compare_json = false;
  auto* cmp = app.add_subcommand("compare", "check a model against a golden directory (transformers' outputs): every tensor, per layer, greedy tokens");
  add_common(cmp, cc);
  cmp->add_option("golden", golden, "golden directory (expected.safetensors, inputs.json, expected.json)")->required();
  cmp->add_flag("--json", compare_json, "machine-readable output");

  std::string toy_dir;
  uint64_t toy_seed = 0;
  auto* toy = app.add_subcommand("toy", "write the embedded default checkpoint (tiny random-weight Llama)");
  toy->add_option("-o,--out", toy_dir, "directory to write")->required();
  toy->add_option("--seed", toy_seed, "weight seed");

  CLI11_PARSE(app, argc, argv);
  if (gen->parsed()) {
    // Greedy unless a sampling option is given (and --greedy is not).
    bool sampling = gen->count("--temperature") || gen->count("--top-k") || gen->count("--top-p");
    g.greedy = g.greedy || !sampling;
    return run_generate(g);
  }
  if (fwd->parsed()) return run_forward(f);
  if (info->parsed()) return run_info(ic, info_json);
  if (emb->parsed()) return run_embed(e);
  if (cmp->parsed()) return run_compare(cc, golden, compare_json);
  if (cls->parsed()) return run_classify(kc, image, top_k, classify_json);
  if (tkz->parsed()) {
    if (tk_text.empty() == tk_file.empty()) return fail(error("give the text, or --file PATH (one of them)"));
    return run_tokenize(tk_model, tk_text, tk_file, tk_no_special, tk_json);
  }
  if (dtk->parsed()) return run_detokenize(dt_model, dt_ids, dt_skip, dt_json);
  if (tpl->parsed()) return run_template(tp_model, tp_messages, tp_gen, tp_json);
  if (cht->parsed()) return run_chat(ch);
  if (toy->parsed()) {
    Status st = write_toy_checkpoint(toy_dir, toy_seed);
    if (!st.ok()) return fail(st.error());
    std::printf("wrote %s/config.json and %s/model.safetensors\n", toy_dir.c_str(), toy_dir.c_str());
  }
  return 0;
}
