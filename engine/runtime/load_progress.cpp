#include "engine/runtime/load_progress.h"

#include <algorithm>

namespace arch {

namespace {

thread_local const LoadProgress* t_progress = nullptr;
thread_local int64_t t_total = 0, t_read = 0;

}  // namespace

LoadProgressScope::LoadProgressScope(const LoadProgress& progress, int64_t total_bytes)
    : saved_progress_(t_progress), saved_total_(t_total), saved_read_(t_read) {
  t_progress = progress ? &progress : nullptr;
  t_total = total_bytes;
  t_read = 0;
  if (t_progress) (*t_progress)(0, t_total);
}

LoadProgressScope::~LoadProgressScope() {
  t_progress = saved_progress_;
  t_total = saved_total_;
  t_read = saved_read_;
}

void weights_read(int64_t bytes) {
  if (!t_progress) return;
  t_read = std::min(t_total, t_read + bytes);
  (*t_progress)(t_read, t_total);
}

}  // namespace arch
