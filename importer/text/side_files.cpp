#include "importer/text/side_files.h"

#include <filesystem>

#include "engine/core/mapped_file.h"

namespace arch {

ReadSideFile side_files_in(const std::string& dir) {
  return [dir](const std::string& name) -> Result<std::optional<std::string>> {
    const std::string path = dir + "/" + name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::optional<std::string>();
    ARCH_TRY(auto file, MappedFile::open(path));
    return std::optional<std::string>(std::string(file->text()));
  };
}

}  // namespace arch
