// Post-processors: TemplateProcessing, BertProcessing, RobertaProcessing
// ([CLS] A [SEP] / <s> A </s>; for a pair [CLS] A [SEP] B [SEP] / <s> A </s>
// </s> B </s>), ByteLevel (offsets only, so nothing for ids), Sequence.
// Nothing is added without add_special_tokens.
#include <map>
#include <optional>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/components.h"

namespace arch::tok {

namespace {

// One item of a pair's template: sequence A (0) or B (1), or special ids
// (-1), and the type id the item's tokens get.
struct PairItem {
  int sequence = -1;
  std::vector<int32_t> ids;
  int32_t type_id = 0;
};
using PairTemplate = std::vector<PairItem>;

// ids before the sequence, then the sequence, then ids after it; a pair as
// its template lays it out (none: pairs are refused).
class Around : public PostProcessor {
 public:
  Around(std::vector<int32_t> before, std::vector<int32_t> after, std::optional<PairTemplate> pair = std::nullopt)
      : before_(std::move(before)), after_(std::move(after)), pair_(std::move(pair)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }
  size_t added_count() const override { return before_.size() + after_.size(); }
  bool lays_out_pairs() const override { return pair_.has_value(); }
  PairIds process_pair(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const override {
    if (!pair_) return PostProcessor::process_pair(a, b);
    PairIds out;
    for (const PairItem& item : *pair_) {
      const std::vector<int32_t>& ids = item.sequence < 0 ? item.ids : item.sequence == 0 ? a : b;
      out.ids.insert(out.ids.end(), ids.begin(), ids.end());
      out.type_ids.insert(out.type_ids.end(), ids.size(), item.type_id);
    }
    return out;
  }
  size_t added_pair_count() const override {
    size_t n = 0;
    if (pair_)
      for (const PairItem& item : *pair_) n += item.ids.size();
    return n;
  }

 private:
  std::vector<int32_t> before_, after_;
  std::optional<PairTemplate> pair_;
};

class Nothing : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
  size_t added_count() const override { return 0; }
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    for (const auto& p : parts_) p->process(ids, add_special_tokens);
  }
  size_t added_count() const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->added_count();
    return n;
  }
  // The part that lays out pairs (a ByteLevel beside a template adds no
  // ids): the last one that adds any.
  PairIds process_pair(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const override {
    const PostProcessor* p = layout();
    return p ? p->process_pair(a, b) : PostProcessor::process_pair(a, b);
  }
  size_t added_pair_count() const override {
    const PostProcessor* p = layout();
    return p ? p->added_pair_count() : 0;
  }
  bool lays_out_pairs() const override {
    const PostProcessor* p = layout();
    return !p || p->lays_out_pairs();
  }

 private:
  const PostProcessor* layout() const {
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it)
      if ((*it)->added_count() > 0 || (*it)->added_pair_count() > 0) return it->get();
    return nullptr;
  }
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// ["[SEP]", 102] as BertProcessing / RobertaProcessing store a token.
Result<int32_t> token_pair_id(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer())
    return error(where + ": field '" + key + "' must be [token, id]");
  return (*it)[1].get<int32_t>();
}

using Specials = std::map<std::string, std::vector<int32_t>>;

// A template's items, written "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1" (the type
// id after the colon, 0 when absent) or as a list of {"SpecialToken": {id,
// type_id}} / {"Sequence": {id: "A" | "B", type_id}}.
Result<PairTemplate> template_items(const json& t, const Specials& specials, const std::string& which,
                                    const std::string& where) {
  PairTemplate items;
  auto add = [&](const std::string& name, int32_t type_id, bool sequence) -> Status {
    if (sequence || name.starts_with("$")) {
      const std::string seq = sequence ? name : name.substr(1);
      if (seq == "" || seq == "A" || seq == "0") items.push_back({0, {}, type_id});
      else if (seq == "B" || seq == "1") items.push_back({1, {}, type_id});
      else return error(where + ": the " + which + " template names sequence '" + seq + "', expected A or B");
      return {};
    }
    auto it = specials.find(name);
    if (it == specials.end()) return error(where + ": template token '" + name + "' is not in special_tokens");
    items.push_back({-1, it->second, type_id});
    return {};
  };
  if (t.is_string()) {
    const std::string s = t.get<std::string>();
    size_t pos = 0;
    while (pos < s.size()) {
      size_t sp = s.find(' ', pos);
      std::string word = s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
      pos = sp == std::string::npos ? s.size() : sp + 1;
      if (word.empty()) continue;
      const size_t colon = word.find(':');
      int32_t type_id = 0;
      if (colon != std::string::npos) {
        const std::string digits = word.substr(colon + 1);
        if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
          return error(where + ": the " + which + " template's item '" + word + "' has no type id after ':'");
        type_id = std::stoi(digits);
      }
      ARCH_TRY_STATUS(add(word.substr(0, colon), type_id, false));
    }
  } else if (t.is_array()) {
    for (const json& item : t) {
      const bool sequence = item.is_object() && item.contains("Sequence");
      const json* body = sequence ? &item["Sequence"] : item.is_object() && item.contains("SpecialToken") ? &item["SpecialToken"] : nullptr;
      if (!body || !body->is_object() || !body->contains("id") || !(*body)["id"].is_string())
        return error(where + ": template item " + item.dump() + " is neither a Sequence nor a SpecialToken");
      const json type = body->value("type_id", json(0));
      if (!type.is_number_integer() || type.get<int64_t>() < 0 || type.get<int64_t>() > 255)
        return error(where + ": template item " + item.dump() + " has a type_id that is not a small number");
      ARCH_TRY_STATUS(add((*body)["id"].get<std::string>(), type.get<int32_t>(), sequence));
    }
  } else {
    return error(where + ": field '" + which + "' must be a list or a string");
  }
  return items;
}

Result<std::unique_ptr<PostProcessor>> make_template_processing(const json& j, const std::string& where) {
  // The special tokens the template names, each with its ids.
  Specials specials;
  auto st = j.find("special_tokens");
  if (st != j.end() && !st->is_null()) {
    if (!st->is_object()) return error(where + ": field 'special_tokens' must be an object");
    for (auto it = st->begin(); it != st->end(); ++it) {
      const json& ids = it.value().contains("ids") ? it.value()["ids"] : json();
      if (!ids.is_array()) return error(where + ": special_tokens['" + it.key() + "'] has no 'ids' array");
      std::vector<int32_t> v;
      for (const json& id : ids) {
        if (!id.is_number_integer()) return error(where + ": special_tokens['" + it.key() + "'].ids holds " + id.dump());
        v.push_back(id.get<int32_t>());
      }
      specials[it.key()] = std::move(v);
    }
  }
  auto single = j.find("single");
  if (single == j.end()) return error(where + ": missing field 'single'");
  ARCH_TRY(PairTemplate items, template_items(*single, specials, "single", where));
  std::vector<int32_t> before, after;
  int sequences = 0;
  for (const PairItem& item : items) {
    if (item.sequence == 1) return error(where + ": the single template uses $B, expected $A");
    if (item.sequence == 0) {
      if (++sequences > 1) return error(where + ": the single template holds the sequence twice");
      continue;
    }
    auto& dst = sequences ? after : before;
    dst.insert(dst.end(), item.ids.begin(), item.ids.end());
  }
  if (sequences == 0) return error(where + ": the single template never places the sequence ($A)");
  std::optional<PairTemplate> pair;
  auto p = j.find("pair");
  if (p != j.end() && !p->is_null()) {
    ARCH_TRY(pair, template_items(*p, specials, "pair", where));
    int a = 0, b = 0;
    for (const PairItem& item : *pair) a += item.sequence == 0, b += item.sequence == 1;
    if (a != 1 || b != 1) return error(where + ": the pair template must place $A and $B once each");
  }
  return std::unique_ptr<PostProcessor>(new Around(std::move(before), std::move(after), std::move(pair)));
}

constexpr const char* kSupported = "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence";

}  // namespace

PairIds PostProcessor::process_pair(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const {
  PairIds out{a, std::vector<int32_t>(a.size(), 0)};
  out.ids.insert(out.ids.end(), b.begin(), b.end());
  out.type_ids.insert(out.type_ids.end(), b.size(), 1);
  return out;
}

std::unique_ptr<PostProcessor> make_template(std::vector<int32_t> before, std::vector<int32_t> after) {
  return std::make_unique<Around>(std::move(before), std::move(after));
}

Result<std::unique_ptr<PostProcessor>> make_post_processor(const json& j, const std::string& where) {
  ARCH_TRY(std::string type, get_type(j, "post-processor", where));
  std::string at = where + " (" + type + ")";
  if (type == "TemplateProcessing") return make_template_processing(j, at);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    ARCH_TRY(int32_t cls, token_pair_id(j, "cls", at));
    ARCH_TRY(int32_t sep, token_pair_id(j, "sep", at));
    // BERT: [CLS] A [SEP] B [SEP], B's part of type 1; RoBERTa: <s> A </s>
    // </s> B </s>, all of type 0 (it has no token types).
    PairTemplate pair = type == "BertProcessing"
                            ? PairTemplate{{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}, {1, {}, 1}, {-1, {sep}, 1}}
                            : PairTemplate{{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep, sep}, 0}, {1, {}, 0}, {-1, {sep}, 0}};
    return std::unique_ptr<PostProcessor>(new Around({cls}, {sep}, std::move(pair)));
  }
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(new Nothing);
  if (type == "Sequence") {
    auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) return error(at + ": field 'processors' must be an array");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      ARCH_TRY(auto part, make_post_processor((*it)[i], where + ".processors[" + std::to_string(i) + "]"));
      parts.push_back(std::move(part));
    }
    return std::unique_ptr<PostProcessor>(new Sequence(std::move(parts)));
  }
  return error(unknown_type("post-processor", type, where, kSupported));
}

}  // namespace arch::tok
