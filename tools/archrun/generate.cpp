// archrun generate: a prompt (-p TEXT or --ids) continued, text streamed as it comes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/core/json_text.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/image_prompt.h"
#include "engine/runtime/grammar_constraint.h"
#include "engine/runtime/json_schema_grammar.h"
#include "engine/runtime/seq2seq.h"
#include "importer/text/token_bytes.h"
#include "tools/toolkit/npu2_lowering.h"
#include "tools/archrun/npu2_run.h"
#include "importer/text/text_stream.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// An encoder-decoder's search (engine/runtime/seq2seq.h), its tokens printed at the end.
int run_seq2seq(const GenerateArgs& a, const Model& m, const std::vector<int32_t>& prompt,
                const std::shared_ptr<const Tokenizer>& tok) {
  Seq2SeqOptions o = a.search;
  if (a.greedy && !o.beams) o.beams = 1;
  o.max_new_tokens = a.n;
  if (!a.target_lang.empty()) {
    if (!tok) return fail(error("--target-lang names a token: give the prompt as -p TEXT, so the tokenizer is read"));
    auto id = language_token(*tok, a.target_lang);
    if (!id.ok()) return fail(id.error());
    o.forced_bos_token_id = *id;
  }
  auto plan = seq2seq_plan(m, o);
  if (!plan.ok()) return fail(plan.error());
  if (a.ignore_eos) plan->rules.eos.clear();
  auto r = seq2seq_generate(m, prompt, *plan);
  if (!r.ok()) return fail(r.error());
  if (a.json) {
    nlohmann::json j = {{"tokens", r->tokens}, {"score", r->score}, {"beams", plan->beams}};
    if (tok) j["prompt_tokens"] = prompt, j["text"] = tok->decode(r->tokens, true);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (tok) std::printf("%s\n", tok->decode(r->tokens, true).c_str());
  else {
    for (int32_t t : r->tokens) std::printf("%d ", t);
    std::printf("\n");
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s (%s): %zu prompt tokens encoded in %.3f s, %zu new tokens in %.3f s (%d beam%s, length penalty %g); stopped by %s\n",
               m.family.c_str(), m.template_path.c_str(), prompt.size(), r->encode_seconds, r->tokens.size(), r->decode_seconds,
               plan->beams, plan->beams == 1 ? "" : "s", plan->length_penalty, r->stop_reason.c_str());
  return 0;
}

// The constraint a --grammar or --json-schema file asks for, over the
// tokenizer's tokens; `eos`: the ids that end the reply once it is whole.
Result<std::shared_ptr<GrammarConstraint>> grammar_constraint(const std::string& grammar_file, const std::string& schema_file,
                                                              const Tokenizer& tok, std::vector<int32_t> eos) {
  const std::string& file = grammar_file.empty() ? schema_file : grammar_file;
  ARCH_TRY(std::string text, read_text_file(file, 1u << 20));  // a grammar or a schema is small
  if (!schema_file.empty()) {
    ARCH_TRY(auto schema, parse_ordered_json(text, file));  // properties in the order written
    ARCH_TRY(text, json_schema_gbnf(schema, file));
  }
  ARCH_TRY(Grammar g, parse_gbnf(text, file));
  if (eos.empty()) return error(file + ": the model names no end-of-sequence token, so a constrained reply could not end");
  auto vocab = std::make_shared<const GrammarVocab>(token_bytes(tok));
  return std::make_shared<GrammarConstraint>(std::make_shared<const Grammar>(std::move(g)), vocab, std::move(eos));
}

// The prompt: -p TEXT through the model's tokenizer (opened into `tok`),
// or --ids; with `ip`, each image marker first becomes its image's tokens
// (engine/runtime/image_prompt.h), on the text or on the ids.
Result<std::vector<int32_t>> read_prompt(const GenerateArgs& a, std::shared_ptr<const Tokenizer>& tok, const ImagePrompt* ip,
                                         int images) {
  if (a.prompt.empty()) {
    ARCH_TRY(std::vector<int32_t> ids, parse_ids(a.ids));
    if (!ip) return ids;
    return expand_image_ids(ids, *ip, images);
  }
  ARCH_TRY(tok, open_tokenizer(a.common.model));
  if (!ip) return tok->encode(a.prompt, true);
  ARCH_TRY(std::string text, expand_image_text(a.prompt, *tok, *ip, images));
  return tok->encode(text, true);
}

// What -n, --greedy, --temperature, --top-k, --top-p, --seed and
// --ignore-eos ask of the decoding.
GenerateOptions options_of(const GenerateArgs& a, const Model& m, const Tokenizer* tok) {
  GenerateOptions opt;
  opt.max_new_tokens = a.n;
  opt.sampling.greedy = a.greedy;
  opt.sampling.temperature = a.temperature;
  opt.sampling.top_k = a.top_k;
  opt.sampling.top_p = a.top_p;
  opt.sampling.seed = a.seed;
  if (!a.ignore_eos) opt.stop_ids = eos_ids(m, tok);
  return opt;
}

// --grammar / --json-schema: each step's logits masked to what the reply
// may go on with (the tokenizer opened where the prompt came as ids).
Status hold_to_grammar(const GenerateArgs& a, const Model& m, std::shared_ptr<const Tokenizer>& tok, GenerateOptions& opt) {
  if (!tok) {
    auto t = open_tokenizer(a.common.model);
    if (!t.ok()) return error("--grammar and --json-schema read the tokens' text: " + t.error().message);
    tok = *t;
  }
  ARCH_TRY(auto c, grammar_constraint(a.grammar_file, a.json_schema_file, *tok, opt.stop_ids.empty() ? eos_ids(m, tok.get()) : opt.stop_ids));
  opt.process_logits = [c](std::span<float> logits, const std::vector<int32_t>& so_far) { c->mask(logits, so_far); };
  return {};
}

// A vision-language model's prompt with images (--image): each image's
// features made by the model's encode graph and placed at its image
// tokens, then the reply drawn as any decoder's. Options that steer other
// kinds of model are refused by name.
int run_generate_images(const GenerateArgs& a) {
  if (a.backend == "npu2" || !a.numerics.empty()) return fail(error("--image runs on the CPU path: drop --backend npu2 / --numerics npu2"));
  if (!a.common.split.empty()) return fail(error("--image runs in one process: drop --split"));
  if (!a.grammar_file.empty() && !a.json_schema_file.empty()) return fail(error("give --grammar or --json-schema, not both"));
  if (a.search.beams || a.search.length_penalty || a.search.no_repeat_ngram_size || !a.target_lang.empty())
    return fail(error("--beam-size, --length-penalty, --no-repeat-ngram-size and --target-lang steer an encoder-decoder's search, not --image"));
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  auto ip = image_prompt(**m);
  if (!ip.ok()) return fail(error("--image: " + ip.error().message));
  std::vector<Tensor> pixels;
  for (const auto& path : a.images) {
    auto p = image_pixels(**m, path);
    if (!p.ok()) return fail(error("--image " + path + ": " + p.error().message));
    pixels.push_back(*p);
  }
  std::shared_ptr<const Tokenizer> tok;
  auto read = read_prompt(a, tok, &*ip, int(pixels.size()));
  if (!read.ok()) return fail(read.error());
  const std::vector<int32_t> prompt = std::move(*read);
  GenerateOptions opt = options_of(a, **m, tok.get());
  if (!a.grammar_file.empty() || !a.json_schema_file.empty())
    if (auto st = hold_to_grammar(a, **m, tok, opt); !st.ok()) return fail(st.error());
  std::optional<TextStream> stream;
  if (tok) stream.emplace(tok, true);
  opt.on_token = [&](int32_t t) {
    if (a.json) {
      if (stream) stream->push(t);
      return;
    }
    if (stream) std::fputs(stream->push(t).c_str(), stdout);
    else std::printf("%d ", t);
    std::fflush(stdout);
  };
  CheckStats check;
  if (a.common.check) opt.check = &check;
  Session session(**m, session_options(a.common, int64_t(prompt.size()) + a.n));
  if (a.common.check) session.check_with(&check);
  const auto t0 = std::chrono::steady_clock::now();
  if (auto st = encode_images(session, *ip, pixels); !st.ok()) return fail(st.error());
  const double encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto r = generate(session, prompt, opt);
  if (a.common.check) report_check(check, !r.ok());
  if (!r.ok()) return fail(r.error());
  if (a.json) {
    nlohmann::json j = {{"tokens", r->tokens}, {"prompt_tokens", prompt}, {"images", a.images.size()}};
    if (tok) j["text"] = tok->decode(r->tokens, true);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (stream) std::fputs(stream->finish().c_str(), stdout);
  std::printf("\n");
  std::fflush(stdout);
  double tps = r->decode_seconds > 0 ? double(r->tokens.size() - 1) / r->decode_seconds : 0;
  std::fprintf(stderr, "%s (%s): %zu image%s encoded in %.3f s, %zu prompt tokens in %.3f s, %zu new tokens, %.1f tok/s decoding; stopped by %s\n",
               (*m)->family.c_str(), (*m)->template_path.c_str(), pixels.size(), pixels.size() == 1 ? "" : "s",
               encode_seconds, prompt.size(), r->prompt_seconds, r->tokens.size(), tps, r->stop_reason.c_str());
  return 0;
}

}  // namespace

int run_generate(const GenerateArgs& a) {
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the prompt as -p TEXT or as --ids 1,2,3 (one of them)"));
  if (!a.images.empty()) return run_generate_images(a);
  std::shared_ptr<const Tokenizer> tok;
  auto read = read_prompt(a, tok, nullptr, 0);
  if (!read.ok()) return fail(read.error());
  std::vector<int32_t> prompt = std::move(*read);
  const bool constrained = !a.grammar_file.empty() || !a.json_schema_file.empty();
  if (!a.grammar_file.empty() && !a.json_schema_file.empty()) return fail(error("give --grammar or --json-schema, not both"));
  if (constrained && (a.backend == "npu2" || !a.numerics.empty()))
    return fail(error("--grammar and --json-schema hold the CPU path's sampler: drop --backend npu2 / --numerics npu2"));
  if (!a.common.split.empty() && (a.backend == "npu2" || !a.numerics.empty()))
    return fail(error("--split " + a.common.split + ": the NPU2 engine's program runs in one process (drop --backend "
                      "npu2 / --numerics npu2, or --split)"));
  if (a.backend == "npu2") return run_generate_npu2(a, prompt, tok);
  if (!a.numerics.empty() && a.sampling_given)
    return fail(error("--numerics npu2 draws greedily, as the engine does: drop --temperature, --top-k and --top-p"));
  if (!a.numerics.empty() && a.common.path != "reference")
    return fail(error("--numerics npu2 is the host reference under the engine's numerics: give it with --path reference"));
  GraphRewrite rewrite;
  if (!a.numerics.empty()) rewrite = npu2_numerics_rewrite(a.common.model, Npu2Options{int64_t(prompt.size()) + a.n, a.chunk, ""});
  auto m = open_model(a.common, rewrite);
  if (!m.ok()) return fail(m.error());
  GenerateOptions opt = options_of(a, **m, tok.get());
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
  const bool search_given = a.search.beams || a.search.length_penalty || a.search.no_repeat_ngram_size || !a.target_lang.empty();
  if (search_given && !(*m)->is_encoder_decoder())
    return fail(error("--beam-size, --length-penalty, --no-repeat-ngram-size and --target-lang steer an encoder-decoder's search; " +
                      a.common.model + " is a decoder (" + (*m)->family + ")"));
  if (search_given && a.sampling_given) return fail(error("beam search is not sampling: drop --temperature, --top-k and --top-p"));
  if (search_given && a.common.check)
    return fail(error("--check compares the steps of one greedy decode: drop --beam-size, --length-penalty, --no-repeat-ngram-size and --target-lang"));
  // An encoder-decoder decodes as its generation_config.json says (beams,
  // length penalty, n-gram blocking, bad words, forced tokens) unless
  // sampled.
  if (constrained && (*m)->is_encoder_decoder())
    return fail(error("--grammar and --json-schema hold a decoder's reply; " + a.common.model + " is an encoder-decoder"));
  if ((*m)->is_encoder_decoder() && !a.sampling_given && !a.common.check) return run_seq2seq(a, **m, prompt, tok);
  if (constrained)
    if (auto st = hold_to_grammar(a, **m, tok, opt); !st.ok()) return fail(st.error());
  CheckStats check;
  if (a.common.check) opt.check = &check;
  // An encoder-decoder (T5): the prompt is the encoder's input, and the
  // decoder starts from its decoder_start_token_id.
  const bool enc_dec = (*m)->is_encoder_decoder();
  Session session(**m, session_options(a.common, enc_dec ? 1 + a.n : int64_t(prompt.size()) + a.n));
  Result<GenerateResult> r = error("");
  if (enc_dec) {
    auto start = decoder_start_token(**m);
    if (!start.ok()) return fail(start.error());
    Tensor ids = Tensor::zeros(DType::I32, {int64_t(prompt.size())});
    std::copy(prompt.begin(), prompt.end(), ids.i32());
    r = generate_encoded(session, {{"input_ids", ids}}, {*start}, opt);
  } else {
    r = generate(session, prompt, opt);
  }
  if (a.common.check) report_check(check, !r.ok());
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
    // The text ends its line, on stdout, before the summary goes to stderr:
    // through one pipe (2>&1) the two would otherwise meet on one line.
    std::printf("\n");
    std::fflush(stdout);
    double tps = r->decode_seconds > 0 ? double(r->tokens.size() - 1) / r->decode_seconds : 0;
    std::string encoded = enc_dec ? " encoded in " + std::to_string(r->encode_seconds).substr(0, 5) + " s," : "";
    std::fprintf(stderr, "%s (%s): %zu prompt tokens%s in %.3f s, %zu new tokens, %.1f tok/s decoding; stopped by %s\n",
                 (*m)->family.c_str(), (*m)->template_path.c_str(), prompt.size(), encoded.c_str(),
                 r->prompt_seconds, r->tokens.size(), tps, r->stop_reason.c_str());
  }
  return 0;
}

}  // namespace arch::cli
