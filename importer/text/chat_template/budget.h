// What one render may spend, from the named limits of engine/core/limits.h:
//   chat_text_bytes  the size of any string the template makes (its output
//                    included), of any list it makes, counted at kItemBytes
//                    an item (with the strings it holds, for '*' and '+'),
//                    and of the strings a filter makes and keeps one per
//                    item (map, sort keys);
//   chat_iterations  loop iterations over the whole render, and the length
//                    of one range();
//   chat_depth       nesting: blocks and expressions when parsing, and
//                    evaluation frames (blocks, expressions, macro calls)
//                    when rendering.
//   chat_memory_bytes what the render's strings and lists hold at once
//                    (list slots at kItemBytes; shared strings once): each
//                    check above also asks whether the new bytes fit
//                    beside what is held, so that many variables of
//                    allowed size cannot add up without end.
// Every check runs before the allocation or the work it guards, and fails
// with core's over_limit message; the interpreter adds the position. What
// is checked is named by a view: the text is only copied into a message
// when a check fails (the checks run per string made and per iteration).
//
// The limits are read once when a render starts (RenderBudget) and reached
// through the rendering thread, so filters, operators and methods need no
// context argument. Outside a render the values in force are read directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace arch::jinja {

// What a list item is reckoned to cost: its slot (a Value) and a small value
// behind it (a one-character string, a boxed string).
constexpr uint64_t kItemBytes = 64;

// Installs the limits in force for the render on this thread; the previous
// ones come back when it ends (a render inside a render is not expected, but
// stays correct).
class RenderBudget {
 public:
  RenderBudget();
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  int64_t text_bytes, iterations, depth, memory_bytes;
  int64_t iterations_used = 0;
  // Bytes the render's boxes hold now: shared with each box, which takes
  // its bytes off when freed, whenever that is.
  std::shared_ptr<std::atomic<int64_t>> held = std::make_shared<std::atomic<int64_t>>(0);

 private:
  RenderBudget* previous_;
};

// chat_text_bytes in force.
uint64_t text_cap();
// chat_depth in force.
int64_t depth_cap();

// chat_text_bytes: a string of `bytes` is about to be made; `what` names it
// ("the string '+' makes").
Status check_text(uint64_t bytes, std::string_view what);
// a + b bytes, and `each` bytes `n` times, without overflowing.
Status check_text_sum(uint64_t a, uint64_t b, std::string_view what);
Status check_text_repeat(uint64_t each, uint64_t n, std::string_view what);
// chat_text_bytes: a list of `n` items (kItemBytes each) is about to be made.
Status check_items(uint64_t n, std::string_view what);
// chat_text_bytes: a list of `n` items holding `string_bytes` of strings
// directly. The strings count even where they are shared: repeating or
// concatenating lists is how a template accumulates text, and a list
// holding more text than the limit cannot be printed anyway.
Status check_list(uint64_t n, uint64_t string_bytes, std::string_view what);
// The error for a string that has already passed the cap (a builder that
// stops as soon as it does).
Error text_over(uint64_t bytes, std::string_view what);

// The meter of the render on this thread, or null outside a render: a box
// (a string, a list) made now adds its bytes to it and must take them off
// when freed (value.cpp).
std::shared_ptr<std::atomic<int64_t>> held_meter();

// chat_iterations: `n` more iterations of the render's loops.
Status count_iterations(uint64_t n, std::string_view what);
// chat_iterations: one sequence of `n` items (a range) is about to be made.
Status check_length(uint64_t n, std::string_view what);

// chat_depth: `depth` levels are about to be entered.
Status check_depth(int64_t depth, std::string_view what);

}  // namespace arch::jinja
