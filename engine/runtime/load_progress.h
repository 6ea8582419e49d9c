// How far a model's load has got: bytes of the checkpoint's weights read
// and rewritten (merged projections, tiles, F32 copies) out of all of
// them. Weights the kernels take as stored are only mapped at load, so the
// count can stop short of the total; load_model reports the total last.
#pragma once

#include <cstdint>
#include <functional>

namespace arch {

using LoadProgress = std::function<void(int64_t read_bytes, int64_t total_bytes)>;

// While alive (on this thread), weights_read goes to `progress`.
class LoadProgressScope {
 public:
  LoadProgressScope(const LoadProgress& progress, int64_t total_bytes);
  ~LoadProgressScope();
  LoadProgressScope(const LoadProgressScope&) = delete;
  LoadProgressScope& operator=(const LoadProgressScope&) = delete;

 private:
  const LoadProgress* saved_progress_;
  int64_t saved_total_, saved_read_;
};

// `bytes` more of the checkpoint's weights read; nothing outside a scope.
void weights_read(int64_t bytes);

}  // namespace arch
