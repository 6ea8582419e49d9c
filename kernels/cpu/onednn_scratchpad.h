// oneDNN's scratchpad given by the caller (scratchpad_mode::user), per
// calling thread: the library-managed one belongs to the thread that made
// the primitive, so a primitive made on one thread and executed on another
// (a server's handler after the main thread) read memory that was not its
// own and crashed in oneDNN's worker threads.
#pragma once

#include <cstdlib>
#include <memory>

#include <dnnl.hpp>

namespace arch {

// An attribute with the user scratchpad set: every primitive made with one.
inline dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr attr = {}) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// This thread's scratchpad memory for `desc` (grown, never shrunk; 64-byte aligned).
inline dnnl::memory scratchpad(const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buf;
  const size_t need = desc.get_size();
  if (need > buf.size) {
    std::free(buf.data);
    buf.size = (need + 63) / 64 * 64;
    buf.data = std::aligned_alloc(64, buf.size);
  }
  return dnnl::memory(desc, engine, need ? buf.data : nullptr);
}

}  // namespace arch
