// A GGUF file's bytes, for tests: metadata of the few value types tests
// need, F32 tensors, data aligned to 32.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace arch::testing {

class GgufWriter {
 public:
  void u32(const std::string& key, uint32_t v) { kv(key, 4).raw(&v, 4); }
  void f32(const std::string& key, float v) { kv(key, 6).raw(&v, 4); }
  void boolean(const std::string& key, bool v) { kv(key, 7).raw(&v, 1); }
  void str(const std::string& key, const std::string& v) { kv(key, 8).string(v); }
  void strings(const std::string& key, const std::vector<std::string>& v) {
    kv(key, 9).u32v(8).u64v(v.size());
    for (const auto& s : v) string(s);
  }
  void floats(const std::string& key, const std::vector<float>& v) {
    kv(key, 9).u32v(6).u64v(v.size()).raw(v.data(), v.size() * 4);
  }
  void ints(const std::string& key, const std::vector<int32_t>& v) {
    kv(key, 9).u32v(5).u64v(v.size()).raw(v.data(), v.size() * 4);
  }
  // dims innermost first, as GGUF stores them (a [rows, cols] matrix: {cols, rows}).
  void tensor(const std::string& name, std::vector<uint64_t> ne, const float* values) {
    size_t n = 1;
    for (uint64_t d : ne) n *= d;
    tensors_.push_back({name, std::move(ne), std::string(reinterpret_cast<const char*>(values), n * 4)});
  }

  std::string bytes() const {
    GgufWriter out;
    out.raw("GGUF", 4).u32v(3).u64v(tensors_.size()).u64v(kvs_);
    out.buf_ += buf_;
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      out.string(t.name).u32v(uint32_t(t.ne.size()));
      for (uint64_t d : t.ne) out.u64v(d);
      out.u32v(0).u64v(offset);
      offset += (t.data.size() + 31) / 32 * 32;
    }
    out.buf_.resize((out.buf_.size() + 31) / 32 * 32, '\0');
    for (const auto& t : tensors_) {
      out.buf_ += t.data;
      out.buf_.resize((out.buf_.size() + 31) / 32 * 32, '\0');
    }
    return out.buf_;
  }

 private:
  struct Entry {
    std::string name;
    std::vector<uint64_t> ne;
    std::string data;
  };
  GgufWriter& raw(const void* p, size_t n) {
    buf_.append(static_cast<const char*>(p), n);
    return *this;
  }
  GgufWriter& u32v(uint32_t v) { return raw(&v, 4); }
  GgufWriter& u64v(uint64_t v) { return raw(&v, 8); }
  GgufWriter& string(const std::string& s) { return u64v(s.size()).raw(s.data(), s.size()); }
  GgufWriter& kv(const std::string& key, uint32_t type) {
    ++kvs_;
    return string(key).u32v(type);
  }

  std::string buf_;
  uint64_t kvs_ = 0;
  std::vector<Entry> tensors_;
};

}  // namespace arch::testing
