// Bad templates and bad input give one clear error naming the construct and
// its line and column ("chat_template:LINE:COL: ..."), never a crash.
#include <string>

#include "tests/importer/text/chat_template/render_cases.h"

namespace arch::testing {
namespace {

TEST(ChatTemplateErrors, UnknownFilterAndTestAtParseTime) {
  EXPECT_CONTAINS(render_error("hello\n{{ name | trimm }}"), "chat_template:2:11: unknown filter 'trimm'");
  EXPECT_CONTAINS(render_error("{{ x is nonexistent }}"), "chat_template:1:9: unknown test 'nonexistent'");
  EXPECT_CONTAINS(render_error("{{ xs|groupby('a') }}"), "chat_template:1:7: filter 'groupby' is not supported");
  // The message comes from parsing: nothing is rendered.
  auto t = parse_chat_template("{% for m in messages %}{{ m|bogus }}{% endfor %}");
  ASSERT_FALSE(t.ok());
  EXPECT_CONTAINS(t.error().message, "chat_template:1:29: unknown filter 'bogus'");
}

TEST(ChatTemplateErrors, UnknownFilterInsideAnIfFailsOnlyWhenReached) {
  // jinja2 defers the check inside if blocks and conditional expressions.
  EXPECT_EQ(render_error("{% if false %}{{ x|bogus }}{% endif %}ok"), "");
  EXPECT_CONTAINS(render_error("{% if true %}\n  {{ x|bogus }}{% endif %}"), "chat_template:2:8: unknown filter 'bogus'");
  EXPECT_CONTAINS(render_error("{% if true %}{% for x in [1] %}{{ x|bogus }}{% endfor %}{% endif %}"),
                  "unknown filter 'bogus'");
}

TEST(ChatTemplateErrors, UnclosedBlocks) {
  EXPECT_CONTAINS(render_error("{% for m in messages %}\n  {{ m.content }}\n"),
                  "chat_template:1:4: 'for' block is never closed: expected 'endfor' or 'else' before the end of the template");
  EXPECT_CONTAINS(render_error("a\n{% if x %}b{% elif y %}c"), "chat_template:2:4: 'if' block is never closed");
  EXPECT_CONTAINS(render_error("{% macro m() %}x"), "'macro' block is never closed: expected 'endmacro'");
  EXPECT_CONTAINS(render_error("{% set x %}x"), "'set' block is never closed: expected 'endset'");
  EXPECT_CONTAINS(render_error("x {% raw %} y"), "chat_template:1:3: 'raw' block is never closed");
  EXPECT_CONTAINS(render_error("x\n {# note"), "chat_template:2:2: comment is never closed (missing '#}')");
  EXPECT_CONTAINS(render_error("{{ x "), "chat_template:1:1: '{{' tag is never closed (missing '}}')");
  EXPECT_CONTAINS(render_error("{% if x "), "chat_template:1:1: '{%' tag is never closed (missing '%}')");
}

TEST(ChatTemplateErrors, MisplacedEndTags) {
  EXPECT_CONTAINS(render_error("{% if x %}\n{% endfor %}"),
                  "chat_template:2:4: unexpected 'endfor': the innermost open block is 'if' (line 1, column 4), "
                  "which expects 'elif', 'else' or 'endif'");
  EXPECT_CONTAINS(render_error("{% endif %}"), "chat_template:1:4: unexpected 'endif': no block is open");
  EXPECT_CONTAINS(render_error("{% if x %}a{% else %}b{% else %}c{% endif %}"), "chat_template:1:26: unexpected 'else'");
  EXPECT_CONTAINS(render_error("{% break %}"), "'break' outside of a 'for' loop");
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesTheMessageAndPosition) {
  const char* tmpl =
      "{% for m in messages %}\n"
      "{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}\n"
      "  {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}\n"
      "{% endif %}\n"
      "{% endfor %}";
  std::string msgs = R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})";
  EXPECT_EQ(render_error(tmpl, msgs),
            "chat_template:3:6: raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
  EXPECT_EQ(render_error(tmpl, R"({"messages": [{"role": "user", "content": "a"}]})"), "");
}

TEST(ChatTemplateErrors, UnsupportedConstructsAreNamed) {
  EXPECT_CONTAINS(render_error("{% include 'x.jinja' %}"), "chat_template:1:4: 'include' tags are not supported");
  EXPECT_CONTAINS(render_error("{% extends 'base' %}"), "'extends' tags are not supported");
  EXPECT_CONTAINS(render_error("{% call m() %}{% endcall %}"), "'call' tags are not supported");
  EXPECT_CONTAINS(render_error("{% for x in xs recursive %}{% endfor %}"), "chat_template:1:16: recursive 'for' loops are not supported");
  EXPECT_CONTAINS(render_error("{% do x %}"), "chat_template:1:4: unknown tag 'do'");
  EXPECT_CONTAINS(render_error("{{ 'a'.encode() }}"), "str.encode() is not supported");
}

TEST(ChatTemplateErrors, SyntaxErrors) {
  EXPECT_CONTAINS(render_error("line1\n  {{ 'unterminated }}"), "chat_template:2:6: string literal is never closed");
  EXPECT_CONTAINS(render_error("{{ (1 + 2 }}"), "chat_template:1:11: unexpected '}', expected ')'");
  EXPECT_CONTAINS(render_error("{{ a b }}"), "chat_template:1:6: expected '}}' to end '{{ ... }}', got 'b'");
  EXPECT_CONTAINS(render_error("{% set x = %}"), "chat_template:1:12: expected an expression, got '%}'");
  EXPECT_CONTAINS(render_error("{{ @ }}"), "chat_template:1:4: unexpected character '@' inside '{{ ... }}'");
  EXPECT_CONTAINS(render_error("{% if true false %}{% endif %}"), "expected '%}' to end the 'if' tag, got 'false'");
  EXPECT_CONTAINS(render_error("{% macro m(a=1, b) %}{% endmacro %}"), "macro parameter 'b' without a default follows one with a default");
  EXPECT_CONTAINS(render_error("{{ 'x' \\ 1 }}"), "unexpected character '\\'");
  // Columns count characters, not bytes.
  EXPECT_CONTAINS(render_error("héé {{ x|nope }}"), "chat_template:1:10: unknown filter 'nope'");
}

TEST(ChatTemplateErrors, DeepNestingIsAnErrorNotACrash) {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_CONTAINS(render_error(parens), "the nesting of the expression (257) exceeds the limit 'chat_depth'");
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_CONTAINS(render_error(ifs), "the nesting of blocks (257) exceeds the limit 'chat_depth'");
  std::string nots = "{{ " + std::string(5000, '-') + "1 }}";
  EXPECT_CONTAINS(render_error(nots), "the nesting of the expression (257) exceeds the limit 'chat_depth'");
}

TEST(ChatTemplateErrors, HugeResultsAreRefused) {
  EXPECT_CONTAINS(render_error("{{ 'abc' * 1000000000 }}"),
                  "the size in bytes of the string '*' makes (3000000000) exceeds the limit 'chat_text_bytes'");
  EXPECT_CONTAINS(render_error("{{ range(1000000)|length }}"), "Range too big");
}

TEST(ChatTemplateErrors, ContextMustBeAnObject) {
  auto t = parse_chat_template("x");
  ASSERT_TRUE(t.ok());
  auto out = t->render(nlohmann::json::array());
  ASSERT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error().message, "the context must be a JSON object");
}

TEST(ChatTemplateErrors, EmptyTemplateRendersNothing) {
  auto out = render_text("");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "");
  ChatTemplate none;
  auto empty = none.render(nlohmann::json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

}  // namespace
}  // namespace arch::testing

namespace arch::testing {
namespace {

TEST(ChatTemplateErrors, LongOperatorChainsAndDeepValuesAreBounded) {
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_CONTAINS(render_error(chain + " }}"), "the height of the expression (operators nested or chained) (257)");
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|upper";
  EXPECT_CONTAINS(render_error(filters + " }}"), "the height of the expression (operators nested or chained) (257)");
  // Values that grow in a loop.
  EXPECT_CONTAINS(render_error("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
                  "the nesting of the lists, dicts and namespaces of a value (257) exceeds the limit 'chat_depth'");
  // A namespace holding itself prints without recursing forever.
  EXPECT_EQ(render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|string|length > 0 }}"), "");
  // Deep JSON context.
  auto t = parse_chat_template("{{ x }}");
  ASSERT_TRUE(t.ok());
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto out = t->render(nlohmann::ordered_json{{"x", nlohmann::ordered_json::parse(deep)}});
  ASSERT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error().message, "the nesting of the context's arrays and objects (257) exceeds the limit 'chat_depth'");
}

}  // namespace
}  // namespace arch::testing

namespace arch::testing {
namespace {

TEST(ChatTemplateErrors, RecursionThroughDeepExpressionsIsBounded) {
  std::string deep = "n";
  for (int i = 0; i < 300; ++i) deep = "(" + deep + " + 0)";
  std::string tmpl = "{% macro m(n) %}{{ m(" + deep + " + 1) }}{% endmacro %}{{ m(0) }}";
  std::string err = render_error(tmpl);
  EXPECT_CONTAINS(err, "exceeds the limit 'chat_depth' (256)");
}

}  // namespace
}  // namespace arch::testing
