#include "importer/checkpoint/torch_objects.h"

namespace arch::pickle {

namespace {

// The globals a tensor state dict is made of; nothing else is ever named.
struct Allowed {
  std::string_view module, name;
  Callable callable;
  DType dtype = DType::F32;  // a storage type's element
};
constexpr Allowed kAllowed[] = {
    {"collections", "OrderedDict", Callable::OrderedDict},
    {"torch._utils", "_rebuild_tensor_v2", Callable::RebuildTensorV2},
    {"torch._utils", "_rebuild_tensor", Callable::RebuildTensor},  // torch before 1.0
    {"torch._utils", "_rebuild_parameter", Callable::RebuildParameter},
    {"torch", "FloatStorage", Callable::StorageType, DType::F32},
    {"torch", "HalfStorage", Callable::StorageType, DType::F16},
    {"torch", "BFloat16Storage", Callable::StorageType, DType::BF16},
    {"torch", "DoubleStorage", Callable::StorageType, DType::F64},
    {"torch", "LongStorage", Callable::StorageType, DType::I64},
    {"torch", "IntStorage", Callable::StorageType, DType::I32},
    {"torch", "CharStorage", Callable::StorageType, DType::I8},
    {"torch", "ByteStorage", Callable::StorageType, DType::U8},
    {"torch", "BoolStorage", Callable::StorageType, DType::BOOL},
};
constexpr const char* kStorageTypes =
    "FloatStorage, HalfStorage, BFloat16Storage, DoubleStorage, LongStorage, IntStorage, CharStorage, ByteStorage, "
    "BoolStorage";

// torch's bound on a tensor's dimensions, and far more than its storage
// keys take (numbers: "0", or a legacy file's addresses). Both also keep a
// shape or key that many objects share from costing its length for each.
constexpr size_t kMaxDims = 64, kMaxKeyBytes = 256;
// The most arguments an allow-listed callable takes (_rebuild_tensor_v2's).
constexpr size_t kMaxArgs = 7;

Result<Dims> int_tuple(const Pickle& p, const std::string& name, const char* field, Ref r) {
  if (p.at(r).kind != Kind::Tuple)
    return error(name + "'s " + field + " is " + p.describe(r) + ", expected a tuple of ints");
  if (p.items(r).size() > kMaxDims)
    return error(name + "'s " + field + " has " + std::to_string(p.items(r).size()) + " dimensions, more than " +
                 std::to_string(kMaxDims));
  Dims out;
  for (Ref d : p.items(r)) {
    if (p.at(d).kind != Kind::Int || p.at(d).number < 0) {
      std::string value = p.describe(d);
      if (p.at(d).kind == Kind::Int) value.append(" ").append(std::to_string(p.at(d).number));
      return error(name + "'s " + field + " holds " + value + ", expected non-negative ints");
    }
    out.push_back(p.at(d).number);
  }
  return out;
}

// (storage, offset, size, stride, ...): the tensor's layout, checked for its
// types; whether it fits its storage is checked where its name is known.
Result<Ref> rebuild(Pickle& p, const std::string& name, const std::vector<Ref>& args) {
  if (p.at(args[0]).kind != Kind::Storage)
    return error(name + "'s storage is " + p.describe(args[0]) + ", expected a storage");
  if (p.at(args[1]).kind != Kind::Int || p.at(args[1]).number < 0)
    return error(name + "'s storage offset is " + p.describe(args[1]) + ", expected a non-negative int");
  TensorInfo t;
  t.storage = args[0];
  t.offset = p.at(args[1]).number;
  ARCH_TRY(t.shape, int_tuple(p, name, "size", args[2]));
  ARCH_TRY(t.stride, int_tuple(p, name, "stride", args[3]));
  if (t.stride.size() != t.shape.size())
    return error(name + "'s size " + dims_str(t.shape) + " and stride " + dims_str(t.stride) + " differ in length");
  if (!p.spend(sizeof(TensorInfo) + 16 * t.shape.size()))
    return error(name + ": the pickle rebuilds more tensors than its length allows (" + std::to_string(p.spent) +
                 " bytes of copies; a memoised rebuild repeated)");
  return p.add_tensor(std::move(t));
}

}  // namespace

Result<Ref> torch_global(Pickle& p, std::string module, std::string name) {
  const std::string full = module + "." + name;
  for (const Allowed& a : kAllowed)
    if (a.module == module && a.name == name) {
      Ref r = p.add_string(Kind::Global, full);
      p.objects[r].callable = a.callable;
      p.objects[r].dtype = a.dtype;
      return r;
    }
  if (module == "torch" && name.ends_with("Storage"))
    return error("refuses global '" + printable(full) +
                 "': storages of that type are not read (supported: " + kStorageTypes + ")");
  return error("refuses global '" + printable(full) + "' (loading a checkpoint never runs code)");
}

Result<Ref> torch_reduce(Pickle& p, Ref callable, Ref args_ref) {
  if (p.at(callable).kind != Kind::Global)
    return error("REDUCE calls " + p.describe(callable) + "; only allow-listed globals are called");
  if (p.at(args_ref).kind != Kind::Tuple)
    return error("REDUCE's arguments are " + p.describe(args_ref) + ", expected a tuple");
  const std::string name = p.str(callable);
  // Sized before it is copied (making objects moves the lists): a tuple of
  // a million items, BINGET and REDUCEd a million times, would cost 10^12.
  if (p.items(args_ref).size() > kMaxArgs)
    return error(name + " takes at most " + std::to_string(kMaxArgs) + " arguments, got " +
                 std::to_string(p.items(args_ref).size()));
  const std::vector<Ref> args = p.items(args_ref);
  auto count = [&](size_t lo, size_t hi) -> Status {
    if (args.size() < lo || args.size() > hi)
      return error(name + " takes " + std::to_string(lo) + (hi > lo ? " or " + std::to_string(hi) : "") +
                   " arguments, got " + std::to_string(args.size()));
    return {};
  };
  switch (p.at(callable).callable) {
    case Callable::OrderedDict:
      ARCH_TRY_STATUS(count(0, 0));  // its items come by SETITEMS
      return p.add_list(Kind::Dict);
    case Callable::RebuildParameter:  // (data, requires_grad, backward_hooks): the tensor itself
      ARCH_TRY_STATUS(count(3, 3));
      if (p.at(args[0]).kind != Kind::Tensor)
        return error(name + "'s data is " + p.describe(args[0]) + ", expected a tensor");
      return args[0];
    case Callable::RebuildTensor:
      ARCH_TRY_STATUS(count(4, 4));
      return rebuild(p, name, args);
    case Callable::RebuildTensorV2:
      // (storage, offset, size, stride, requires_grad, backward_hooks[, metadata])
      ARCH_TRY_STATUS(count(6, 7));
      if (p.at(args[4]).kind != Kind::Bool)
        return error(name + "'s requires_grad is " + p.describe(args[4]) + ", expected a bool");
      return rebuild(p, name, args);
    case Callable::StorageType:
      break;
  }
  return error("REDUCE calls '" + name + "', a storage type that persistent ids name, never called");
}

Result<Ref> torch_persistent_id(Pickle& p, Ref pid) {
  const char* form = " ('storage', type, key, location, numel)";
  if (p.at(pid).kind != Kind::Tuple)
    return error("a persistent id is " + p.describe(pid) + ", expected a tuple" + form);
  if (p.items(pid).size() > 6)  // sized before it is copied, as REDUCE's arguments are
    return error("a persistent id has " + std::to_string(p.items(pid).size()) + " fields, expected 5" + form);
  const std::vector<Ref> f = p.items(pid);
  if (f.empty() || p.at(f[0]).kind != Kind::Str)
    return error("a persistent id does not start with a str; expected" + std::string(form));
  if (p.str(f[0]) != "storage")
    return error("a persistent id of type '" + printable(p.str(f[0])) + "'; only storages are read");
  if (f.size() != 5 && f.size() != 6)
    return error("a storage's persistent id has " + std::to_string(f.size()) + " fields, expected 5" + form);
  if (p.at(f[1]).kind != Kind::Global || p.at(f[1]).callable != Callable::StorageType)
    return error("a storage's type is " + p.describe(f[1]) + ", expected a torch storage type");
  if (p.at(f[2]).kind != Kind::Str || p.at(f[3]).kind != Kind::Str)
    return error("a storage's key and location are " + p.describe(f[2]) + " and " + p.describe(f[3]) +
                 ", expected two str");
  if (p.str(f[2]).size() > kMaxKeyBytes)
    return error("a storage's key of " + std::to_string(p.str(f[2]).size()) + " bytes, longer than " +
                 std::to_string(kMaxKeyBytes));
  const std::string key = p.str(f[2]);
  if (p.at(f[4]).kind != Kind::Int || p.at(f[4]).number < 0)
    return error("storage '" + printable(key) + "': its size is " + p.describe(f[4]) + ", expected a non-negative int");
  if (f.size() == 6 && p.at(f[5]).kind != Kind::None)
    return error("storage '" + printable(key) + "' is a view of another (legacy view metadata), which is not read");
  if (!p.spend(sizeof(StorageInfo) + key.size() + p.str(f[1]).size()))
    return error("storage '" + printable(key) + "': the pickle names more storages than its length allows");
  return p.add_storage({p.at(f[1]).dtype, p.str(f[1]), key, p.at(f[4]).number});
}

}  // namespace arch::pickle
