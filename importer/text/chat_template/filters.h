// Jinja2's filters ({{ x | trim }}), with transformers' `tojson`.
//
// Implemented: abs attr batch capitalize center count d default dictsort e
// escape first float forceescape format indent int items join last length
// list lower map max min replace reject rejectattr reverse round safe select
// selectattr slice sort string sum title tojson trim unique upper wordcount.
// Known to jinja2 but not implemented (an error at parse time): groupby
// filesizeformat pprint random striptags truncate urlencode urlize wordwrap
// xmlattr.
//
// As in jinja2, map/select/reject/selectattr/rejectattr/unique/batch/slice/
// items/reverse return one-shot iterators (truthy, no length), and `safe`
// gives a plain string (Markup's escaping on `+` is not reproduced).
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "importer/text/chat_template/args.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

Support filter_support(std::string_view name);

// Errors are unlocated ("filter 'join' got an unexpected keyword argument 'x'").
Result<Value> apply_filter(const std::string& name, const Value& value, const CallArgs& args);

}  // namespace arch::jinja
