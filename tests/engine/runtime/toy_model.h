// The toy checkpoint (importer/checkpoint/toy_checkpoint.h) written to a scratch
// directory, loaded, and the directory removed (the weights stay mapped).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "engine/runtime/model.h"
#include "importer/checkpoint/toy_checkpoint.h"

namespace arch::testing {

inline std::shared_ptr<Model> load_toy(uint64_t seed, const std::string& backend = "cpu") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("toy_" + std::to_string(seed) + "_" + backend + "_" + std::to_string(getpid()));
  EXPECT_TRUE(write_toy_checkpoint(dir.string(), seed).ok());
  LoadOptions lo;
  lo.backend = backend;
  auto m = load_model(dir.string(), lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  fs::remove_all(dir);
  return m.ok() ? *m : nullptr;
}

}  // namespace arch::testing
