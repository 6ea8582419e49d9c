#include "importer/checkpoint/pickle_machine.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "engine/core/utf8.h"
#include "importer/checkpoint/torch_objects.h"

namespace arch::pickle {

namespace {

// Every opcode there is (Python's pickletools lists them), once: the enum
// and the names a refusal gives. The machine runs those `step` handles.
// clang-format off
#define ARCH_PICKLE_OPS(X)                                                                                      \
  X(MARK, '(') X(STOP, '.') X(POP, '0') X(POP_MARK, '1') X(DUP, '2') X(FLOAT, 'F') X(INT, 'I') X(BININT, 'J')   \
  X(BININT1, 'K') X(LONG, 'L') X(BININT2, 'M') X(NONE, 'N') X(PERSID, 'P') X(BINPERSID, 'Q') X(REDUCE, 'R')     \
  X(STRING, 'S') X(BINSTRING, 'T') X(SHORT_BINSTRING, 'U') X(UNICODE, 'V') X(BINUNICODE, 'X') X(APPEND, 'a')   \
  X(BUILD, 'b') X(GLOBAL, 'c') X(DICT, 'd') X(EMPTY_DICT, '}') X(APPENDS, 'e') X(GET, 'g') X(BINGET, 'h')       \
  X(INST, 'i') X(LONG_BINGET, 'j') X(LIST, 'l') X(EMPTY_LIST, ']') X(OBJ, 'o') X(PUT, 'p') X(BINPUT, 'q')       \
  X(LONG_BINPUT, 'r') X(SETITEM, 's') X(TUPLE, 't') X(EMPTY_TUPLE, ')') X(SETITEMS, 'u') X(BINFLOAT, 'G')       \
  X(BINBYTES, 'B') X(SHORT_BINBYTES, 'C') X(PROTO, 0x80) X(NEWOBJ, 0x81) X(EXT1, 0x82) X(EXT2, 0x83)            \
  X(EXT4, 0x84) X(TUPLE1, 0x85) X(TUPLE2, 0x86) X(TUPLE3, 0x87) X(NEWTRUE, 0x88) X(NEWFALSE, 0x89)              \
  X(LONG1, 0x8a) X(LONG4, 0x8b) X(SHORT_BINUNICODE, 0x8c) X(BINUNICODE8, 0x8d) X(BINBYTES8, 0x8e)               \
  X(EMPTY_SET, 0x8f) X(ADDITEMS, 0x90) X(FROZENSET, 0x91) X(NEWOBJ_EX, 0x92) X(STACK_GLOBAL, 0x93)              \
  X(MEMOIZE, 0x94) X(FRAME, 0x95) X(BYTEARRAY8, 0x96) X(NEXT_BUFFER, 0x97) X(READONLY_BUFFER, 0x98)

#define ARCH_OP_ENUM(name, byte) name = byte,
enum Op : uint8_t { ARCH_PICKLE_OPS(ARCH_OP_ENUM) };
#undef ARCH_OP_ENUM

const char* op_name(uint8_t op) {
#define ARCH_OP_CASE(name, byte) case name: return #name;
  switch (op) {
    ARCH_PICKLE_OPS(ARCH_OP_CASE)
    default: return nullptr;
  }
#undef ARCH_OP_CASE
}
#undef ARCH_PICKLE_OPS
// clang-format on

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Each step makes at most one object, and a Ref must reach them all.
constexpr size_t kMaxObjects = std::numeric_limits<Ref>::max() - 8;

class Machine {
 public:
  Machine(std::span<const std::byte> bytes, uint64_t start, const std::string& where)
      : bytes_(bytes), pos_(start), where_(where) {
    none_ = p_.add(Kind::None);
    false_ = p_.add(Kind::Bool);
    true_ = p_.add(Kind::Bool, 1);
    empty_tuple_ = p_.add_list(Kind::Tuple, {});  // immutable, so one serves every EMPTY_TUPLE
    p_.allowance = 16 * (bytes.size() - std::min<uint64_t>(start, bytes.size())) + (1u << 20);
  }

  Result<Pickle> run() {
    while (true) {
      op_at_ = pos_;
      if (pos_ >= bytes_.size()) return fail("truncated: the pickle ends before its STOP");
      if (p_.objects.size() >= kMaxObjects) return fail("more than " + std::to_string(kMaxObjects) + " objects");
      op_ = uint8_t(bytes_[pos_++]);
      if (op_ == STOP) break;
      ARCH_TRY_STATUS(step());
    }
    if (!marks_.empty()) return fail("STOP with " + std::to_string(marks_.size()) + " MARK(s) still open");
    if (stack_.size() != 1)
      return fail("STOP leaves " + std::to_string(stack_.size()) + " objects on the stack, expected 1");
    p_.root = stack_.back();
    p_.end = pos_;
    return std::move(p_);
  }

 private:
  Error fail(const std::string& why) const { return error(where_ + ": byte " + std::to_string(op_at_) + ": " + why); }
  std::string op() const { return op_name(op_); }
  const Object& at(Ref r) const { return p_.objects[r]; }

  // ---- reading the opcode's argument
  uint64_t remaining() const { return bytes_.size() - pos_; }
  Status need(uint64_t n) const {
    if (n > remaining())
      return fail("truncated: " + op() + " needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                  " remain");
    return {};
  }
  Result<uint64_t> read_le(unsigned n) {
    ARCH_TRY_STATUS(need(n));
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= uint64_t(bytes_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  // A 4-byte length the format reads as signed.
  Result<uint64_t> read_signed_length() {
    ARCH_TRY(uint64_t n, read_le(4));
    if (int32_t(uint32_t(n)) < 0) return fail(op() + " has a negative length " + std::to_string(int32_t(n)));
    return n;
  }
  Result<std::string> read_bytes(uint64_t n) {
    ARCH_TRY_STATUS(need(n));
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  Result<std::string> read_line() {
    const auto* begin = reinterpret_cast<const char*>(bytes_.data() + pos_);
    const void* nl = std::memchr(begin, '\n', remaining());
    if (!nl) return fail("truncated: " + op() + "'s name has no end of line");
    std::string s(begin, static_cast<const char*>(nl) - begin);
    pos_ += s.size() + 1;
    return s;
  }

  // ---- objects and the stack
  Status push(Ref r) {
    stack_.push_back(r);
    return {};
  }
  // Python 3's unpickler starts a new stack at each MARK: what lies below
  // the last mark is out of reach until the mark is popped.
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Result<std::vector<Ref>> pop_n(size_t n) {
    if (stack_.size() - floor() < n)
      return fail("stack underflow: " + op() + " takes " + std::to_string(n) + " object(s), " +
                  std::to_string(stack_.size() - floor()) + " are there" + (marks_.empty() ? "" : " above the MARK"));
    std::vector<Ref> out(stack_.end() - n, stack_.end());
    stack_.resize(stack_.size() - n);
    return out;
  }
  Result<Ref> pop() {
    ARCH_TRY(auto one, pop_n(1));
    return one[0];
  }
  Result<std::vector<Ref>> pop_mark() {
    if (marks_.empty()) return fail(op() + " without a MARK before it");
    std::vector<Ref> out(stack_.begin() + marks_.back(), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return out;
  }
  Result<Ref> top(Kind kind) {
    if (stack_.size() <= floor())
      return fail("stack underflow: " + op() + " needs a " + std::string(kind_name(kind)) + " beneath");
    Ref r = stack_.back();
    if (at(r).kind != kind)
      return fail(op() + " applies to a " + std::string(kind_name(kind)) + ", not to " + p_.describe(r));
    return r;
  }

  // ---- the opcodes
  Status step() {
    switch (op_) {
      case PROTO: {
        ARCH_TRY(uint64_t v, read_le(1));
        if (v > 5) return fail("pickle protocol " + std::to_string(v) + " is newer than 5, the newest there is");
        return {};
      }
      case FRAME: {  // framing only groups reads; the opcodes run on as they come
        ARCH_TRY(uint64_t n, read_le(8));
        if (n > remaining())
          return fail("truncated: a FRAME of " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                      " remain");
        return {};
      }
      case MARK:
        marks_.push_back(stack_.size());
        return {};
      case GLOBAL: {
        ARCH_TRY(std::string module, read_line());
        ARCH_TRY(std::string name, read_line());
        return push_made(torch_global(p_, module, name));
      }
      case STACK_GLOBAL: {
        ARCH_TRY(auto mn, pop_n(2));
        if (at(mn[0]).kind != Kind::Str || at(mn[1]).kind != Kind::Str)
          return fail("STACK_GLOBAL takes two str, not " + p_.describe(mn[0]) + " and " + p_.describe(mn[1]));
        return push_made(torch_global(p_, p_.str(mn[0]), p_.str(mn[1])));
      }
      case BINPUT: {
        ARCH_TRY(uint64_t id, read_le(1));
        return put(id);
      }
      case LONG_BINPUT: {
        ARCH_TRY(uint64_t id, read_le(4));
        return put(id);
      }
      case MEMOIZE:
        return put(memo_.size());
      case BINGET: {
        ARCH_TRY(uint64_t id, read_le(1));
        return get(id);
      }
      case LONG_BINGET: {
        ARCH_TRY(uint64_t id, read_le(4));
        return get(id);
      }
      case EMPTY_DICT:
        return push(p_.add_list(Kind::Dict));
      case EMPTY_LIST:
        return push(p_.add_list(Kind::List));
      case EMPTY_TUPLE:
        return push(empty_tuple_);
      case TUPLE: {
        ARCH_TRY(auto items, pop_mark());
        return push(p_.add_list(Kind::Tuple, std::move(items)));
      }
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        ARCH_TRY(auto items, pop_n(op_ - TUPLE1 + 1));
        return push(p_.add_list(Kind::Tuple, std::move(items)));
      }
      case SETITEM: {
        ARCH_TRY(auto kv, pop_n(2));
        return add_items(Kind::Dict, kv);
      }
      case SETITEMS: {
        ARCH_TRY(auto kv, pop_mark());
        if (kv.size() % 2)
          return fail("SETITEMS with an odd number (" + std::to_string(kv.size()) + ") of keys and values");
        return add_items(Kind::Dict, kv);
      }
      case APPEND: {
        ARCH_TRY(auto v, pop_n(1));
        return add_items(Kind::List, v);
      }
      case APPENDS: {
        ARCH_TRY(auto v, pop_mark());
        return add_items(Kind::List, v);
      }
      case BININT: {
        ARCH_TRY(uint64_t v, read_le(4));
        return push(p_.add(Kind::Int, int32_t(uint32_t(v))));
      }
      case BININT1: {
        ARCH_TRY(uint64_t v, read_le(1));
        return push(p_.add(Kind::Int, int64_t(v)));
      }
      case BININT2: {
        ARCH_TRY(uint64_t v, read_le(2));
        return push(p_.add(Kind::Int, int64_t(v)));
      }
      case LONG1: {
        ARCH_TRY(uint64_t n, read_le(1));
        return push_long(n);
      }
      case LONG4: {
        ARCH_TRY(uint64_t n, read_signed_length());
        return push_long(n);
      }
      case SHORT_BINUNICODE: {
        ARCH_TRY(uint64_t n, read_le(1));
        return push_string(Kind::Str, n);
      }
      case BINUNICODE: {
        ARCH_TRY(uint64_t n, read_le(4));
        return push_string(Kind::Str, n);
      }
      case BINUNICODE8: {
        ARCH_TRY(uint64_t n, read_le(8));
        return push_string(Kind::Str, n);
      }
      case SHORT_BINSTRING: {
        ARCH_TRY(uint64_t n, read_le(1));
        return push_string(Kind::Str, n);
      }
      case BINSTRING: {
        ARCH_TRY(uint64_t n, read_signed_length());
        return push_string(Kind::Str, n);
      }
      case SHORT_BINBYTES: {
        ARCH_TRY(uint64_t n, read_le(1));
        return push_string(Kind::Bytes, n);
      }
      case BINBYTES: {
        ARCH_TRY(uint64_t n, read_le(4));
        return push_string(Kind::Bytes, n);
      }
      case BINBYTES8: {
        ARCH_TRY(uint64_t n, read_le(8));
        return push_string(Kind::Bytes, n);
      }
      case BINFLOAT: {  // big-endian, unlike every other number here
        ARCH_TRY_STATUS(need(8));
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | uint64_t(bytes_[pos_++]);
        Ref r = p_.add(Kind::Float);
        p_.objects[r].real = std::bit_cast<double>(bits);
        return push(r);
      }
      case NONE:
        return push(none_);
      case NEWTRUE:
        return push(true_);
      case NEWFALSE:
        return push(false_);
      case REDUCE: {
        ARCH_TRY(auto fa, pop_n(2));
        return push_made(torch_reduce(p_, fa[0], fa[1]));
      }
      case BINPERSID: {
        ARCH_TRY(Ref pid, pop());
        return push_made(torch_persistent_id(p_, pid));
      }
      case BUILD: {
        // An OrderedDict's state is its attributes (a state dict's
        // _metadata of module versions), not its items: nothing to keep.
        ARCH_TRY(Ref state, pop());
        (void)state;
        ARCH_TRY(Ref target, top(Kind::Dict));
        (void)target;
        return {};
      }
      default: {
        const char* name = op_name(op_);
        std::string byte = hex_byte(op_);
        if (op_ >= 0x20 && op_ < 0x7f) byte = "'" + std::string(1, char(op_)) + "', " + byte;
        if (name) return fail("refuses opcode " + std::string(name) + " (" + byte + "): torch.save does not write it");
        return fail("unknown opcode " + byte);
      }
    }
  }

  Status put(uint64_t id) {
    if (stack_.size() <= floor()) return fail(op() + " with nothing on the stack to store");
    memo_[id] = stack_.back();
    return {};
  }
  Status get(uint64_t id) {
    auto it = memo_.find(id);
    if (it == memo_.end()) return fail(op() + " of memo id " + std::to_string(id) + ", which was never stored");
    return push(it->second);
  }
  Status push_string(Kind kind, uint64_t n) {
    ARCH_TRY(std::string s, read_bytes(n));
    // A str is text (Python's own pickler writes UTF-8); tensor names go on
    // to JSON, which holds nothing else.
    if (kind == Kind::Str && !is_valid_utf8(s)) return fail(op() + "'s string is not valid UTF-8");
    return push(p_.add_string(kind, std::move(s)));
  }
  // LONG1 / LONG4: n bytes of little-endian two's complement.
  Status push_long(uint64_t n) {
    ARCH_TRY(std::string b, read_bytes(n));
    if (n > 8) return push(p_.add_string(Kind::BigInt, std::move(b)));
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(b[i])) << (8 * i);
    if (n > 0 && n < 8 && (uint8_t(b[n - 1]) & 0x80)) v |= ~uint64_t(0) << (8 * n);
    return push(p_.add(Kind::Int, std::bit_cast<int64_t>(v)));
  }
  Status add_items(Kind kind, const std::vector<Ref>& items) {
    ARCH_TRY(Ref target, top(kind));
    if (kind == Kind::Dict)
      for (size_t i = 0; i < items.size(); i += 2)
        if (at(items[i]).kind == Kind::List || at(items[i]).kind == Kind::Dict)
          return fail(op() + " with " + p_.describe(items[i]) + " as a key, which Python cannot hash");
    auto& list = p_.lists[at(target).index];
    list.insert(list.end(), items.begin(), items.end());
    return {};
  }

  // What torch_objects.h makes, pushed; its refusal, placed.
  Status push_made(Result<Ref> made) {
    if (!made.ok()) return fail(made.error().message);
    return push(*made);
  }

  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0, op_at_ = 0;
  uint8_t op_ = 0;
  std::string where_;
  Pickle p_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;  // stack heights at each open MARK
  std::unordered_map<uint64_t, Ref> memo_;
  Ref none_ = 0, false_ = 0, true_ = 0, empty_tuple_ = 0;
};

}  // namespace

Ref Pickle::add(Kind kind, int64_t number) {
  Object o;
  o.kind = kind;
  o.number = number;
  objects.push_back(o);
  return Ref(objects.size() - 1);
}

Ref Pickle::add_string(Kind kind, std::string s) {
  Ref r = add(kind);
  objects[r].index = uint32_t(strings.size());
  strings.push_back(std::move(s));
  return r;
}

Ref Pickle::add_list(Kind kind, std::vector<Ref> items) {
  Ref r = add(kind);
  objects[r].index = uint32_t(lists.size());
  lists.push_back(std::move(items));
  return r;
}

Ref Pickle::add_storage(StorageInfo s) {
  Ref r = add(Kind::Storage);
  objects[r].index = uint32_t(storages.size());
  storages.push_back(std::move(s));
  return r;
}

Ref Pickle::add_tensor(TensorInfo t) {
  Ref r = add(Kind::Tensor);
  objects[r].index = uint32_t(tensors.size());
  tensors.push_back(std::move(t));
  return r;
}

std::string Pickle::describe(Ref r) const {
  const Object& o = at(r);
  if (o.kind == Kind::Global) return "global '" + str(r) + "'";
  if (o.kind == Kind::None) return "None";
  const std::string name(kind_name(o.kind));
  return (name[0] == 'i' ? "an " : "a ") + name;
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200)) {
    const auto b = uint8_t(c);
    out += b < 0x20 || b == 0x7f ? "\\x" + hex_byte(b).substr(2) : std::string(1, c);
  }
  return s.size() > 200 ? out + "..." : out;
}

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
    case Kind::BigInt:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::Str:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::Tuple:
      return "tuple";
    case Kind::List:
      return "list";
    case Kind::Dict:
      return "dict";
    case Kind::Global:
      return "global";
    case Kind::Storage:
      return "storage";
    case Kind::Tensor:
      return "tensor";
  }
  return "?";
}

Result<Pickle> unpickle(std::span<const std::byte> bytes, uint64_t start, const std::string& where) {
  if (start > bytes.size())
    return error(where + ": byte " + std::to_string(start) + ": the pickle starts past the end (" +
                 std::to_string(bytes.size()) + " bytes)");
  return Machine(bytes, start, where).run();
}

}  // namespace arch::pickle
