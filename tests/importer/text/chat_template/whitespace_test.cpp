// Whitespace control exactly as jinja2 with trim_blocks and lstrip_blocks:
// "-" and "+" markers, comments, raw blocks, CRLF, the trailing newline.
#include "tests/importer/text/chat_template/render_cases.h"

namespace arch::testing {
namespace {

// clang-format off
const RenderCase kWhitespace[] = {
    {"block tags eat the newline after them (trim_blocks)",
     R"J({% if true %}
yes
{% endif %}
after)J",
     "{}",
     R"J(yes
after)J"},
    {"indentation before a block tag is dropped (lstrip_blocks)",
     R"J(a
    {% if true %}
    b
    {% endif %}
c)J",
     "{}",
     R"J(a
    b
c)J"},
    {"indentation before {{ is kept",
     R"J(a
    {{ 'v' }}
  b)J",
     "{}",
     R"J(a
    v
  b)J"},
    {"text before a tag on the same line is kept",
     "a  {% if true %}  b  {% endif %}  c",
     "{}",
     "a    b    c"},
    {"lstrip applies after a tag that ate its newline",
     R"J({% set x = 1 %}
  {% if true %}x{% endif %})J",
     "{}",
     "x"},
    {"minus strips all whitespace on its side",
     R"J(a

  {%- if true -%}

  b  

  {%- endif -%}  

 c)J",
     "{}",
     "abc"},
    {"minus on expressions",
     R"J(a  
  {{- 'v' -}}  
  b)J",
     "{}",
     "avb"},
    {"plus keeps indentation and the newline",
     R"J(a
  {%+ if true +%}
b
  {%+ endif %}
c)J",
     "{}",
     R"J(a
  
b
  c)J"},
    {"comments are removed like block tags",
     R"J(x
    {# note #}
  y
  {#- tight -#}
  z)J",
     "{}",
     R"J(x
  yz)J"},
    {"raw blocks are text",
     "{% raw %}{{ not parsed }} {% if %}{% endraw %}!",
     "{}",
     "{{ not parsed }} {% if %}!"},
    {"raw block whitespace control",
     R"J(a
  {% raw -%}
  {{ x }}
  {%- endraw %}
b)J",
     "{}",
     R"J(a
{{ x }}b)J"},
    {"CRLF becomes LF and one trailing newline is dropped",
     "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n",
     "{}",
     R"J(a
b
)J"},
    {"only one trailing newline is dropped",
     R"J(a

)J",
     "{}",
     R"J(a
)J"},
    {"tabs count as indentation",
     R"J(		{% if true %}x{% endif %}
	{{ 'y' }})J",
     "{}",
     "x\ty"},
    {"no-break space counts as whitespace for lstrip",
     "  {% if true %}x{% endif %}",
     "{}",
     "x"},
    {"non-space text prevents lstrip",
     R"J(a {% if true %}x{% endif %}
 b {% if true %}y{% endif %})J",
     "{}",
     "a x b y"},
    {"empty branches leave nothing",
     R"J({% if true %}

{% endif %}|{% if false %}
no
{% else %}
yes
{% endif %}|)J",
     "{}",
     R"J(
|yes
|)J"},
    {"for loop body lines",
     R"J(items:
{% for x in xs %}
  - {{ x }}
{% endfor %}
end)J",
     R"J({"xs": [1, 2]})J",
     R"J(items:
  - 1
  - 2
end)J"},
    {"set tags vanish with their line",
     R"J(a
{% set y = 2 %}
{{ y }}
{%- set z = 3 %}
{{ z }})J",
     "{}",
     R"J(a
23)J"},
};
// clang-format on

TEST(ChatTemplateWhitespace, MatchesJinja2) { expect_renders(kWhitespace); }

TEST(ChatTemplateWhitespace, ExpressionTagsAreNotLstripped) {
  // lstrip_blocks only affects {% %} and {# #}; "{{" keeps its indentation.
  auto out = render_text("x\n   {{ 1 }}\n   {% if true %}2{% endif %}");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "x\n   1\n2");
}

}  // namespace
}  // namespace arch::testing
