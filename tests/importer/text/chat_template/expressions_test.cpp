// Expressions: operators with Python semantics, literals, indexing and
// slicing by character, attribute access, tests, str methods, globals.
#include "tests/importer/text/chat_template/render_cases.h"

namespace arch::testing {
namespace {

// clang-format off
const RenderCase kExpressions[] = {
    {"arithmetic",
     "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "7 9 3 -4 1 2 3.5 2.0 1024 64"},
    {"floats print like Python",
     "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1.5e3 }} {{ -0.0 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 / 3 }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "0.30000000000000004 1e+16 1000000000000000.0 0.0001 1e-05 1500.0 -0.0 3.0 0.5 0.3333333333333333"},
    {"integer literals",
     "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 2E-2 }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "31 15 5 1000 0.02"},
    {"string concatenation and repetition",
     "{{ 'a' ~ 1 ~ none ~ true ~ missing }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }} {{ 'x' + 'y' }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "a1NoneTrue ababab [1, 1] [1, 2, 3] xy"},
    {"comparisons, chained",
     "{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ none == none }}{{ missing == missing }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueTrueTrueFalseTrueTrueTrueTrue"},
    {"membership",
     "{{ 'b' in 'abc' }}{{ 2 in xs }}{{ 'a' in d }}{{ 5 not in xs }}{{ 'x' in missing }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueTrueTrueTrueFalse"},
    {"and/or return operands",
     "{{ not i }}|{{ i and 'yes' }}|{{ none or 'default' }}|{{ 0 or '' }}|{{ 'a' and 0 }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "False|yes|default||0"},
    {"conditional expressions",
     "{{ 'yes' if i > 5 else 'no' }}|{{ 'a' if false }}|{{ i if i > 9 else 0 if i > 5 else -1 }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "yes||0"},
    {"indexing and slicing",
     "{{ xs[0] }}{{ xs[-1] }}[{{ xs[10] }}]{{ xs[1:] }}{{ xs[:2] }}{{ xs[::-1] }}{{ xs[::2] }}{{ xs[-2:] }}{{ xs[5:0:-1] }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "32[][1, 2][3, 1][2, 1, 3][3, 2][1, 2][2, 1]"},
    {"strings index by character",
     "{{ s[2:7] }}|{{ s[::-1] }}|{{ 'héllo'[1] }}|{{ 'héllo'[1:3] }}|{{ 'héllo'|length }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "Hello|  dlroW olleH  |é|él|5"},
    {"attribute and item access",
     "{{ nested.x.y[2].z }} {{ nested['x']['y'][0] }} {{ nested.x.y.1 }} {{ messages[0].role }} {{ messages[0]['content'] }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "deep 10 20 system S"},
    {"missing attributes are undefined",
     "[{{ messages[0].missing }}]{{ messages[0].missing is defined }}[{{ n.attr }}]",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "[]False[]"},
    {"dict methods",
     "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "2 None dflt ['b', 'a'] [1, 2] [('b', 1), ('a', 2)]"},
    {"values print as Python reprs",
     R"J({{ {'a': 1, 'b': [1, 'x']} }} {{ [] }} {{ () }} {{ (1,) }} {{ (1, 'a') }} {{ true }} {{ none }} {{ n }} {{ ['it\'s', "a\"b", '\n'] }})J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     R"J({'a': 1, 'b': [1, 'x']} [] () (1,) (1, 'a') True None None ["it's", 'a"b', '\n'])J"},
    {"string literal escapes",
     R"J({{ 'a\nb' }}|{{ '\u00e9\x41\101' }}|{{ 'tab\tx' }}|{{ 'back\\slash' }}|{{ 'unknown\d' }}|{{ "dq" 'sq' }})J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     R"J(a
b|éAA|tab	x|back\slash|unknown\d|dqsq)J"},
    {"unary minus and plus",
     "{{ -i }} {{ +i }} {{ -f }} {{ - - i }} {{ -(xs|length) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "-7 7 -1.5 7 -3"},
    {"filters bind tighter than operators",
     "{{ messages|length - 1 }} {{ xs|length * 2 }} {{ not xs|length }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "1 6 False"},
    {"tests",
     "{{ n is none }}{{ n is not none }}{{ i is odd }}{{ i is even }}{{ i is divisibleby 7 }}{{ i is number }}{{ f is float }}{{ i is integer }}{{ true is boolean }}{{ true is true }}{{ 1 is true }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueFalseTrueFalseTrueTrueTrueTrueTrueTrueFalse"},
    {"type tests",
     "{{ s is string }}{{ d is mapping }}{{ xs is sequence }}{{ d is iterable }}{{ i is iterable }}{{ missing is defined }}{{ missing is undefined }}{{ 'abc' is lower }}{{ 'ABC' is upper }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueTrueTrueTrueFalseFalseTrueTrueTrue"},
    {"comparison tests",
     "{{ 2 is in xs }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 3 is gt 2 }}{{ 3 is lessthan 2 }}{{ 3 is ge 3 }}{{ none is sameas none }}{{ range is callable }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueTrueFalseTrueFalseTrueTrueTrue"},
    {"string methods: strip and split",
     "[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xxhixx'.strip('x') }}]{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "[Hello World][Hello World  ][  Hello World][hi]['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a,b', 'c']"},
    {"think-block splitting (Qwen3 pattern)",
     R"J({% set c = '<think>\nplan\n</think>\n\nanswer' %}[{{ c.split('</think>')[-1].lstrip('\n') }}][{{ c.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') }}])J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "[answer][plan]"},
    {"string methods: case and tests",
     R"J({{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}{{ "they're bill's".title() }}{{ 'hELLO'.capitalize() }}{{ '123'.isdigit() }})J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "TrueTrueHELLOhelloThey'Re Bill'SHelloTrue"},
    {"string methods: search and replace",
     "{{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '', 1) }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'abc'.find('z') }} {{ 'aaa'.count('a') }} {{ '-'.join(['a', 'b']) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "a+b+c ab-c 2 5 -1 3 a-b"},
    {"str.format",
     "{{ '{} and {}'.format('a', 1) }}|{{ '{0}{1}{0}'.format('x', 'y') }}|{{ '{name}!'.format(name='Bob') }}|{{ '{:>5}|{:<4}|{:^6}'.format('a', 'b', 'c') }}|{{ '{:.2f}'.format(3.14159) }}|{{ '{:05d}'.format(42) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "a and 1|xyx|Bob!|    a|b   |  c   |3.14|00042"},
    {"printf-style %",
     "{{ '%s and %s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%(x)s' % {'x': 1} }} {{ '%5.1f|%-4s|' % (3.14159, 'ab') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "a and b 50% 1   3.1|ab  |"},
    {"Unicode case mapping",
     "{{ 'straße'|upper }} {{ 'ÉCOLE ΣΟΦΊΑ'|lower }} {{ 'привет'|upper }} {{ 'élan vital'|title }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "STRASSE école σοφία ПРИВЕТ Élan Vital"},
    {"globals",
     "{{ range(3)|list }} {{ dict(a=1, b=2) }} {% set j = joiner(', ') %}{% for x in xs %}{{ j() }}{{ x }}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "[0, 1, 2] {'a': 1, 'b': 2} 3, 1, 2"},
    {"strftime_now",
     "{{ strftime_now('%Y') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}], "s": "  Hello World  ", "n": null, "i": 7, "f": 1.5, "nested": {"x": {"y": [10, 20, {"z": "deep"}]}}})J",
     "2023"},
};
// clang-format on

TEST(ChatTemplateExpressions, MatchJinja2) { expect_renders(kExpressions); }

TEST(ChatTemplateExpressions, UndefinedBehavesLikeJinja2sDefault) {
  // Falsy, prints empty, iterates as empty, has length 0, compares unequal...
  auto out = render_text("[{{ u }}]{{ u is defined }}{{ u|length }}{% if not u %}falsy{% endif %}{{ u == none }}");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "[]False0falsyFalse");
  // ...but anything else done with it fails, naming it.
  EXPECT_CONTAINS(render_error("{{ u.attr }}"), "chat_template:1:6: 'u' is undefined");
  EXPECT_CONTAINS(render_error("{{ u + 1 }}"), "chat_template:1:6: 'u' is undefined");
  EXPECT_CONTAINS(render_error("{{ u() }}"), "'u' is undefined");
  // A missing attribute of a defined value is undefined, not an error,
  // until it is used as a value.
  EXPECT_EQ(render_error("{{ m.missing }}", R"({"m": {}})"), "");
  EXPECT_CONTAINS(render_error("{{ m.missing.deeper }}", R"({"m": {}})"),
                  "chat_template:1:14: 'dict object' has no attribute 'missing'");
  EXPECT_CONTAINS(render_error("{{ m.missing ~ 'x' }}{{ m.missing + 'x' }}", R"({"m": {}})"),
                  "chat_template:1:35: 'dict object' has no attribute 'missing'");
}

TEST(ChatTemplateExpressions, TypeErrorsAreReportedWhereTheyHappen) {
  EXPECT_CONTAINS(render_error("\n  {{ 'a' + 1 }}"), "chat_template:2:10: can only concatenate str (not \"int\") to str");
  EXPECT_CONTAINS(render_error("{{ 1 < 'a' }}"), "'<' not supported between instances of 'int' and 'str'");
  EXPECT_CONTAINS(render_error("{{ 1 // 0 }}"), "integer division or modulo by zero");
  EXPECT_CONTAINS(render_error("{{ 1 in 'abc' }}"), "'in <string>' requires string as left operand, not int");
  EXPECT_CONTAINS(render_error("{{ 'abc'.split('') }}"), "str.split(): empty separator");
  EXPECT_CONTAINS(render_error("{{ 9223372036854775807 + 1 }}"), "integer overflow");
}

TEST(ChatTemplateExpressions, TemplatesCannotModifyValues) {
  // transformers renders in jinja2's immutable sandbox.
  EXPECT_CONTAINS(render_error("{% set xs = [1] %}{{ xs.append(2) }}"), "access to attribute 'append' of 'list' object is unsafe");
  EXPECT_CONTAINS(render_error("{% set d = {} %}{{ d.update({'a': 1}) }}"), "access to attribute 'update' of 'dict' object is unsafe");
}

TEST(ChatTemplateExpressions, KeyOrderOfTheContextIsKept) {
  auto out = render_text("{{ d|tojson }} {% for k in d %}{{ k }}{% endfor %}", R"({"d": {"z": 1, "a": 2}})");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, R"({"z": 1, "a": 2} za)");
}

TEST(ChatTemplateExpressions, StrftimeNowReadsTheGivenTime) {
  auto t = parse_chat_template("{{ strftime_now('%d %b %Y') }}");
  ASSERT_TRUE(t.ok());
  std::tm tm{};
  tm.tm_year = 124;  // 2024
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  t->set_now(std::chrono::system_clock::from_time_t(std::mktime(&tm)));
  auto out = t->render(nlohmann::json::object());
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "26 Jul 2024");
}

}  // namespace
}  // namespace arch::testing
