// Table-driven chat-template tests: a template, a JSON context, and the text
// jinja2 3.1 renders for them when set up as transformers sets it up
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// transformers' tojson, raise_exception, strftime_now). The expected strings
// were produced by that reference, not written by hand.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "importer/text/chat_template/chat_template.h"
#include "tests/test_files.h"

namespace arch::testing {

struct RenderCase {
  const char* name;
  const char* tmpl;
  const char* context;  // JSON object
  const char* expected;
};

// strftime_now() in these tests sees this instant.
inline std::chrono::system_clock::time_point fixed_now() {
  return std::chrono::system_clock::from_time_t(1700000000);
}

inline Result<std::string> render_text(const std::string& tmpl, const std::string& context_json = "{}") {
  ARCH_TRY(ChatTemplate t, parse_chat_template(tmpl));
  t.set_now(fixed_now());
  return t.render(nlohmann::ordered_json::parse(context_json));
}

template <size_t N>
void expect_renders(const RenderCase (&cases)[N]) {
  for (const RenderCase& c : cases) {
    auto out = render_text(c.tmpl, c.context);
    if (!out.ok()) {
      ADD_FAILURE() << c.name << ": " << out.error().message << "\n  template: " << c.tmpl;
      continue;
    }
    EXPECT_EQ(*out, c.expected) << c.name << "\n  template: " << c.tmpl;
  }
}

// The error message of parsing or rendering, "" if it succeeded.
inline std::string render_error(const std::string& tmpl, const std::string& context_json = "{}") {
  auto out = render_text(tmpl, context_json);
  return out.ok() ? std::string() : out.error().message;
}

}  // namespace arch::testing
