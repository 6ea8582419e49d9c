// A restricted unpickler for torch.save's pickles: a small stack machine
// that builds inert values (numbers, strings, tuples, lists, dicts) and
// nothing else. It never imports or calls anything: a GLOBAL must name one of
// the few things a tensor state dict is made of or the pickle is refused by
// that name, and REDUCE and BINPERSID make only the fixed objects of
// torch_objects.h. Only the opcodes torch.save writes (protocols 2 to 5) are
// run; any other is refused by name. Every count, length, memo id and stack
// depth is checked against the bytes there are.
//
// Objects live in one table and refer to each other by index, so a pickle
// that makes a list hold itself makes no ownership cycle and nothing here
// recurses.
//
//   ARCH_TRY(Pickle p, unpickle(bytes, 0, path + ": archive/data.pkl"));
//   if (p.at(p.root).kind == Kind::Dict) ... p.items(p.root) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch::pickle {

enum class Kind : uint8_t {
  None,
  Bool,
  Int,     // what fits int64
  BigInt,  // a longer LONG1 / LONG4: its little-endian two's-complement bytes (the legacy magic number)
  Float,
  Str,  // unicode, or a Python 2 str
  Bytes,
  Tuple,
  List,
  Dict,     // a dict or an OrderedDict: its pairs as set, in order (a key set again appears again)
  Global,   // an allow-listed name
  Storage,  // a persistent id ('storage', type, key, location, numel)
  Tensor,   // what _rebuild_tensor_v2 / _rebuild_parameter make
};
std::string_view kind_name(Kind kind);

// What an allow-listed global stands for (torch_objects.h).
enum class Callable : uint8_t { OrderedDict, RebuildTensorV2, RebuildTensor, RebuildParameter, StorageType };

using Ref = uint32_t;

struct Object {
  Kind kind = Kind::None;
  Callable callable = Callable::OrderedDict;  // Global
  DType dtype = DType::F32;                   // Global of a storage type
  int64_t number = 0;                         // Bool (0, 1), Int
  double real = 0;                            // Float
  uint32_t index = 0;  // into Pickle's strings (Str, Bytes, BigInt, Global's name), lists (Tuple, List,
                       // Dict), storages or tensors
};

struct StorageInfo {
  DType dtype = DType::F32;
  std::string type_name;  // "torch.FloatStorage"
  std::string key;        // the archive's data/<key>, or the legacy file's storage key
  int64_t numel = 0;      // elements of dtype
};

struct TensorInfo {
  Ref storage = 0;     // a Storage object
  int64_t offset = 0;  // in elements
  Dims shape, stride;  // stride in elements, as torch gives it
};

struct Pickle {
  std::vector<Object> objects;
  std::vector<std::string> strings;
  std::vector<std::vector<Ref>> lists;  // a Dict's: key, value, key, value, ...
  std::vector<StorageInfo> storages;
  std::vector<TensorInfo> tensors;
  Ref root = 0;      // what STOP returned
  uint64_t end = 0;  // the byte after STOP
  // Bytes the objects' copies may take: a few bytes of a memoised REDUCE
  // rebuild a 64-dim tensor (1 KB) each time; 16 per byte of pickle keeps
  // a 100 MB pickle under 1.6 GB however it repeats itself.
  uint64_t allowance = 0, spent = 0;
  bool spend(uint64_t n) { return (spent += n) <= allowance; }

  const Object& at(Ref r) const { return objects[r]; }
  const std::string& str(Ref r) const { return strings[objects[r].index]; }  // Str, Bytes, BigInt, Global
  const std::vector<Ref>& items(Ref r) const { return lists[objects[r].index]; }
  const StorageInfo& storage(Ref r) const { return storages[objects[r].index]; }
  const TensorInfo& tensor(Ref r) const { return tensors[objects[r].index]; }

  // New objects (the machine's, and torch_objects.h's).
  Ref add(Kind kind, int64_t number = 0);
  Ref add_string(Kind kind, std::string s);
  Ref add_list(Kind kind, std::vector<Ref> items = {});
  Ref add_storage(StorageInfo s);
  Ref add_tensor(TensorInfo t);
  // "an int", "a dict", "None", "global 'collections.OrderedDict'": for messages.
  std::string describe(Ref r) const;
};

// A name from the file, fit for a message: control bytes escaped, and cut.
std::string printable(std::string_view s);

// Runs the pickle starting at bytes[start] up to its STOP. `where` starts
// every error ("model.bin: archive/data.pkl"), which goes on with the byte
// offset (within `bytes`) of the opcode at fault.
Result<Pickle> unpickle(std::span<const std::byte> bytes, uint64_t start, const std::string& where);

}  // namespace arch::pickle
