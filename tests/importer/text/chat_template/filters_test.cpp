// Filters, including transformers' tojson (ensure_ascii=False, indent,
// separators, sort_keys; key order kept), and jinja2's iterator results.
#include "tests/importer/text/chat_template/render_cases.h"

namespace arch::testing {
namespace {

// clang-format off
const RenderCase kFilters[] = {
    {"trim",
     R"J([{{ s|trim }}][{{ s|trim(' Hd') }}][{{ '\u3000x\n'|trim }}][{{ missing|trim }}])J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[Hello World][ello Worl][x][]"},
    {"length and count",
     "{{ s|length }} {{ xs|length }} {{ d|count }} {{ missing|length }} {{ 'héllo'|length }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "15 3 2 0 5"},
    {"case filters",
     "{{ s|upper }}|{{ s|lower }}|{{ 'hello wORLD'|capitalize }}|{{ 'hello wORLD-foo(bar) [x]y'|title }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "  HELLO WORLD  |  hello world  |Hello world|Hello World-Foo(Bar) [X]y"},
    {"join, first, last",
     "{{ xs|join(', ') }}|{{ xs|join }}|{{ messages|join(',', attribute='role') }}|{{ xs|first }}|{{ xs|last }}|{{ e|first }}|{{ s|first }}|{{ d|first }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "3, 1, 2|312|system,user,assistant,user|3|2|| |b"},
    {"selectattr and rejectattr",
     "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ messages|rejectattr('role', 'eq', 'user')|list|length }} {{ messages|selectattr('missing', 'undefined')|list|length }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "['U1', 'U2'] 2 4"},
    {"select and reject",
     "{{ xs|select('odd')|list }} {{ xs|reject('odd')|list }} {{ [0, 1, '', none, 'a']|select|list }} {{ xs|select('gt', 1)|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[3, 1] [2] [1, 'a'] [3, 2]"},
    {"map",
     "{{ xs|map('string')|join('-') }} {{ ['a', 'b']|map('upper')|list }} {{ messages|map(attribute='role')|unique|list }} {{ messages|map(attribute='nope', default='D')|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "3-1-2 ['A', 'B'] ['system', 'user', 'assistant'] ['D', 'D', 'D', 'D']"},
    {"filter results are iterators: truthy even when empty",
     "{% if xs|select('gt', 100) %}truthy{% endif %} {% if xs|select('gt', 100)|list %}{% else %}empty list{% endif %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "truthy empty list"},
    {"an iterator is consumed once",
     "{% set g = xs|select('odd') %}{{ g|list }}{{ g|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[3, 1][]"},
    {"sort, unique, reverse",
     "{{ xs|sort }} {{ xs|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ ['a', 'A', 'b']|unique|list }} {{ 'abc'|reverse }} {{ xs|reverse|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] ['a', 'b'] cba [2, 1, 3]"},
    {"dictsort and items",
     "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }} {{ d|items|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[('a', 2), ('b', 1)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]"},
    {"list and string",
     "{{ xs|list }} {{ 'abc'|list }} {{ d|list }} {{ 42|string }} {{ none|string }} [{{ missing|string }}]",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[3, 1, 2] ['a', 'b', 'c'] ['b', 'a'] 42 None []"},
    {"default",
     "{{ missing|default('dflt') }}|{{ ''|default('dflt') }}|{{ ''|default('dflt', true) }}|{{ none|default('x') }}|{{ missing|d('d') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "dflt||dflt|None|d"},
    {"replace",
     "{{ 'x-x'|replace('x', 'y') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "y-y bba -a-b-c-"},
    {"int and float",
     "{{ '42'|int }} {{ '42.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ ' 12 '|int }} {{ '0x1A'|int(0, 16) }} {{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "42 42 0 5 3 12 26 3.5 0.0 2.0"},
    {"indent",
     R"J([{{ 'a\nb\n\nc'|indent }}] [{{ 'a\nb'|indent(2, true) }}] [{{ 'a\n\nb'|indent(2, blank=true) }}] [{{ 'a\nb'|indent('>> ') }}])J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     R"J([a
    b

    c] [  a
  b] [a
  
  b] [a
>> b])J"},
    {"numbers",
     "{{ -3|abs }} {{ (-3)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(method='ceil') }} {{ 7|round }} {{ xs|sum }} {{ xs|min }} {{ xs|max }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "3 3 2.0 4.0 2.67 3.0 7 6 1 3"},
    {"batch and slice",
     "{{ xs|batch(2)|list }} {{ xs|batch(2, 0)|list }} {{ [1, 2, 3, 4, 5]|slice(2)|list }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[[3, 1], [2]] [[3, 1], [2, 0]] [[1, 2, 3], [4, 5]]"},
    {"center, wordcount, format, escape, safe",
     R"J([{{ 'hi'|center(8) }}] {{ 'one two  three'|wordcount }} {{ '%s-%d'|format('a', 3) }} {{ '<a href="x">&</a>'|e }} {{ 'x'|safe }})J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     "[   hi   ] 3 a-3 &lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt; x"},
    {"tojson",
     R"J({{ d|tojson }} {{ args|tojson }} {{ [1, 'é', none, true, 1.5, {'k': []}]|tojson }} {{ 'é\n"\\'|tojson }})J",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     R"J({"b": 1, "a": 2} {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5} [1, "é", null, true, 1.5, {"k": []}] "é\n\"\\")J"},
    {"tojson options",
     "{{ 'é'|tojson(ensure_ascii=true) }} {{ d|tojson(sort_keys=true) }} {{ d|tojson(separators=(',', ':')) }} {{ e|tojson(indent=2) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     R"J("\u00e9" {"a": 2, "b": 1} {"b":1,"a":2} [])J"},
    {"tojson with indent keeps key order",
     "{{ tools[0]|tojson(indent=4) }}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     R"J({
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather — für Städte",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string"
                },
                "days": {
                    "type": "integer",
                    "minimum": 1
                }
            },
            "required": [
                "city"
            ]
        }
    }
})J"},
    {"tool call arguments (Llama 3.1 style)",
     "{% for name, value in args|items %}{{ name }}={{ value|tojson }}{% if not loop.last %}, {% endif %}{% endfor %}",
     R"J({"xs": [3, 1, 2], "d": {"b": 1, "a": 2}, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}], "s": "  Hello World  ", "e": [], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather — für Städte", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}], "args": {"city": "Paris", "days": 2, "unit": null, "ok": true, "ratio": 0.5}})J",
     R"J(city="Paris", days=2, unit=null, ok=true, ratio=0.5)J"},
};
// clang-format on

TEST(ChatTemplateFilters, MatchJinja2) { expect_renders(kFilters); }

TEST(ChatTemplateFilters, IteratorsHaveNoLength) {
  // As in jinja2: select() gives a generator; |list is needed before |length.
  EXPECT_CONTAINS(render_error("{{ [1, 2]|select('odd')|length }}"), "object of type 'generator' has no len()");
}

TEST(ChatTemplateFilters, BadArgumentsNameTheFilter) {
  EXPECT_CONTAINS(render_error("{{ [1]|join(', ', bogus=1) }}"),
                  "chat_template:1:8: filter 'join' got an unexpected keyword argument 'bogus'");
  EXPECT_CONTAINS(render_error("{{ 'x'|indent(1, 2, 3, 4) }}"), "filter 'indent' takes at most 3 arguments (4 given)");
  EXPECT_CONTAINS(render_error("{{ 5|items }}"), "filter 'items': Can only get item pairs from a mapping.");
  EXPECT_CONTAINS(render_error("{{ u|tojson }}"), "filter 'tojson': Object of type Undefined is not JSON serializable");
}

}  // namespace
}  // namespace arch::testing
