#include "engine/runtime/bind.h"

#include <set>

#include "engine/core/quant.h"

namespace arch {

Result<std::vector<Tensor>> bind_weights(const Graph& g, const Checkpoint& ckpt) {
  std::vector<Tensor> by_value(g.values.size());
  for (const auto& w : g.weights) {
    const Tensor* t = ckpt.find(w.tensor);
    std::string what = "tensor '" + w.tensor + "'" +
                       (w.declared_as.empty() ? "" : " (read as " + w.declared_as + ")");
    // Which op reads it, through which blocks: an imported template's line
    // alone does not say which family's call led there.
    const std::string read = w.read_at.empty() ? "" : "\n  read by " + w.read_at;
    if (!t)
      return error(ckpt.dir + ": the checkpoint lacks " + what + ", which the template needs (declared at " +
                   str(w.loc) + ")" + read);
    Dims want = concretize(g.values[w.value].type.shape, 0);
    Tensor part;
    if (!w.part.is_whole()) {
      // This process's share of it (a graph split over several): the shape
      // checked is the whole tensor's, with the part's axis at full size.
      auto cut = tensor_part(*t, w.part);
      if (!cut.ok())
        return error(ckpt.dir + ": " + what + ", " + part_str(w.part) + ": " + cut.error().message + read);
      part = std::move(cut).value();
      want[size_t(w.part.axis)] = t->shape.size() > size_t(w.part.axis) ? t->shape[size_t(w.part.axis)] : 0;
    }
    if (t->shape != want) {
      std::string file = ckpt.tensor_file.count(w.tensor) ? ckpt.tensor_file.at(w.tensor) : ckpt.dir;
      return error(w.tensor + (w.declared_as.empty() ? "" : " (read as " + w.declared_as + ")") + " is " +
                   dims_str(t->shape) + " in the checkpoint (" + file + "); the template needs " + dims_str(want) +
                   " (declared at " + str(w.loc) + ", from the config)" + read);
    }
    if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16 && !is_block_quantized(t->dtype))
      return error(ckpt.dir + ": " + what + " is " + std::string(dtype_name(t->dtype)) +
                   "; weights must be F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K");
    by_value[w.value] = w.part.is_whole() ? *t : part;  // as stored: the program widens what its kernels can't read
  }
  return by_value;
}

std::vector<std::string> unread_tensors(const std::vector<const Graph*>& graphs, const Checkpoint& ckpt) {
  std::set<std::string> read;
  for (const Graph* g : graphs)
    for (const auto& w : g->weights) read.insert(w.tensor);
  std::vector<std::string> out;
  for (const auto& [name, t] : ckpt.tensors)
    if (!read.count(name)) out.push_back(name);
  return out;
}

}  // namespace arch
