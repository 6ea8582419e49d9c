// oneDNN's scratchpad given by the caller (scratchpad_mode::user), per
// calling thread; and the reorders into a primitive's layouts the
// convolutions share. With the library's own, a primitive made on one thread
// and executed on another crashed in oneDNN's worker threads (a voice's
// convolutions, made on the main thread, run again for a server's request
// on a handler thread); a cached primitive may be run from any thread.
#pragma once

#include <cstdlib>

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

// `buf` (a thread's, grown, never shrunk) as memory of layout `desc`.
inline dnnl::memory scratch_memory(dnnl::memory& buf, const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  if (!buf || buf.get_desc().get_size() < desc.get_size()) buf = dnnl::memory(desc, engine);
  return dnnl::memory(desc, engine, buf.get_data_handle());
}

// A tensor stored as `plain` in the layout a primitive reads (`want`): the
// tensor itself where they agree, else reordered into `buf`.
inline dnnl::memory in_layout(const dnnl::memory::desc& plain, const dnnl::memory::desc& want, const void* data,
                              dnnl::memory& buf, const dnnl::engine& engine, dnnl::stream& stream) {
  dnnl::memory given(plain, engine, const_cast<void*>(data));
  if (plain == want) return given;
  dnnl::memory m = scratch_memory(buf, want, engine);
  dnnl::reorder(given, m).execute(stream, given, m);
  return m;
}

}  // namespace arch
