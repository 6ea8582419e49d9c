// Generated text let out as it comes, held back while it could still be the
// beginning of a stop string, and ended at the first stop string, which is
// not let out (as the OpenAI API's `stop` does).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace arch::serve {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // The text `piece` lets out (all of it, but for what may begin a stop).
  std::string push(std::string_view piece);
  // What was held back, once the text is over without a stop.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace arch::serve
