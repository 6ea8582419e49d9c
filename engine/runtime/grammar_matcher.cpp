#include "engine/runtime/grammar_matcher.h"

#include <algorithm>

namespace arch {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  alts_.resize(g_->rules.size());
  for (size_t r = 0; r < g_->rules.size(); ++r)
    for (const auto& alt : g_->rules[r].alternatives) {
      auto a = alt;
      a.push_back(end_);
      alts_[r].push_back(std::move(a));
    }
  for (const auto& alt : alts_[size_t(g_->root)]) expand({&alt[0]}, state_.stacks);
  std::sort(state_.stacks.begin(), state_.stacks.end());
  state_.stacks.erase(std::unique(state_.stacks.begin(), state_.stacks.end()), state_.stacks.end());
}


// Until the top of the stack is a code-point set: an alternative's end
// pops back to what follows it, a rule reference opens each of the rule's
// alternatives (the grammar has no left recursion, so this ends).
void GrammarMatcher::expand(std::vector<const GrammarElement*> stack,
                            std::vector<std::vector<const GrammarElement*>>& out) const {
  for (;;) {
    if (stack.empty()) {
      out.push_back(std::move(stack));  // a whole sentence
      return;
    }
    const GrammarElement* top = stack.back();
    if (!top->is_rule && top->ranges.empty() && !top->negated) {  // an alternative's end (or an empty set)
      stack.pop_back();
      continue;
    }
    if (!top->is_rule) {
      out.push_back(std::move(stack));
      return;
    }
    stack.back() = top + 1;  // what follows the reference, once the rule is matched
    // Nothing follows (a reference last in its alternative, as x* writes
    // R ::= x R): drop it, so a repetition does not deepen the stack at
    // each match and a string's state recurs.
    if (!stack.back()->is_rule && stack.back()->ranges.empty() && !stack.back()->negated) stack.pop_back();
    const auto& alts = alts_[size_t(top->rule)];
    for (size_t a = 0; a + 1 < alts.size(); ++a) {
      auto branch = stack;
      branch.push_back(&alts[a][0]);
      expand(std::move(branch), out);
    }
    stack.push_back(&alts.back()[0]);
  }
}

namespace {

// Whether some code point in [lo, hi] is in e's set.
bool meets(const GrammarElement& e, char32_t lo, char32_t hi) {
  if (!e.negated) {
    for (const auto& [a, b] : e.ranges)
      if (a <= hi && b >= lo) return true;
    return false;
  }
  // Negated: some point of [lo, hi] outside every range.
  std::vector<std::pair<char32_t, char32_t>> r = e.ranges;
  std::sort(r.begin(), r.end());
  char32_t at = lo;
  for (const auto& [a, b] : r) {
    if (b < at) continue;
    if (a > at) return true;
    if (b >= hi) return false;
    at = b + 1;
  }
  return at <= hi;
}

}  // namespace

GrammarMatcher::State GrammarMatcher::step_byte(const State& from, unsigned char b) const {
  State to;
  char32_t c = 0;
  // A character part-read: the stacks whose next set holds some code
  // point starting with these bytes.
  // The smallest code point of an n-byte sequence (shorter forms are not UTF-8).
  auto partial = [&](char32_t bits, int need, char32_t floor) {
    const char32_t lo = std::max(char32_t(bits << (6 * need)), floor), hi = (bits << (6 * need)) | ((char32_t(1) << (6 * need)) - 1);
    to.floor = floor;
    if (lo > hi) return to;
    for (const auto& stack : from.stacks)
      if (!stack.empty() && meets(*stack.back(), lo, hi)) to.stacks.push_back(stack);
    to.partial = bits;
    to.need = need;
    return to;
  };
  if (from.need == 0) {
    if (b < 0x80) {
      c = b;
    } else {
      // A lead byte (0xC2-0xF4; 0xC0, 0xC1 and past 0xF4 are never UTF-8).
      const int n = b >= 0xF5 ? -1 : b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC2 ? 1 : -1;
      if (n < 0) return to;
      return partial(b & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07), n, n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000);
    }
  } else {
    if ((b & 0xC0) != 0x80) return to;
    c = (from.partial << 6) | (b & 0x3F);
    if (from.need > 1) return partial(c, from.need - 1, from.floor);
    if (c < from.floor || c > 0x10FFFF) return to;
  }
  for (const auto& stack : from.stacks) {
    if (stack.empty() || !stack.back()->matches(c)) continue;
    auto next = stack;
    next.back() = stack.back() + 1;
    expand(std::move(next), to.stacks);
  }
  std::sort(to.stacks.begin(), to.stacks.end());
  to.stacks.erase(std::unique(to.stacks.begin(), to.stacks.end()), to.stacks.end());
  return to;
}

GrammarMatcher::State GrammarMatcher::advanced(const State& from, std::string_view bytes) const {
  State s = from;
  for (unsigned char b : bytes) {
    s = step_byte(s, b);
    if (s.dead()) break;
  }
  return s;
}

bool GrammarMatcher::accept(std::string_view bytes) {
  State s = advanced(state_, bytes);
  if (s.dead()) return false;
  state_ = std::move(s);
  return true;
}

bool GrammarMatcher::complete(const State& s) {
  if (s.need != 0) return false;
  for (const auto& stack : s.stacks)
    if (stack.empty()) return true;
  return false;
}

TokenTrie::TokenTrie(const std::vector<std::string>& bytes) {
  // Built as nodes with their own lists, then laid out flat in depth-first order.
  struct Node {
    std::vector<std::pair<unsigned char, int>> next;  // by byte, ascending
    std::vector<int32_t> tokens;
  };
  std::vector<Node> nodes(1);
  for (size_t id = 0; id < bytes.size(); ++id) {
    if (bytes[id].empty()) continue;
    int at = 0;
    for (unsigned char b : bytes[id]) {
      auto& next = nodes[size_t(at)].next;
      auto it = std::lower_bound(next.begin(), next.end(), std::pair<unsigned char, int>{b, -1});
      if (it == next.end() || it->first != b) {
        const int made = int(nodes.size());
        it = next.insert(it, {b, made});
        nodes.emplace_back();
        at = made;
      } else {
        at = it->second;
      }
    }
    nodes[size_t(at)].tokens.push_back(int32_t(id));
  }
  std::vector<uint32_t> order(nodes.size()), number(nodes.size());
  size_t n = 0;
  std::vector<int> todo{0};
  while (!todo.empty()) {
    const int at = todo.back();
    todo.pop_back();
    number[size_t(at)] = uint32_t(n);
    order[n++] = uint32_t(at);
    for (auto it = nodes[size_t(at)].next.rbegin(); it != nodes[size_t(at)].next.rend(); ++it) todo.push_back(it->second);
  }
  edge_begin_.reserve(n + 1), token_begin_.reserve(n + 1);
  for (size_t k = 0; k < n; ++k) {
    const Node& node = nodes[order[k]];
    edge_begin_.push_back(uint32_t(edge_byte_.size()));
    token_begin_.push_back(uint32_t(tokens_.size()));
    for (const auto& [b, child] : node.next) edge_byte_.push_back(b), edge_to_.push_back(number[size_t(child)]);
    tokens_.insert(tokens_.end(), node.tokens.begin(), node.tokens.end());
  }
  edge_begin_.push_back(uint32_t(edge_byte_.size()));
  token_begin_.push_back(uint32_t(tokens_.size()));
}

int GrammarStates::intern(const GrammarMatcher::State& s) {
  std::string key;
  key.reserve(64);
  auto put = [&](uint64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(uint64_t(s.partial) | (uint64_t(s.need) << 32)), put(s.floor);
  for (const auto& stack : s.stacks) {
    put(stack.size());
    for (const GrammarElement* e : stack) put(reinterpret_cast<uintptr_t>(e));
  }
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  if (states_.size() >= max_states_) {  // bounded: start again (ids handed out before are no longer good)
    ids_.clear();
    states_.clear();
    next_.clear();
    ++generation_;
  }
  const int id = int(states_.size());
  ids_.emplace(std::move(key), id);
  states_.push_back(s);
  next_.emplace_back();
  next_.back().fill(-2);
  return id;
}

int GrammarStates::next(int id, unsigned char b) {
  int& to = next_[size_t(id)][b];
  if (to != -2) return to;
  GrammarMatcher::State s = m_.advanced(states_[size_t(id)], std::string_view(reinterpret_cast<const char*>(&b), 1));
  const size_t before = states_.size();
  const int made = s.dead() ? -1 : intern(s);
  if (states_.size() < before) return made;  // the table started again: `to` is gone
  next_[size_t(id)][b] = made;
  return made;
}

size_t TokenTrie::allowed(GrammarStates& states, const GrammarMatcher::State& from, std::vector<char>& allowed,
                          size_t* visited) const {
  size_t count = 0, walked = 0;
  bool restarted = false;
  // Depth first, each node's state the one its byte leads to from its parent's.
  std::vector<std::pair<int, int>> todo;  // node, state
  todo.push_back({0, states.intern(from)});
  while (!todo.empty()) {
    const auto [node, sid] = todo.back();
    todo.pop_back();
    for (uint32_t e = edge_begin_[size_t(node)]; e < edge_begin_[size_t(node) + 1]; ++e) {
      const uint32_t child = edge_to_[e];
      const size_t before = states.size();
      const int to = states.next(sid, edge_byte_[e]);
      ++walked;
      if (states.size() < before) {  // the table started again: walk again from the start, once
        std::fill(allowed.begin(), allowed.end(), 0);
        if (restarted) break;
        restarted = true, count = 0, walked = 0;
        todo.assign(1, {0, states.intern(from)});
        break;
      }
      if (to < 0) continue;
      for (uint32_t t = token_begin_[child]; t < token_begin_[child + 1]; ++t) {
        const int32_t id = tokens_[t];
        if (size_t(id) < allowed.size() && !allowed[size_t(id)]) allowed[size_t(id)] = 1, ++count;
      }
      if (edge_begin_[child + 1] > edge_begin_[child]) todo.push_back({int(child), to});
    }
  }
  if (visited) *visited = walked;
  return count;
}

}  // namespace arch
