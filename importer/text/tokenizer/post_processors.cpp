// Post-processors for one sequence: TemplateProcessing, BertProcessing,
// RobertaProcessing ([CLS] A [SEP] / <s> A </s>), ByteLevel (offsets only, so
// nothing for ids), Sequence. Nothing is added without add_special_tokens.
#include <map>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/components.h"

namespace arch::tok {

namespace {

// ids before the sequence, then the sequence, then ids after it.
class Around : public PostProcessor {
 public:
  Around(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }
  size_t added_count() const override { return before_.size() + after_.size(); }

 private:
  std::vector<int32_t> before_, after_;
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

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// ["[SEP]", 102] as BertProcessing / RobertaProcessing store a token.
Result<int32_t> token_pair_id(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer())
    return error(where + ": field '" + key + "' must be [token, id]");
  return (*it)[1].get<int32_t>();
}

// One template item's name: "$A", "$B", "$0", "$A:1", "[CLS]:0" -> the part before ':'.
std::string item_name(const std::string& s) { return s.substr(0, s.find(':')); }

Result<std::unique_ptr<PostProcessor>> make_template_processing(const json& j, const std::string& where) {
  // The special tokens the template names, each with its ids.
  std::map<std::string, std::vector<int32_t>> specials;
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
  // Items as a list of {"SpecialToken": {...}} / {"Sequence": {...}}, or a string "[CLS] $A [SEP]".
  std::vector<std::pair<bool, std::string>> items;  // (is_sequence, special token name)
  if (single->is_string()) {
    std::string s = single->get<std::string>();
    size_t pos = 0;
    while (pos < s.size()) {
      size_t sp = s.find(' ', pos);
      std::string word = s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
      pos = sp == std::string::npos ? s.size() : sp + 1;
      if (word.empty()) continue;
      std::string name = item_name(word);
      if (name == "$" || name == "$A" || name == "$0") items.emplace_back(true, "");
      else if (name.starts_with("$")) return error(where + ": the single template uses " + name + ", expected $A");
      else items.emplace_back(false, name);
    }
  } else if (single->is_array()) {
    for (const json& item : *single) {
      if (item.is_object() && item.contains("Sequence")) {
        items.emplace_back(true, "");
      } else if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].contains("id") &&
                 item["SpecialToken"]["id"].is_string()) {
        items.emplace_back(false, item["SpecialToken"]["id"].get<std::string>());
      } else {
        return error(where + ": template item " + item.dump() + " is neither a Sequence nor a SpecialToken");
      }
    }
  } else {
    return error(where + ": field 'single' must be a list or a string");
  }
  std::vector<int32_t> before, after;
  int sequences = 0;
  for (auto& [is_seq, name] : items) {
    if (is_seq) {
      if (++sequences > 1) return error(where + ": the single template holds the sequence twice");
      continue;
    }
    auto it = specials.find(name);
    if (it == specials.end()) return error(where + ": template token '" + name + "' is not in special_tokens");
    auto& dst = sequences ? after : before;
    dst.insert(dst.end(), it->second.begin(), it->second.end());
  }
  if (sequences == 0) return error(where + ": the single template never places the sequence ($A)");
  return std::unique_ptr<PostProcessor>(new Around(std::move(before), std::move(after)));
}

constexpr const char* kSupported = "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence";

}  // namespace

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
    return make_template({cls}, {sep});
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
