// The tokenizer.json pipeline: added tokens are cut out of the raw text, the
// rest is normalized, pre-tokenized and run through the model; the
// post-processor adds special tokens. Decoding maps ids to tokens and runs
// the decoder.
#include <set>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/added_tokens.h"
#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/json_sizes.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

class HfBackend : public Backend {
 public:
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  AddedVocabulary added;
  struct Truncation {
    size_t max_length;
    bool left;
  };
  std::optional<Truncation> truncation;
  struct Padding {
    std::optional<size_t> fixed;
    size_t multiple = 0;
    int32_t pad_id = 0;
    bool left = false;
  };
  std::optional<Padding> padding;

  // The model's ids for the text, before truncation and special tokens.
  std::vector<int32_t> tokens(std::string_view text) const {
    std::string repaired;
    if (!is_valid_utf8(text)) {
      repaired = utf8_lossy(text);
      text = repaired;
    }
    std::vector<Split> splits;
    added.extract_and_normalize(text, normalizer.get(), splits);
    if (pre_tokenizer) pre_tokenizer->pre_tokenize(splits);
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    for (const Split& s : splits) {
      if (s.id >= 0) ids.push_back(s.id);
      else model->tokenize(s.text, ids);
    }
    return ids;
  }

  Result<PairEncoding> encode_pair(std::string_view a, std::string_view b, size_t max_length) const override {
    if (post_processor && !post_processor->lays_out_pairs())
      return error(source + ": the post-processor's template has no pair form, so a pair of texts cannot be laid out");
    std::vector<int32_t> first = tokens(a), second = tokens(b);
    if (truncation) max_length = std::min(max_length, truncation->max_length);
    const size_t added_n = post_processor ? post_processor->added_pair_count() : 0;
    if (max_length < added_n + 2)
      return error(source + ": " + std::to_string(max_length) + " tokens leave no room for a pair beside its " +
                   std::to_string(added_n) + " special tokens");
    // longest_first: a token off the longer text until both fit.
    while (first.size() + second.size() + added_n > max_length) (first.size() > second.size() ? first : second).pop_back();
    return post_processor ? post_processor->process_pair(first, second) : make_template({}, {})->process_pair(first, second);
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    std::vector<int32_t> ids = tokens(text);
    if (truncation) {
      size_t added_n = add_special_tokens && post_processor ? post_processor->added_count() : 0;
      size_t keep = truncation->max_length > added_n ? truncation->max_length - added_n : 0;
      if (ids.size() > keep) {
        if (truncation->left) ids.erase(ids.begin(), ids.end() - ptrdiff_t(keep));
        else ids.resize(keep);
      }
    }
    if (post_processor) post_processor->process(ids, add_special_tokens);
    if (padding) {
      size_t size = padding->fixed.value_or(ids.size());
      if (padding->multiple > 0 && size % padding->multiple) size += padding->multiple - size % padding->multiple;
      if (ids.size() < size) ids.insert(padding->left ? ids.begin() : ids.end(), size - ids.size(), padding->pad_id);
    }
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      const std::string* t = added.id_to_token(id);
      if (!t) t = model->id_to_token(id);
      if (!t || (skip_special_tokens && added.is_special(*t))) continue;
      tokens.push_back(*t);
    }
    if (!decoder) {
      std::string out;
      for (size_t k = 0; k < tokens.size(); ++k) out += (k ? " " : "") + tokens[k];
      return out;
    }
    decoder->decode_chain(tokens);
    std::string out;
    for (const std::string& t : tokens) out += t;
    return out;
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    if (auto id = added.token_to_id(token)) return id;
    return model->token_to_id(token);
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    const std::string* t = added.id_to_token(id);
    if (!t) t = model->id_to_token(id);
    return t ? std::optional<std::string>(*t) : std::nullopt;
  }
  size_t vocab_size() const override { return size_t(std::max(model->max_id(), added.max_id()) + 1); }
  std::vector<int32_t> special_ids() const override { return added.special_ids(); }
  std::string kind() const override { return model->kind(); }
};

const json* stage(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Status read_truncation(const json& t, const std::string& where, HfBackend& b) {
  ARCH_TRY(int64_t max_length, get_int(t, "max_length", where));
  if (max_length < 0) return error(where + ": max_length is negative");
  ARCH_TRY(std::string direction, get_string(t, "direction", where, "Right"));
  if (direction != "Right" && direction != "Left")
    return error(where + ": unknown direction '" + direction + "' (supported: Right, Left)");
  b.truncation = HfBackend::Truncation{size_t(max_length), direction == "Left"};
  return {};
}

Status read_padding(const json& p, const std::string& where, HfBackend& b) {
  HfBackend::Padding pad;
  auto strategy = p.find("strategy");
  if (strategy != p.end() && strategy->is_object() && strategy->contains("Fixed")) {
    const json& n = (*strategy)["Fixed"];
    if (!n.is_number_unsigned()) return error(where + ": strategy Fixed needs a length");
    // Every encode would allocate that many ids: bounded like a vocabulary
    // (there is no limit of its own for sequence lengths).
    ARCH_TRY_STATUS(check_entries(n.get<uint64_t>() > uint64_t(INT64_MAX) ? size_t(INT64_MAX) : n.get<size_t>(), where,
                                  "the padded length (strategy Fixed)"));
    pad.fixed = n.get<size_t>();
  } else if (strategy != p.end() && !(strategy->is_string() && *strategy == "BatchLongest")) {
    return error(where + ": unknown padding strategy " + strategy->dump() + " (supported: BatchLongest, {Fixed: n})");
  }
  ARCH_TRY(int64_t multiple, get_int(p, "pad_to_multiple_of", where, 0));
  ARCH_TRY_STATUS(check_entries(size_t(std::max<int64_t>(multiple, 0)), where, "the padded length (pad_to_multiple_of)"));
  ARCH_TRY(int64_t pad_id, get_int(p, "pad_id", where, 0));
  ARCH_TRY(std::string direction, get_string(p, "direction", where, "Right"));
  if (direction != "Right" && direction != "Left")
    return error(where + ": unknown direction '" + direction + "' (supported: Right, Left)");
  pad.multiple = size_t(std::max<int64_t>(multiple, 0));
  pad.pad_id = int32_t(pad_id);
  pad.left = direction == "Left";
  b.padding = pad;
  return {};
}

// transformers (4.x) rebuilds the post-processor of Llama- and Gemma-class
// fast tokenizers from tokenizer_config.json's add_bos_token / add_eos_token.
// Done here when the config sets either flag and names tokens that exist.
void apply_transformers_bos_eos(const json& config, HfBackend& b) {
  static const std::set<std::string> kClasses = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                                 "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"};
  auto cls = config.find("tokenizer_class");
  if (cls == config.end() || !cls->is_string() || !kClasses.count(cls->get<std::string>())) return;
  auto flag = [&](const char* key, bool fallback) {
    auto it = config.find(key);
    return it != config.end() && it->is_boolean() ? it->get<bool>() : fallback;
  };
  if (!config.contains("add_bos_token") && !config.contains("add_eos_token")) return;
  bool add_bos = flag("add_bos_token", true), add_eos = flag("add_eos_token", false);
  if ((add_bos && !b.bos_id) || (add_eos && !b.eos_id)) return;
  std::vector<int32_t> before, after;
  if (add_bos) before.push_back(*b.bos_id);
  if (add_eos) after.push_back(*b.eos_id);
  b.post_processor = make_template(std::move(before), std::move(after));
}

}  // namespace

std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.is_object()) return std::nullopt;
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

Result<std::unique_ptr<Backend>> hf_backend(std::string_view text, const std::string& source, const json& config) {
  // A repeated key keeps its last value, as `tokenizers` (serde) reads it; the
  // checked parser only runs to explain a file that does not parse.
  ARCH_TRY(json j, parse_tokenizer_json(text, source));
  if (j.is_discarded()) {
    ARCH_TRY(json checked, parse_json(text, source));
    j = std::move(checked);
  }
  if (!j.is_object()) return error(source + ": holds " + json_type_name(j) + ", expected a tokenizer.json object");
  if (const json* v = stage(j, "version"); v && *v != "1.0")
    return error(source + ": unknown tokenizer.json version " + v->dump() + " (supported: \"1.0\")");
  const json* model = stage(j, "model");
  if (!model) return error(source + ": no 'model' (is this a Hugging Face tokenizer.json?)");
  auto b = std::make_unique<HfBackend>();
  b->source = source;
  if (const json* n = stage(j, "normalizer")) {
    ARCH_TRY(b->normalizer, make_normalizer(*n, source + ": normalizer"));
  }
  if (const json* p = stage(j, "pre_tokenizer")) {
    ARCH_TRY(b->pre_tokenizer, make_pre_tokenizer(*p, source + ": pre_tokenizer"));
  }
  ARCH_TRY(b->model, make_model(*model, source + ": model"));
  if (const json* p = stage(j, "post_processor")) {
    ARCH_TRY(b->post_processor, make_post_processor(*p, source + ": post_processor"));
  }
  if (const json* d = stage(j, "decoder")) {
    ARCH_TRY(b->decoder, make_decoder(*d, source + ": decoder"));
  }
  const json* added = stage(j, "added_tokens");
  ARCH_TRY(b->added, AddedVocabulary::build(added ? *added : json(), *b->model, b->normalizer.get(), source));
  if (const json* t = stage(j, "truncation")) ARCH_TRY_STATUS(read_truncation(*t, source + ": truncation", *b));
  if (const json* p = stage(j, "padding")) ARCH_TRY_STATUS(read_padding(*p, source + ": padding", *b));

  if (auto bos = config_token(config, "bos_token")) b->bos_id = b->token_to_id(*bos);
  if (auto eos = config_token(config, "eos_token")) b->eos_id = b->token_to_id(*eos);
  if (config.is_object()) apply_transformers_bos_eos(config, *b);
  return std::unique_ptr<Backend>(std::move(b));
}

}  // namespace arch::tok
