#include "importer/text/tokenizer/components.h"
#include "engine/core/json_text.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

Error wrong_type(const json& v, const char* key, const std::string& where, const char* expected) {
  return error(where + ": field '" + key + "' is " + json_type_name(v) + ", expected " + expected);
}

Error missing(const char* key, const std::string& where) {
  return error(where + ": missing field '" + key + "'");
}

}  // namespace

Result<std::string> get_string(const json& j, const char* key, const std::string& where,
                               std::optional<std::string> fallback) {
  const json* v = find(j, key);
  if (!v) {
    if (fallback) return *fallback;
    return missing(key, where);
  }
  if (!v->is_string()) return wrong_type(*v, key, where, "a string");
  return v->get<std::string>();
}

Result<std::optional<std::string>> get_optional_string(const json& j, const char* key, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return wrong_type(*v, key, where, "a string or null");
  return std::optional<std::string>(v->get<std::string>());
}

Result<bool> get_bool(const json& j, const char* key, const std::string& where, std::optional<bool> fallback) {
  const json* v = find(j, key);
  if (!v) {
    if (fallback) return *fallback;
    return missing(key, where);
  }
  if (!v->is_boolean()) return wrong_type(*v, key, where, "true or false");
  return v->get<bool>();
}

Result<int64_t> get_int(const json& j, const char* key, const std::string& where, std::optional<int64_t> fallback) {
  const json* v = find(j, key);
  if (!v) {
    if (fallback) return *fallback;
    return missing(key, where);
  }
  if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)))
    return wrong_type(*v, key, where, "an integer");
  return v->get<int64_t>();
}

Result<std::optional<double>> get_optional_number(const json& j, const char* key, const std::string& where) {
  const json* v = find(j, key);
  if (!v) return std::optional<double>();
  if (!v->is_number()) return wrong_type(*v, key, where, "a number or null");
  return std::optional<double>(v->get<double>());
}

Result<char32_t> get_char(const json& j, const char* key, const std::string& where,
                          std::optional<char32_t> fallback) {
  std::optional<std::string> fb;
  if (fallback) {
    fb.emplace();
    append_utf8(*fb, *fallback);
  }
  ARCH_TRY(std::string s, get_string(j, key, where, fb));
  if (!is_valid_utf8(s) || char_count(s) != 1)
    return error(where + ": field '" + key + "' is \"" + s + "\", expected a single character");
  size_t i = 0;
  return next_char(s, i);
}

Result<PrependScheme> get_prepend_scheme(const json& j, const std::string& where) {
  ARCH_TRY(auto name, get_optional_string(j, "prepend_scheme", where));
  ARCH_TRY(bool add_prefix_space, get_bool(j, "add_prefix_space", where, true));
  PrependScheme scheme = PrependScheme::Always;
  if (name) {
    if (*name == "always") scheme = PrependScheme::Always;
    else if (*name == "first") scheme = PrependScheme::First;
    else if (*name == "never") scheme = PrependScheme::Never;
    else return error(where + ": unknown prepend_scheme '" + *name + "' (supported: always, first, never)");
  }
  if (!add_prefix_space) {
    if (name && scheme != PrependScheme::Never)
      return error(where + ": add_prefix_space false contradicts prepend_scheme '" + *name + "'");
    scheme = PrependScheme::Never;
  }
  return scheme;
}

Result<std::string> get_type(const json& j, const std::string& what, const std::string& where) {
  if (!j.is_object()) return error(where + ": a " + what + " is " + json_type_name(j) + ", expected an object");
  auto it = j.find("type");
  if (it == j.end()) return error(where + ": " + what + " has no field 'type'");
  if (!it->is_string()) return error(where + ": " + what + " field 'type' is " + json_type_name(*it) + ", expected a string");
  return it->get<std::string>();
}

std::string unknown_type(const std::string& what, const std::string& type, const std::string& where,
                         const char* supported) {
  return where + ": unknown " + what + " type '" + type + "' (supported: " + supported + ")";
}

}  // namespace arch::tok
