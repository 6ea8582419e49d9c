#include "importer/checkpoint/fp8_weights.h"

#include <string>
#include <vector>

#include "importer/checkpoint/fp8_blocks.h"

namespace arch {

namespace {

constexpr const char* kScaleSuffix = "_scale_inv";

bool is_fp8(DType t) { return t == DType::F8_E4M3 || t == DType::F8_E5M2; }
bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

bool is_scale_name(const std::string& name) {
  const std::string suffix = kScaleSuffix;
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "FILE: tensor 'NAME'", as the checkpoint's other messages say it.
std::string where(const Checkpoint& ckpt, const std::string& name) {
  auto file = ckpt.tensor_file.find(name);
  return (file == ckpt.tensor_file.end() ? ckpt.dir : file->second) + ": tensor '" + name + "'";
}

// BF16 where every other float the checkpoint holds is BF16, else F32.
DType target_type(const Checkpoint& ckpt) {
  bool any = false;
  for (const auto& [name, t] : ckpt.tensors) {
    if (is_fp8(t.dtype) || !is_float(t.dtype) || is_scale_name(name)) continue;
    if (t.dtype != DType::BF16) return DType::F32;
    any = true;
  }
  return any ? DType::BF16 : DType::F32;
}

}  // namespace

Status dequantize_fp8_weights(Checkpoint& ckpt) {
  std::vector<std::string> fp8;
  for (const auto& [name, t] : ckpt.tensors) {
    if (is_fp8(t.dtype)) fp8.push_back(name);
    if (!is_scale_name(name)) continue;
    const std::string scaled = name.substr(0, name.size() - std::string(kScaleSuffix).size());
    const Tensor* base = ckpt.find(scaled);
    if (base && !is_fp8(base->dtype))
      return error(where(ckpt, name) + " holds block scales for '" + scaled + "', which is " +
                   std::string(dtype_name(base->dtype)) + ", not FP8: what its values mean would be a guess");
  }
  if (fp8.empty()) return {};

  const std::string config_where = ckpt.dir + ": config.json";
  ARCH_TRY(Fp8Blocks blocks, fp8_block_size(ckpt.config, config_where));
  const DType to = target_type(ckpt);
  // Another method's FP8 (per-channel or per-tensor scales: fbgemm,
  // compressed-tensors) means something else by its tensors: refused by name.
  std::string method;
  if (auto q = ckpt.config.find("quantization_config"); q != ckpt.config.end() && q->is_object())
    if (auto m = q->find("quant_method"); m != q->end() && m->is_string()) method = m->get<std::string>();
  if (!method.empty() && method != "fp8")
    return error(config_where + ": quantization_config.quant_method is '" + method + "' over FP8 tensors ('" +
                 fp8.front() + "', ...); what loads is block-scaled FP8 as DeepSeek-V3 stores it, quant_method 'fp8'");

  for (const std::string& name : fp8) {
    const std::string scale_name = name + kScaleSuffix;
    Tensor& x = ckpt.tensors.at(name);
    const Tensor* scale = ckpt.find(scale_name);
    const std::string scale_where = scale ? where(ckpt, scale_name) : "tensor '" + scale_name + "' beside it";
    ARCH_TRY(Tensor wide, dequantize_fp8(x, scale, blocks, to, where(ckpt, name), scale_where));
    release_pages(x);  // the codes are read once; their mapped pages need not stay resident
    x = std::move(wide);
    if (scale) {
      release_pages(*scale);
      ckpt.tensors.erase(scale_name);
      ckpt.tensor_file.erase(scale_name);
    }
  }
  if (method == "fp8") ckpt.config.erase("quantization_config");
  return {};
}

}  // namespace arch
