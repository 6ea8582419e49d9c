#include "text/chat_template/builtins.h"

#include <algorithm>
#include <ctime>
#include <memory>

#include "text/chat_template/args.h"
#include "text/chat_template/text.h"

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

std::string Namespace::repr(int level) const {
  std::string out = "<Namespace {";
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (i) out += ", ";
    out += py_repr_string(attrs_[i].first) + ": " + repr_at(attrs_[i].second, level + 1);
  }
  return out + "}>";
}

namespace {

// dict(*args, **kwargs): at most one mapping or iterable of pairs, then keywords.
Result<std::vector<std::pair<Value, Value>>> dict_items(const std::string& what, const CallArgs& a) {
  if (a.positional.size() > 1)
    return error(what + " expected at most 1 argument, got " + std::to_string(a.positional.size()));
  std::vector<std::pair<Value, Value>> items;
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_undefined()) return undefined_error(src);  // Python probes it for keys()
    if (src.is_dict()) {
      items = src.dict().items;
    } else {
      ARCH_TRY(auto elems, iterate(src));
      for (size_t i = 0; i < elems.size(); ++i) {
        ARCH_TRY(auto pair, iterate(elems[i]));
        if (pair.size() != 2)
          return error(what + ": dictionary update sequence element #" + std::to_string(i) + " has length " +
                       std::to_string(pair.size()) + "; 2 is required");
        items.emplace_back(pair[0], pair[1]);
      }
    }
  }
  for (const auto& [k, v] : a.keyword) items.emplace_back(Value::string(k), v);
  return items;
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
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000)
      return error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.push_back(Value::integer(i));
  }
  std::string args = std::to_string(start) + ", " + std::to_string(stop);
  if (step != 1) args += ", " + std::to_string(step);
  return Value::range(std::move(out), std::move(args));
}

}  // namespace

std::vector<std::pair<std::string, Value>> global_names(
    std::optional<std::chrono::system_clock::time_point> now) {
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back("range", Value::function("range", range_fn));
  g.emplace_back("dict", Value::function("dict", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto items, dict_items("dict()", a));
                   return Value::dict(std::move(items));
                 }));
  g.emplace_back("namespace", Value::function("namespace", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto items, dict_items("namespace()", a));
                   auto ns = std::make_shared<Namespace>();
                   for (auto& [k, v] : items) {
                     if (!k.is_string()) return error("namespace(): keywords must be strings");
                     ns->set_attr(k.as_string(), v);
                   }
                   return Value::object(ns);
                 }));
  g.emplace_back("joiner", Value::function("joiner", [](const CallArgs& a) -> Result<Value> {
                   ARCH_TRY(auto v, bind_args("joiner()", a, {{"sep", Value::string(", ")}}));
                   auto used = std::make_shared<bool>(false);
                   std::string sep = to_str(v[0]);
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
                   return error("raise_exception: " + to_str(v[0]));
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
                   std::vector<char> buf(f.size() * 8 + 256);
                   size_t n = std::strftime(buf.data(), buf.size(), f.c_str(), &tm);
                   return Value::string(std::string(buf.data(), n));
                 }));
  return g;
}

}  // namespace arch::jinja
