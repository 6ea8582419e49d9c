// torch.save files (pytorch_model.bin), read without running them. Two
// layouts:
//  - zip (torch >= 1.6's default): <folder>/data.pkl, the pickled object,
//    and <folder>/data/<key>, each storage's raw little-endian bytes, stored
//    uncompressed (zip_archive.h); <folder>/byteorder, if there, must say
//    "little". The folder's name varies ("archive", "pytorch_model").
//  - legacy (_use_new_zipfile_serialization=False, and torch < 1.6): one
//    pickle after another - the magic number, the protocol version (1001),
//    sys_info, the object, the list of storage keys - then, for each key in
//    that order, an int64 element count and the storage's raw bytes.
// The pickles run on the restricted machine of pickle_machine.h: a global
// other than the few a state dict is made of refuses the file by name.
//
// Which dict holds the tensors: the pickled object must be a dict. If it
// holds a tensor itself, it is the state dict (transformers' .bin files);
// else the first of its values under "state_dict", "model_state_dict",
// "model", "module" that is a dict holding a tensor (training checkpoints).
// In the state dict, values that are not tensors (a "_metadata" entry, a
// step count) are skipped.
//
// Tensors are views of the mapped file (owner = the mapping, mapped = true).
// A storage whose bytes are misaligned for its type (the legacy layout packs
// them) is copied once into aligned memory, and its tensors view the copy;
// a strided tensor is copied into a contiguous one. The copies together may
// not pass twice the file's size: a checkpoint's tensors do not repeat its
// bytes, and a small file must not make huge ones (a stride of 0).
//
//   ARCH_TRY(TorchFile f, read_torch_file("pytorch_model.bin"));
//   const Tensor& wq = f.tensors.at("model.layers.0.self_attn.q_proj.weight");
#pragma once

#include <map>
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct TorchFile {
  std::string path;
  std::map<std::string, Tensor> tensors;
};

// Errors name the file, the pickle (with the opcode's byte offset) or the
// zip entry, and the tensor where one is concerned.
Result<TorchFile> read_torch_file(const std::string& path);

}  // namespace arch
