// A scratch file under the temporary directory, removed when it goes out of
// scope: uploads handed to libsndfile, WAVs and PNGs written by the
// writers that take a path, read back for the reply.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace arch::serve {

struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& suffix) {
    static std::atomic<int> n{0};
    path = (std::filesystem::temp_directory_path() /
            ("archrun-serve-" + std::to_string(getpid()) + "-" + std::to_string(n++) + suffix))
               .string();
  }
  ~ScratchFile() { std::remove(path.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  void write(const std::string& bytes) const { std::ofstream(path, std::ios::binary) << bytes; }
  std::string read() const {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

}  // namespace arch::serve
