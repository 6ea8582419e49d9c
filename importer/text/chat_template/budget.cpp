#include "importer/text/chat_template/budget.h"

#include <algorithm>
#include <limits>

#include "engine/core/limits.h"

namespace arch::jinja {

namespace {

thread_local RenderBudget* active = nullptr;

// over_limit takes an int64; a product past it is reported as the largest.
int64_t clamp(uint64_t v) {
  return v > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : int64_t(v);
}

uint64_t product(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}

}  // namespace

RenderBudget::RenderBudget()
    : text_bytes(limit("chat_text_bytes")),
      iterations(limit("chat_iterations")),
      depth(limit("chat_depth")),
      memory_bytes(limit("chat_memory_bytes")),
      previous_(active) {
  active = this;
}

RenderBudget::~RenderBudget() { active = previous_; }

uint64_t text_cap() { return uint64_t(active ? active->text_bytes : limit("chat_text_bytes")); }

int64_t depth_cap() { return active ? active->depth : limit("chat_depth"); }

std::shared_ptr<std::atomic<int64_t>> held_meter() { return active ? active->held : nullptr; }

Error text_over(uint64_t bytes, std::string_view what) {
  return over_limit("chat_text_bytes", "", std::string(what), clamp(bytes));
}

namespace {

// chat_memory_bytes: `bytes` more beside what the render holds. `what`
// follows `prefix` in the message (joined only when it is needed).
Status check_held(uint64_t bytes, const char* prefix, std::string_view what) {
  if (!active) return {};
  const uint64_t held = uint64_t(std::max<int64_t>(0, active->held->load(std::memory_order_relaxed)));
  uint64_t total;
  if (__builtin_add_overflow(held, bytes, &total)) total = std::numeric_limits<uint64_t>::max();
  if (total <= uint64_t(active->memory_bytes)) return {};
  return over_limit("chat_memory_bytes", "",
                    std::string(prefix).append(what) + " with the " + std::to_string(held) + " bytes the render's strings and lists hold",
                    clamp(total));
}

}  // namespace

Status check_text(uint64_t bytes, std::string_view what) {
  if (bytes > text_cap()) return text_over(bytes, what);
  return check_held(bytes, "", what);
}

Status check_text_sum(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) sum = std::numeric_limits<uint64_t>::max();
  return check_text(sum, what);
}

Status check_text_repeat(uint64_t each, uint64_t n, std::string_view what) {
  return check_text(product(each, n), what);
}

Status check_items(uint64_t n, std::string_view what) {
  uint64_t bytes = product(n, kItemBytes);
  if (bytes <= text_cap()) return check_held(bytes, "the size in bytes of ", what);
  return text_over(bytes, "the size in bytes of " + std::string(what) + ", " + std::to_string(n) + " items at " +
                              std::to_string(kItemBytes) + " bytes");
}

Status check_list(uint64_t n, uint64_t string_bytes, std::string_view what) {
  const uint64_t slots = product(n, kItemBytes);
  uint64_t bytes = slots;
  if (__builtin_add_overflow(bytes, string_bytes, &bytes)) bytes = std::numeric_limits<uint64_t>::max();
  // Held: the slots; the strings are shared, already held.
  if (bytes <= text_cap()) return check_held(slots, "the size in bytes of ", what);
  return text_over(bytes, "the size in bytes of " + std::string(what) + ", " + std::to_string(n) + " items at " +
                              std::to_string(kItemBytes) + " bytes and the " + std::to_string(string_bytes) +
                              " bytes of the strings it holds");
}

Status count_iterations(uint64_t n, std::string_view what) {
  if (!active) return check_limit("chat_iterations", clamp(n), "", std::string(what));
  uint64_t used = uint64_t(active->iterations_used) + n;
  if (used < n || used > uint64_t(active->iterations)) return over_limit("chat_iterations", "", std::string(what), clamp(used));
  active->iterations_used = int64_t(used);
  return {};
}

Status check_length(uint64_t n, std::string_view what) {
  int64_t cap = active ? active->iterations : limit("chat_iterations");
  if (n <= uint64_t(cap)) return {};
  return over_limit("chat_iterations", "", std::string(what), clamp(n));
}

Status check_depth(int64_t depth, std::string_view what) {
  if (depth <= depth_cap()) return {};
  return over_limit("chat_depth", "", std::string(what), depth);
}

}  // namespace arch::jinja
