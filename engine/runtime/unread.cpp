#include "engine/runtime/unread.h"

#include <algorithm>
#include <unordered_map>

namespace arch {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// model.layers.12.mlp.gate_proj.bias -> model.layers.*.mlp.gate_proj.bias
std::string folded(const std::string& name) {
  std::string out;
  size_t at = 0;
  while (at <= name.size()) {
    const size_t dot = std::min(name.find('.', at), name.size());
    const std::string seg = name.substr(at, dot - at);
    out += (at ? "." : "") + (all_digits(seg) ? std::string("*") : seg);
    at = dot + 1;
  }
  return out;
}

}  // namespace

dsl::UnreadDecl unread_decl(const UnreadNote& note) {
  dsl::UnreadDecl d;
  d.reason = note.reason;
  size_t at = 0;
  while (at <= note.pattern.size()) {
    const size_t dot = std::min(note.pattern.find('.', at), note.pattern.size());
    const std::string seg = note.pattern.substr(at, dot - at);
    dsl::PathSeg s;
    if (seg == "*") {
      s.kind = dsl::PathSeg::Any;
    } else if (seg.size() > 2 && seg.front() == '{' && seg.back() == '}') {
      s.kind = dsl::PathSeg::Interp;
      s.name = seg.substr(1, seg.size() - 2);
    } else if (all_digits(seg) && seg.size() <= 15 && (seg == "0" || seg[0] != '0')) {
      s.kind = dsl::PathSeg::Index;
      s.index = std::stoll(seg);
    } else {
      s.name = seg;
    }
    d.pattern.push_back(std::move(s));
    at = dot + 1;
  }
  return d;
}

std::vector<std::string> unexplained_tensors(const std::vector<std::string>& unread,
                                             const std::vector<dsl::UnreadDecl>& declared) {
  std::vector<std::string> out;
  for (const auto& name : unread)
    if (std::none_of(declared.begin(), declared.end(), [&](const dsl::UnreadDecl& d) { return dsl::unread_matches(d, name); }))
      out.push_back(name);
  return out;
}

std::string summarize_tensors(const std::vector<std::string>& names, size_t groups) {
  // Groups in the order their first name comes.
  std::vector<std::pair<std::string, std::vector<const std::string*>>> by;
  std::unordered_map<std::string, size_t> index;
  for (const auto& n : names) {
    std::string key = folded(n);
    auto [it, fresh] = index.emplace(key, by.size());
    if (fresh) by.push_back({std::move(key), {}});
    by[it->second].second.push_back(&n);
  }
  std::string out;
  size_t shown = 0;
  for (size_t k = 0; k < by.size() && k < groups; ++k) {
    const auto& [key, members] = by[k];
    out += (k ? ", " : "") + (members.size() == 1 ? *members[0] : key + " (" + std::to_string(members.size()) + ")");
    shown += members.size();
  }
  if (shown < names.size()) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace arch
