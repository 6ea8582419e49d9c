#include "importer/text/chat_template/builtins.h"

#include <algorithm>
#include <ctime>
#include <memory>

#include "importer/text/chat_template/args.h"
#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

std::optional<Value> Namespace::get_attr(const std::string& name) const {
  for (const auto& [k, v] : attrs_)
    if (k == name) return v;
  return std::nullopt;
}

bool Namespace::set_attr(const std::string& name, Value value) {
  if (value.is_object() && &value.object() == this) {
    depth_ = std::max(depth_, 2);
  } else {
    depth_ = std::max(depth_, 1 + value_depth(value));
  }
  for (auto& [k, v] : attrs_) {
    if (k == name) {
      v = std::move(value);
      return true;
    }
  }
  attrs_.emplace_back(name, std::move(value));
  return true;
}

bool Namespace::append_repr(std::string& out, int level, size_t cap) const {
  out += "<Namespace {";
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (i) out += ", ";
    out += py_repr_string(attrs_[i].first) + ": ";
    if (!jinja::append_repr(out, attrs_[i].second, level + 1, cap)) return false;
  }
  out += "}>";
  return out.size() <= cap;
}

namespace {

// Building a dict or namespace compares each new key with the keys before
// it; for many keys that work counts as iterations (chat_iterations), so it
// cannot run quadratic for minutes.
Status count_key_comparisons(uint64_t existing, uint64_t added, const std::string& what) {
  unsigned __int128 n = (unsigned __int128)existing * added + (unsigned __int128)added * (added - (added > 0)) / 2;
  return count_iterations(n > UINT64_MAX ? UINT64_MAX : uint64_t(n),
                          "the loop iterations of this render (" + what + " comparing keys)");
}

// dict(*args, **kwargs): at most one mapping or iterable of pairs, then keywords.
Result<std::shared_ptr<DictData>> dict_data(const std::string& what, const CallArgs& a) {
  if (a.positional.size() > 1)
    return error(what + " expected at most 1 argument, got " + std::to_string(a.positional.size()));
  auto d = std::make_shared<DictData>();
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_undefined()) return undefined_error(src);  // Python probes it for keys()
    if (src.is_dict()) {
      *d = src.dict();  // its keys are distinct already
    } else {
      ARCH_TRY(auto elems, iterate(src));
      ARCH_TRY_STATUS(count_key_comparisons(0, elems.size(), what));
      for (size_t i = 0; i < elems.size(); ++i) {
        ARCH_TRY(auto pair, iterate(elems[i]));
        if (pair.size() != 2)
          return error(what + ": dictionary update sequence element #" + std::to_string(i) + " has length " +
                       std::to_string(pair.size()) + "; 2 is required");
        d->set(pair[0], pair[1]);
      }
    }
  }
  if (!a.keyword.empty()) ARCH_TRY_STATUS(count_key_comparisons(d->items.size(), a.keyword.size(), what));
  for (const auto& [k, v] : a.keyword) d->set(Value::string(k), v);
  return d;
}

Result<Value> range_fn(const CallArgs& a) {
  if (!a.keyword.empty()) return error("range() takes no keyword arguments");
  if (a.positional.empty() || a.positional.size() > 3)
    return error("range expected 1 to 3 arguments, got " + std::to_string(a.positional.size()));
  std::vector<int64_t> n;
  for (const Value& v : a.positional) {
    ARCH_TRY(int64_t i, int_arg("range()", "argument", v));
    n.push_back(i);
  }
  int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
  if (step == 0) return error("range() arg 3 must not be zero");
  // The length first (Python's formula, in 128 bits so no bound overflows),
  // so a range of 10**12 is refused before anything is built.
  __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
  __int128 by = step > 0 ? __int128(step) : -__int128(step);
  uint64_t len = span <= 0 ? 0 : uint64_t((span + by - 1) / by);
  ARCH_TRY_STATUS(check_length(len, "the length of range()"));
  if (len > 100000) return error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> out;
  out.reserve(len);
  for (uint64_t k = 0; k < len; ++k) out.push_back(Value::integer(int64_t(start + __int128(step) * k)));
  std::string args = std::to_string(start) + ", " + std::to_string(stop);
  if (step != 1) args += ", " + std::to_string(step);
  return Value::range(std::move(out), std::move(args));
}

}  // namespace

std::vector<std::pair<std::string, Value>> global_names(
    std::optional<std::chrono::system_clock::time_point> now, std::vector<std::weak_ptr<Namespace>>* made) {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back("range", Value::function("range", range_fn));
  g.emplace_back("dict", Value::function("dict", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto d, dict_data("dict()", a));
                   return Value::dict(std::move(d));
                 }));
  g.emplace_back("namespace", Value::function("namespace", [made](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto d, dict_data("namespace()", a));
                   ARCH_TRY_STATUS(count_key_comparisons(0, d->items.size(), "namespace()"));
                   auto ns = std::make_shared<Namespace>();
                   if (made) made->push_back(ns);
                   for (auto& [k, v] : d->items) {
                     if (!k.is_string()) return error("namespace(): keywords must be strings");
                     ns->set_attr(k.as_string(), v);
                   }
                   return Value::object(ns);
                 }));
  g.emplace_back("joiner", Value::function("joiner", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto v, bind_args("joiner()", a, {{"sep", Value::string(", ")}}));
                   auto used = std::make_shared<bool>(false);
                   ARCH_TRY(std::string sep, to_str(v[0]));
                   return Value::function("joiner", [used, sep](const CallArgs&) -> Result<Value> {
                     if (!*used) {
                       *used = true;
                       return Value::string("");
                     }
                     return Value::string(sep);
                   });
                 }));
  g.emplace_back("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto v, bind_args("raise_exception()", a, {{"message", std::nullopt}}));
                   ARCH_TRY(std::string message, to_str(v[0]));
                   return error("raise_exception: " + message);
                 }));
  g.emplace_back("strftime_now", Value::function("strftime_now", [now](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto v, bind_args("strftime_now()", a, {{"format", std::nullopt}}));
                   ARCH_TRY(std::string fmt, str_arg("strftime_now()", "format", v[0]));
                   auto t = now.value_or(std::chrono::system_clock::now());
                   std::time_t secs = std::chrono::system_clock::to_time_t(t);
                   auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                     t.time_since_epoch() - std::chrono::seconds(secs))
                                     .count();
                   std::tm tm{};
                   localtime_r(&secs, &tm);
                   // Python's datetime handles %f itself.
                   char us[16];
                   std::snprintf(us, sizeof us, "%06lld", static_cast<long long>(micros));
                   std::string f;
                   for (size_t i = 0; i < fmt.size(); ++i) {
                     if (fmt[i] == '%' && i + 1 < fmt.size()) {
                       if (fmt[i + 1] == 'f') f += us;
                       else f += fmt.substr(i, 2);
                       ++i;
                     } else {
                       f += fmt[i];
                     }
                   }
                   if (f.empty()) return Value::string("");
                   ARCH_TRY_STATUS(check_text_sum(f.size() * uint64_t(8), 256,
                                                  "the size in bytes of the buffer strftime_now() writes into"));
                   std::vector<char> buf(f.size() * 8 + 256);
                   size_t n = std::strftime(buf.data(), buf.size(), f.c_str(), &tm);
                   return Value::string(std::string(buf.data(), n));
                 }));
  return g;
}

}  // namespace arch::jinja
