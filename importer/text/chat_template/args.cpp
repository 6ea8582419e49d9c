#include "importer/text/chat_template/args.h"

namespace arch::jinja {

Result<std::vector<Value>> bind_args(const std::string& what, const CallArgs& args,
                                     const std::vector<Param>& params) {
  if (args.positional.size() > params.size())
    return error(what + " takes at most " + std::to_string(params.size()) + " argument" +
                 (params.size() == 1 ? "" : "s") + " (" + std::to_string(args.positional.size()) +
                 " given)");
  std::vector<std::optional<Value>> bound(params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < params.size() && key != params[i].name) ++i;
    if (i == params.size()) return error(what + " got an unexpected keyword argument '" + key + "'");
    if (bound[i]) return error(what + " got multiple values for argument '" + key + "'");
    bound[i] = value;
  }
  std::vector<Value> out;
  out.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) out.push_back(*bound[i]);
    else if (params[i].default_value) out.push_back(*params[i].default_value);
    else return error(what + " is missing the argument '" + std::string(params[i].name) + "'");
  }
  return out;
}

Result<int64_t> int_arg(const std::string& what, const char* param, const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return static_cast<int64_t>(v.as_bool());
  if (v.is_undefined()) return undefined_error(v);
  return error(what + ": argument '" + param + "' must be an integer, not " + type_name(v));
}

Result<std::string> str_arg(const std::string& what, const char* param, const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) return undefined_error(v);
  return error(what + ": argument '" + param + "' must be a string, not " + type_name(v));
}

}  // namespace arch::jinja
