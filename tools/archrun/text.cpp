// archrun tokenize / detokenize / template / chat: text in, text out.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/core/json_text.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/image_prompt.h"
#include "engine/runtime/model_text.h"
#include "importer/text/text_stream.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_tokenize(const std::string& model, std::string text, const std::string& file, bool no_special, bool as_json) {
  auto tok = open_tokenizer(model);
  if (!tok.ok()) return fail(tok.error());
  if (!file.empty()) {
    auto read = read_text_file(file, size_t(1) << 30);
    if (!read.ok()) return fail(read.error());
    text = std::move(*read);
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
  ARCH_TRY(std::string text, read_text_file(path, size_t(1) << 28));
  ARCH_TRY(auto j, parse_ordered_json(text, path));  // within json_depth, keys in their order
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) return error(path + ": expected a list of messages ([{\"role\": ..., \"content\": ...}, ...])");
  return j;
}

int run_template(const std::string& model, const std::string& messages_path, bool add_generation_prompt, bool as_json) {
  auto info = load_model_chat_template(model);
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

// Turns come from standard input, one line each (a pipe or a terminal); each
// reply streams to standard output as it is generated.
namespace {

// A conversation as one text, for a model without a chat template: every
// message's content in turn, each user line on a line of its own.
std::string plain_text(const nlohmann::ordered_json& messages) {
  std::string text;
  for (const auto& m : messages) {
    if (m["role"] != "assistant" && !text.empty()) text += "\n";
    text += m["content"].get<std::string>();
  }
  return text;
}

}  // namespace

int run_chat(const ChatArgs& a) {
  auto tok = open_tokenizer(a.common.model);
  if (!tok.ok()) return fail(tok.error());
  auto info = load_model_chat_template(a.common.model);
  // A base model without a chat template (the default, stories260K) still
  // talks: each line continues the text, as a completion would.
  const bool plain = !info.ok() && means_no_chat_template(info.error());
  if (!info.ok() && !plain) return fail(info.error());
  if (plain)
    std::fprintf(stderr, "archrun: %s has no chat template: each line you type continues the text (a base model)\n",
                 a.common.model.c_str());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  // --image: the first turn is about it (a vision-language model); its
  // features are made now and held by the session for the whole chat.
  std::optional<ImagePrompt> image;
  std::vector<Tensor> pixels;
  if (!a.image.empty()) {
    if (plain) return fail(error("--image: " + a.common.model + " has no chat template to place the image in"));
    auto ip = image_prompt(**m);
    if (!ip.ok()) return fail(error("--image: " + ip.error().message));
    auto p = image_pixels(**m, a.image);
    if (!p.ok()) return fail(error("--image " + a.image + ": " + p.error().message));
    image = *ip;
    pixels.push_back(std::move(*p));
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!a.system.empty()) messages.push_back({{"role", "system"}, {"content", a.system}});
  const std::vector<int32_t> stop = eos_ids(**m, tok->get());
  // One session for the whole conversation: its KV cache holds `held`, the
  // ids run so far, and each turn prefills only where its rendering departs
  // from them (the new user turn, and whatever the template writes around
  // the last reply).
  Session session(**m, session_options(a.common, a.context));
  if (image)
    if (auto st = encode_images(session, *image, pixels); !st.ok()) return fail(error("--image " + a.image + ": " + st.error().message));
  std::vector<int32_t> held;
  bool interactive = isatty(0);
  int turn = 0;
  for (std::string line;;) {
    if (interactive) std::fputs("> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    // The first turn holds the image: as parts, which the template writes its marker for.
    if (image && turn == 0)
      messages.push_back({{"role", "user"},
                          {"content", nlohmann::ordered_json::array({{{"type", "image"}}, {{"type", "text"}, {"text", line}}})}});
    else
      messages.push_back({{"role", "user"}, {"content", line}});
    Result<std::string> rendered = plain ? plain_text(messages) : info->chat_template.render(info->context(messages, true));
    if (!rendered.ok()) return fail(error(info->path + ": " + rendered.error().message));
    if (image) {
      rendered = expand_image_text(*rendered, **tok, *image, 1);
      if (!rendered.ok()) return fail(error(info->path + ": " + rendered.error().message + " (the template writes no marker for an image part?)"));
    }
    GenerateOptions opt;
    opt.max_new_tokens = a.n;
    opt.sampling.greedy = a.temperature <= 0;
    opt.sampling.temperature = a.temperature;
    opt.sampling.seed = a.seed;
    opt.stop_ids = stop;
    TextStream stream(*tok, true);
    opt.after_prompt = [&] { session.mark(); };
    opt.on_token = [&](int32_t t) {
      std::fputs(stream.push(t).c_str(), stdout);
      std::fflush(stdout);
    };
    const std::vector<int32_t> ids = (*tok)->encode(*rendered, plain);  // plain text: BOS as for a prompt
    size_t same = 0;
    while (same < held.size() && same < ids.size() && held[same] == ids[same]) ++same;
    if (same == ids.size() && same > 0) --same;  // the last prompt token is run again for its logits
    // A recurrent state (Gated DeltaNet) cannot go back to any position: the
    // session then goes back to where the last turn's prompt ended (its
    // mark), or failing that to the start, and runs the rest again.
    auto back = session.back_to(int64_t(same));
    if (!back.ok()) return fail(back.error());
    same = size_t(*back);
    held.resize(same);
    const std::vector<int32_t> fresh(ids.begin() + int64_t(same), ids.end());
    if (session.position() + int64_t(fresh.size()) + opt.max_new_tokens > session.max_context())
      return fail(error("the conversation has outgrown its context: " + std::to_string(ids.size()) +
                        " tokens and up to " + std::to_string(opt.max_new_tokens) + " new ones exceed " +
                        std::to_string(session.max_context()) + " positions (--context N holds more)"));
    auto r = generate(session, fresh, opt);
    if (!r.ok()) return fail(r.error());
    // The session now holds the prompt and every new token but the last
    // (drawn, never run).
    held.insert(held.end(), fresh.begin(), fresh.end());
    if (!r->tokens.empty()) held.insert(held.end(), r->tokens.begin(), r->tokens.end() - 1);
    std::fputs(stream.finish().c_str(), stdout);
    std::printf("\n");
    std::fflush(stdout);
    ++turn;
    if (a.stats)
      std::fprintf(stderr, "turn %d: %zu prompt tokens, %zu prefilled, %zu reused from the session; %zu new\n", turn,
                   ids.size(), fresh.size(), same, r->tokens.size());
    std::vector<int32_t> reply = r->tokens;
    if (!reply.empty() && r->stop_reason == "eos") reply.pop_back();
    messages.push_back({{"role", "assistant"}, {"content", (*tok)->decode(reply, true)}});
  }
  return 0;
}

}  // namespace arch::cli
