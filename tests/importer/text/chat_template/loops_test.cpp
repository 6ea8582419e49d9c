// for loops (loop.*, filters, else, unpacking, break/continue), jinja2's
// scoping rules, namespace(), set forms, with, macros, filter blocks.
#include "tests/importer/text/chat_template/render_cases.h"

namespace arch::testing {
namespace {

// clang-format off
const RenderCase kLoopsAndScopes[] = {
    {"loop variables",
     "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "10TrueFalse332;21FalseFalse321;32FalseTrue310;"},
    {"previtem, nextitem, cycle, changed",
     "{% for x in [1, 1, 2] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {{ loop.cycle('odd', 'even') }} {{ loop.changed(x) }}|{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "<1>1 odd True|1<1>2 even False|1<2> odd True|"},
    {"loop filter counts only kept items",
     "{% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }},{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "3:1/2,2:2/2,"},
    {"for-else on an empty list",
     "{% for x in e %}{{ x }}{% else %}empty{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "empty"},
    {"for-else when the filter keeps nothing",
     "{% for x in xs if x > 9 %}{{ x }}{% else %}none{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "none"},
    {"tuple unpacking over items()",
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "b=1;a=2;"},
    {"tuple unpacking over the items filter",
     "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "b=1;a=2;"},
    {"parenthesized targets",
     "{% for (a, b) in [[1, 2], [3, 4]] %}{{ a * b }} {% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "2 12 "},
    {"iterating a dict gives its keys",
     "{% for k in d %}{{ k }}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "ba"},
    {"iterating a string gives characters",
     "{% for c in 'héllo' %}[{{ c }}]{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "[h][é][l][l][o]"},
    {"iterating undefined is empty",
     "{% for x in missing %}{{ x }}{% else %}nothing{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "nothing"},
    {"reversed with [::-1] and |reverse",
     "{% for m in messages[::-1] %}{{ m.role[0] }}{% endfor %} {% for m in messages|reverse %}{{ m.role[0] }}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "uaus uaus"},
    {"range",
     "{% for i in range(3) %}{{ i }}{% endfor %} {% for i in range(1, 10, 4) %}{{ i }}{% endfor %} {% for i in range(3, 0, -1) %}{{ i }}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "012 159 321"},
    {"break and continue",
     "{% for x in [1, 2, 3, 4, 5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "13"},
    {"nested loops shadow loop",
     "{% for x in [1, 2] %}{% set outer = loop %}{% for y in 'ab' %}{{ outer.index }}{{ loop.index }}{{ y }} {% endfor %}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "11a 12b 21a 22b "},
    {"a set inside a loop does not leak out",
     "{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }} {% endfor %}after: {{ x }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "01 02 after: 0"},
    {"each iteration starts from the outer scope",
     "{% for i in [1, 2] %}{% if i == 1 %}{% set y = 'set' %}{% endif %}[{{ y }}]{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "[set][]"},
    {"if blocks do not open a scope",
     "{% if true %}{% set x = 'inner' %}{% endif %}{{ x }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "inner"},
    {"namespace carries values out of loops",
     "{% set ns = namespace(found=false, count=0, text='') %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.count = ns.count + 1 %}{% set ns.text = ns.text ~ m.content %}{% endif %}{% if m.role == 'system' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.count }} {{ ns.text }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "True 2 U1U2"},
    {"namespace from a dict, missing attributes",
     "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}[{{ ns.c }}]{{ ns.c is defined }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "12[]False"},
    {"last user message index (Qwen3 pattern)",
     "{% set ns = namespace(last=-1) %}{% for m in messages[::-1] %}{% set i = (messages|length - 1) - loop.index0 %}{% if ns.last == -1 and m.role == 'user' %}{% set ns.last = i %}{% endif %}{% endfor %}{{ ns.last }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "3"},
    {"tuple assignment",
     "{% set a, b = 1, 'two' %}{{ a }} {{ b }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "1 two"},
    {"block set with a filter",
     "{% set x | upper %}inner {{ xs|length }}{% endset %}[{{ x }}]",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "[INNER 3]"},
    {"with opens a scope",
     "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "3[]"},
    {"macros with defaults and keywords",
     "{% macro turn(role, text='') %}<{{ role }}>{{ text|trim }}</{{ role }}>{% endmacro %}{{ turn('user', ' hi ') }}{{ turn(text='x', role='bot') }}{{ turn('sys') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "<user>hi</user><bot>x</bot><sys></sys>"},
    {"macro missing argument is undefined",
     "{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "[1||False]"},
    {"recursive macro",
     "{% macro count(n) %}{% if n > 0 %}{{ n }}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(4) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "4321"},
    {"macro varargs and kwargs",
     "{% macro m(a) %}{{ a }} {{ varargs }} {{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "1 (2, 3) {'k': 'v'}"},
    {"macros see variables set after their definition",
     "{% macro m() %}{{ later }}{% endmacro %}{% set later = 'late' %}{{ m() }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "late"},
    {"filter block",
     "{% filter upper %}hello {{ d.a }}{% endfilter %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "HELLO 2"},
    {"generation block renders its body",
     "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endif %}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "[A1]"},
    {"print tag",
     "{% print 'a', 1 %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "e": []})J",
     "a1"},
};
// clang-format on

TEST(ChatTemplateLoops, LoopsScopesAndNamespacesMatchJinja2) { expect_renders(kLoopsAndScopes); }

TEST(ChatTemplateLoops, UnpackingTheWrongNumberOfValuesIsAnError) {
  EXPECT_CONTAINS(render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
                  "chat_template:1:8: too many values to unpack (expected 2)");
  EXPECT_CONTAINS(render_error("{% for a, b in [[1]] %}{% endfor %}"),
                  "chat_template:1:8: not enough values to unpack (expected 2, got 1)");
}

TEST(ChatTemplateLoops, AssigningAnAttributeNeedsANamespace) {
  EXPECT_CONTAINS(render_error("{% set x = 1 %}\n{% set x.a = 2 %}"),
                  "chat_template:2:8: cannot assign attribute 'a' on 'x': it is not a namespace()");
}

TEST(ChatTemplateLoops, IteratingANumberIsAnError) {
  EXPECT_CONTAINS(render_error("{% for x in n %}{% endfor %}", R"({"n": 5})"),
                  "chat_template:1:13: 'int' object is not iterable");
}

TEST(ChatTemplateLoops, MacroArgumentsAreChecked) {
  EXPECT_CONTAINS(render_error("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
                  "macro 'm' takes not more than 1 argument(s)");
  EXPECT_CONTAINS(render_error("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}"),
                  "macro 'm' takes no keyword argument 'b'");
}

TEST(ChatTemplateLoops, RunawayMacroRecursionIsAnError) {
  EXPECT_CONTAINS(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
                  "the nesting of blocks, expressions and macro calls being evaluated (257) exceeds the limit 'chat_depth'");
}

}  // namespace
}  // namespace arch::testing
