// Errors are values: a function that can fail on user input returns
// Result<T>; the message carries its context (file, line, tensor name) and is
// printed once, at the tool boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace arch {

struct Error {
  std::string message;  // complete, e.g. "model.safetensors: tensor 'x': offsets past the end"
};

inline Error error(std::string message) { return Error{std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool failed_ = false;
};

using Status = Result<void>;

}  // namespace arch

// Propagate a failure: ARCH_TRY(auto x, f()); or ARCH_TRY_STATUS(g());
#define ARCH_CONCAT_INNER(a, b) a##b
#define ARCH_CONCAT(a, b) ARCH_CONCAT_INNER(a, b)
#define ARCH_TRY(decl, expr)                                   \
  auto ARCH_CONCAT(arch_try_, __LINE__) = (expr);              \
  if (!ARCH_CONCAT(arch_try_, __LINE__).ok())                  \
    return ARCH_CONCAT(arch_try_, __LINE__).error();           \
  decl = std::move(ARCH_CONCAT(arch_try_, __LINE__)).value()
#define ARCH_TRY_STATUS(expr)                                  \
  do {                                                         \
    auto arch_status_ = (expr);                                \
    if (!arch_status_.ok()) return arch_status_.error();       \
  } while (0)
