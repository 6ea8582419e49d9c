// Hostile chat templates are refused by a named limit (engine/core/limits.h:
// chat_text_bytes, chat_iterations, chat_depth) before they allocate or run
// away, quickly, with the message core's over_limit writes; a user who
// raises the limit gets the render.
#include <chrono>
#include <string>

#include "tests/importer/text/chat_template/render_cases.h"
#include "tests/importer/text/limit_for.h"
#include "tests/time_bound.h"

namespace arch::testing {
namespace {

// The error of rendering `tmpl`, which must come quickly: each takes well
// under a second here, and the bound leaves room for a loaded machine while
// still catching a render that runs away.
std::string refusal(const std::string& tmpl, const std::string& context = "{}") {
  auto start = std::chrono::steady_clock::now();
  std::string err = render_error(tmpl, context);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, time_bound(5.0)) << tmpl.substr(0, 200);
  EXPECT_NE(err, "") << "rendered: " << tmpl.substr(0, 200);
  return err;
}

const std::string kRaise = "; if this is meant, raise it with --limit ";

// ---- chat_text_bytes ----

TEST(ChatTemplateLimits, DoublingAStringIsRefusedBeforeItIsBuilt) {
  // The sweep's template: 64 doublings in a namespace (loop scopes would
  // otherwise drop each one). 2 << 25 bytes is exactly the limit; the next
  // doubling is refused before it is made.
  EXPECT_EQ(refusal("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                    "{% endfor %}{{ ns.s }}"),
            "chat_template:1:76: the size in bytes of the string '+' makes (134217728) exceeds the limit "
            "'chat_text_bytes' (67108864)" + kRaise + "chat_text_bytes=N or ARCHETYPE_LIMITS=chat_text_bytes=N");
  {
    LimitFor smaller("chat_text_bytes", 1 << 20);  // the same check, with less to build first
    EXPECT_CONTAINS(refusal("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                            "{% endfor %}"),
                    "chat_template:1:76: the size in bytes of the string '~' makes (2097152) exceeds the limit "
                    "'chat_text_bytes' (1048576)");
    EXPECT_CONTAINS(refusal("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s ~ 1 %}"
                            "{% endfor %}"),
                    "exceeds the limit 'chat_text_bytes' (1048576)");
  }
  // Without a namespace jinja2 rebinds s in each iteration's scope: no growth.
  EXPECT_EQ(render_error("{% set s = 'ab' %}{% for i in range(64) %}{% set s = s + s %}{% endfor %}{{ s }}"), "");
}

TEST(ChatTemplateLimits, RepetitionIsSizedFirst) {
  EXPECT_CONTAINS(refusal("{{ 'x' * 10**12 }}"),
                  "chat_template:1:8: the size in bytes of the string '*' makes (1000000000000) exceeds the limit "
                  "'chat_text_bytes' (67108864)");
  EXPECT_CONTAINS(refusal("{{ s * n }}", R"({"s": "abcd", "n": 4611686018427387904})"),
                  "the size in bytes of the string '*' makes (9223372036854775807) exceeds the limit 'chat_text_bytes'");
  EXPECT_CONTAINS(refusal("{{ (['a', 'b'] * 10**12)|length }}"),
                  "chat_template:1:16: the size in bytes of the list '*' makes, 2000000000000 items at 64 bytes and "
                  "the 2000000000000 bytes of the strings it holds (130000000000000) exceeds the limit "
                  "'chat_text_bytes' (67108864)");
  EXPECT_CONTAINS(refusal("{{ ((1, 2) * 1000000)|length }}"), "the tuple '*' makes, 2000000 items at 64 bytes");
  // Lists doubled by '+'.
  EXPECT_CONTAINS(refusal("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}"
                          "{% endfor %}"),
                  "the size in bytes of the list '+' makes, 2097152 items at 64 bytes and the 0 bytes of the strings "
                  "it holds (134217728) exceeds the limit 'chat_text_bytes'");
  EXPECT_EQ(render_text("{{ 'ab' * 3 }}{{ ([0] * 3)|length }}").value(), "ababab3");
}

// {"l": [n strings of `bytes` x's], "s": one of them}: a list that holds
// more text than a template may make (a context's lists are not limited).
std::string long_list(int n, int bytes) {
  const std::string item = "\"" + std::string(bytes, 'x') + "\"";
  std::string json = "{\"s\": " + item + ", \"l\": [";
  for (int i = 0; i < n; ++i) json += (i ? "," : "") + item;
  return json + "]}";
}

TEST(ChatTemplateLimits, ListsHoldingMuchTextAreRefused) {
  // At 1 MiB rather than the default 64: the same checks, a hundred times
  // less text to build before them.
  LimitFor smaller("chat_text_bytes", 1 << 20);
  const std::string big = "{% set s = 'x' * 10000 %}";
  // Repeating or concatenating a list counts the strings it holds, shared
  // or not: it is how a template would gather text without end.
  EXPECT_EQ(refusal(big + "{{ [s] * 1000 }}"),
            "chat_template:1:33: the size in bytes of the list '*' makes, 1000 items at 64 bytes and the 10000000 "
            "bytes of the strings it holds (10064000) exceeds the limit 'chat_text_bytes' (1048576)" + kRaise +
            "chat_text_bytes=N or ARCHETYPE_LIMITS=chat_text_bytes=N");
  EXPECT_CONTAINS(refusal(big + "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}"
                                "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}"),
                  "chat_template:1:101: the size in bytes of the list '+' makes, 105 items at 64 bytes and the "
                  "1050205 bytes of the strings it holds (1056925) exceeds the limit 'chat_text_bytes' (1048576)");
}

TEST(ChatTemplateLimits, PrintingAndJoiningManyCopiesIsRefused) {
  LimitFor smaller("chat_text_bytes", 1 << 20);
  const std::string many = long_list(1000, 10000);  // 10 MB of text, 10,000 bytes an item
  EXPECT_EQ(refusal("{{ l }}", many),
            "chat_template:1:4: the size in bytes of the printed form of a list, at least (1048577) exceeds the "
            "limit 'chat_text_bytes' (1048576)" + kRaise + "chat_text_bytes=N or ARCHETYPE_LIMITS=chat_text_bytes=N");
  // 104 items and their commas fit, the 105th does not.
  EXPECT_CONTAINS(refusal("{{ l|join(',') }}", many),
                  "chat_template:1:6: filter 'join': the size in bytes of the string filter 'join' makes (1050104) "
                  "exceeds the limit 'chat_text_bytes' (1048576)");
  EXPECT_CONTAINS(refusal("{{ ','.join(l) }}", many),
                  "the size in bytes of the string str.join() makes (1050104) exceeds the limit 'chat_text_bytes'");
  EXPECT_CONTAINS(refusal("{{ l|tojson }}", many),
                  "filter 'tojson': the size in bytes of the JSON text tojson makes, at least (1050419) exceeds the "
                  "limit 'chat_text_bytes'");
  EXPECT_CONTAINS(refusal("{{ l|string|length }}", many), "the printed form of a list, at least (1048577)");
  EXPECT_CONTAINS(refusal("{{ 'a' ~ l }}", many), "the printed form of a list, at least (1048577)");
  EXPECT_CONTAINS(refusal("{{ '%s' % (l,) }}", many), "the printed form of a list, at least (1048577)");
  EXPECT_CONTAINS(refusal("{{ '{}'.format(l) }}", many), "the printed form of a list, at least (1048577)");
  EXPECT_CONTAINS(refusal("{{ {'k': l} }}", many), "the printed form of a dict, at least (1048577)");
  EXPECT_CONTAINS(refusal("{% set ns = namespace(a=l) %}{{ ns }}", many),
                  "the printed form of a Namespace, at least (1048577)");
  // Lists a template makes, nested so that no one holds much text itself.
  EXPECT_CONTAINS(refusal("{{ [[s] * 50] * 30 }}", many), "the printed form of a list, at least (1048577)");
  // Filters that make a new string per item hold them all at once.
  EXPECT_CONTAINS(refusal("{{ l|map('upper')|list|length }}", many),
                  "filter 'map': the size in bytes of the strings filter 'map' keeps (1050000) exceeds the limit "
                  "'chat_text_bytes' (1048576)");
  EXPECT_CONTAINS(refusal("{{ l|sort|length }}", many),
                  "the size in bytes of the strings filter 'sort' keeps (1050000) exceeds the limit");
  EXPECT_EQ(render_text("{{ l|map('string')|list|length }}{{ ['B', 'a']|sort }}", many).value(), "1000['a', 'B']");
  // The rendered text itself.
  EXPECT_EQ(refusal("{% for x in l %}{{ x }}{% endfor %}", many),
            "chat_template:1:20: the size in bytes of the rendered text (1050000) exceeds the limit "
            "'chat_text_bytes' (1048576)" + kRaise + "chat_text_bytes=N or ARCHETYPE_LIMITS=chat_text_bytes=N");
  EXPECT_CONTAINS(refusal("{% filter upper %}{% for x in l %}{{ x }}{% endfor %}{% endfilter %}", many),
                  "the size in bytes of the rendered text (1050000)");
}

TEST(ChatTemplateLimits, FormattingWidthsAreChecked) {
  EXPECT_CONTAINS(refusal("{{ '%999999999999s' % 'x' }}"),
                  "the width of a '%' conversion, in bytes (999999999999) exceeds the limit 'chat_text_bytes'");
  // Digits past 64 bits saturate instead of throwing.
  EXPECT_CONTAINS(refusal("{{ '%99999999999999999999999999d' % 1 }}"), "the width of a '%' conversion");
  EXPECT_CONTAINS(refusal("{{ '%*s' % (10**12, 'x') }}"), "the width of a '%' conversion");
  EXPECT_CONTAINS(refusal("{{ '%.999999999f' % 1.5 }}"), "the precision of a '%' conversion");
  EXPECT_CONTAINS(refusal("{{ '{:>999999999}'.format('x') }}"),
                  "the width of a format field, in bytes (999999999) exceeds the limit 'chat_text_bytes'");
  EXPECT_CONTAINS(refusal("{{ '{:{}}'.format('x', 10**12) }}"), "the width of a format field");
  EXPECT_CONTAINS(refusal("{{ '%s' | format('x' * 1000000) * 100 }}"), "'chat_text_bytes'");
  // Python's own refusals, not crashes.
  EXPECT_CONTAINS(refusal("{{ '{99999999999999999999999}'.format(1) }}"), "Replacement index 99999999999999999999999 out of range");
  EXPECT_CONTAINS(refusal("{{ '{:{:{:}}}'.format(1, 2, 3) }}"), "Max string recursion exceeded");
  // Ordinary formatting is unchanged, wide numbers included.
  EXPECT_EQ(render_text("{{ '%5s|%-4d|%.3f|%*s' % ('a', 7, 2.5, 3, 'b') }}").value(), "    a|7   |2.500|  b");
  EXPECT_EQ(render_text("{{ '%.600f' % 1.0 }}").value(), "1." + std::string(600, '0'));
  EXPECT_EQ(render_text("{{ '{:>6}|{:^5}'.format('ab', 1) }}").value(), "    ab|  1  ");
}

TEST(ChatTemplateLimits, StringFiltersAndMethodsAreSizedFirst) {
  const std::string big = "{% set s = 'x' * 1000000 %}";
  EXPECT_CONTAINS(refusal(big + "{{ s.replace('x', 'yy' * 100) }}"),
                  "str.replace(): the size in bytes of the string str.replace() makes (200000000) exceeds the limit "
                  "'chat_text_bytes'");
  EXPECT_CONTAINS(refusal(big + "{{ s|replace('', 'abc' * 30) }}"),
                  "the size in bytes of the string filter 'replace' makes (91000090) exceeds the limit");
  EXPECT_CONTAINS(refusal("{{ 'x'|center(10**12) }}"), "the size in bytes of the string filter 'center' makes (1000000000000)");
  EXPECT_CONTAINS(refusal("{{ 'x'.ljust(10**12) }}"), "the size in bytes of the string str.ljust() makes (1000000000000)");
  EXPECT_CONTAINS(refusal("{{ 'x'.zfill(10**12) }}"), "the string str.zfill() makes");
  EXPECT_CONTAINS(refusal("{{ 'a\nb'|indent(10**12) }}"),
                  "the size in bytes of the indentation filter 'indent' makes (1000000000000)");
  EXPECT_CONTAINS(refusal("{{ ('\n' * 1000000)|indent('x' * 100, blank=true) }}"),
                  "the size in bytes of the string filter 'indent' makes (101000000)");
  EXPECT_CONTAINS(refusal("{{ {'a': 1}|tojson(indent=10**12) }}"), "the indentation filter 'tojson' makes");
  EXPECT_CONTAINS(refusal("{% set s = '&' * 20000000 %}{{ s|escape|length }}"),
                  "the size in bytes of the string filter 'escape' makes (100000000)");
  EXPECT_CONTAINS(refusal("{{ strftime_now('%Y' * 5000000) }}"),
                  "strftime_now: the size in bytes of the buffer strftime_now() writes into (80000256) exceeds the limit");
  // Lists a string is cut into, counted before they are made.
  EXPECT_CONTAINS(refusal("{{ (',' * 2000000).split(',')|length }}"),
                  "the size in bytes of the list str.split() makes, 2000001 items at 64 bytes (128000064) exceeds the limit");
  EXPECT_CONTAINS(refusal("{{ ('a ' * 2000000).split()|length }}"), "the list str.split() makes, 2000000 items");
  EXPECT_CONTAINS(refusal("{{ ('\n' * 2000000).splitlines()|length }}"), "the list str.splitlines() makes, 2000000 items");
  EXPECT_CONTAINS(refusal("{{ ('x' * 2000000)|list|length }}"),
                  "the size in bytes of the characters of a string as a list, 2000000 items at 64 bytes (128000000)");
  EXPECT_CONTAINS(refusal("{% for c in 'x' * 2000000 %}{% endfor %}"), "the characters of a string as a list");
  // What stays within the limit works, and first/last/reverse need no list.
  EXPECT_EQ(render_text("{{ ('ab' * 2000000)|first }}{{ ('ab' * 2000000)|last }}{{ ('ab' * 2000000)|reverse|length }}"
                        "{{ 'héllo'|last }}{{ 'héllo'|reverse }}{{ 'a b'.split()|length }}")
                .value(),
            "ab4000000oolléh2");
  EXPECT_EQ(render_text("{{ 'a\nb'|indent(2, first=true) }}|{{ 'x'|center(5) }}|{{ 'ab'.replace('', '-') }}").value(),
            "  a\n  b|  x  |-a-b-");
  // Long strings are walked, not indexed through a table of offsets: the
  // results stay Python's.
  EXPECT_EQ(render_text("{{ '  h\u00e9llo  '.strip() }}|{{ 'xxh\u00e9yy'.strip('xy') }}|{{ 'h\u00e9llo'[1:3] }}|"
                        "{{ 'h\u00e9llo'.startswith('\u00e9l', 1) }}|{{ 'h\u00e9llo'.find('l', -3) }}|{{ ' a '|trim }}|"
                        "{{ '  x'.rstrip() }}.|{{ '   '.lstrip() }}.")
                .value(),
            "h\u00e9llo|h\u00e9|\u00e9l|True|2|a|  x.|.");
}

TEST(ChatTemplateLimits, BatchAndSliceCountTheListsTheyMake) {
  EXPECT_CONTAINS(refusal("{{ [1]|batch(10**12, 0)|list|length }}"),
                  "the last batch filter 'batch' fills, 1000000000000 items at 64 bytes");
  EXPECT_CONTAINS(refusal("{{ [1]|slice(10**12)|list|length }}"), "the list of slices filter 'slice' makes");
  EXPECT_EQ(render_text("{{ [1, 2, 3]|batch(2, 0)|list }}{{ [1, 2, 3]|slice(2)|list }}").value(),
            "[[1, 2], [3, 0]][[1, 2], [3]]");
}

// ---- chat_memory_bytes ----

// Strings of allowed size in many variables add up: what the render holds
// at once is bounded too, and what it frees no longer counts.
TEST(ChatTemplateLimits, WhatARenderHoldsAtOnceIsBounded) {
  LimitFor held("chat_memory_bytes", 20000000);
  const std::string err = refusal(
      "{% set a = 'x' * 8000000 %}{% set b = a ~ 'y' %}{% set c = b ~ 'z' %}{% set d = c ~ 'w' %}{{ d|length }}");
  EXPECT_CONTAINS(err, "the size in bytes of the string '~' makes with the ");
  EXPECT_CONTAINS(err, " bytes the render's strings and lists hold (");
  EXPECT_CONTAINS(err, "exceeds the limit 'chat_memory_bytes' (20000000)" + kRaise + "chat_memory_bytes=N");
  // Lists' slots count too (64 bytes an item).
  EXPECT_CONTAINS(refusal("{% set a = [0] * 200000 %}{% set b = [1] * 200000 %}{{ (a + b)|length }}"),
                  "exceeds the limit 'chat_memory_bytes' (20000000)");
  // A loop's scope is freed at each turn: fifty 1 MB strings, one at a time.
  EXPECT_EQ(render_text("{% for i in range(50) %}{% set s = 'x' * 1000000 %}{{ s|length > 0 }}{% endfor %}").value(),
            [] {
              std::string t;
              for (int i = 0; i < 50; ++i) t += "True";
              return t;
            }());
}

// ---- chat_iterations ----

TEST(ChatTemplateLimits, LoopsShareOneIterationBudget) {
  // 10**10 iterations in two nested loops: stopped at the budget.
  LimitFor fewer("chat_iterations", 200000);  // the default takes seconds to reach; the count is the same
  EXPECT_EQ(refusal("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
            "chat_template:1:32: the loop iterations of this render (200001) exceeds the limit 'chat_iterations' "
            "(200000)" + kRaise + "chat_iterations=N or ARCHETYPE_LIMITS=chat_iterations=N");
  // A loop filter counts the items it probes.
  EXPECT_CONTAINS(refusal("{% for i in range(100000) %}{% for j in range(100000) if j < 0 %}{% endfor %}{% endfor %}"),
                  "the loop iterations of this render (200001) exceeds the limit 'chat_iterations'");
}

TEST(ChatTemplateLimits, NestedRangeLoopsStopAtTheDefaultBudget) {
  // 10**10 iterations would take hours; the default budget of a million
  // stops them in a fraction of a second (the range is made once here: the
  // inner range(100000) made ten times would cost as much again).
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render_error("{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"),
            "chat_template:1:47: the loop iterations of this render (1000001) exceeds the limit 'chat_iterations' "
            "(1000000)" + kRaise + "chat_iterations=N or ARCHETYPE_LIMITS=chat_iterations=N");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), time_bound(10.0));
}

TEST(ChatTemplateLimits, HugeRangesAreRefusedBeforeTheyAreBuilt) {
  EXPECT_EQ(refusal("{{ range(10**12)|length }}"),
            "chat_template:1:4: range: the length of range() (1000000000000) exceeds the limit 'chat_iterations' "
            "(1000000)" + kRaise + "chat_iterations=N or ARCHETYPE_LIMITS=chat_iterations=N");
  EXPECT_CONTAINS(refusal("{% for i in range(-9223372036854775807, 9223372036854775807) %}{% endfor %}"),
                  "the length of range() (9223372036854775807) exceeds");  // 2**64 - 2, shown at most int64
  // Below the budget, jinja2's sandbox bound (MAX_RANGE) still applies.
  EXPECT_CONTAINS(refusal("{{ range(1000000)|length }}"), "Range too big");
  EXPECT_EQ(render_text("{{ range(3)|list }}{{ range(10, 0, -3)|list }}{{ range(5, 5)|list }}").value(),
            "[0, 1, 2][10, 7, 4, 1][]");
}

TEST(ChatTemplateLimits, QuadraticFiltersCountTheirComparisons) {
  EXPECT_CONTAINS(refusal("{{ range(100000)|unique|list|length }}"),
                  "the loop iterations of this render (filter 'unique' comparing items) (");
  EXPECT_CONTAINS(refusal("{{ dict(range(100000)|batch(2))|length }}"),
                  "the loop iterations of this render (dict() comparing keys) (1249975000) exceeds");
  EXPECT_EQ(render_text("{{ [1, 2, 1]|unique|list }}{{ dict([['a', 1], ['a', 2]]) }}").value(), "[1, 2]{'a': 2}");
}

// ---- chat_depth ----

TEST(ChatTemplateLimits, DeepNestingIsRefusedWhileParsing) {
  const std::string tail = kRaise + "chat_depth=N or ARCHETYPE_LIMITS=chat_depth=N";
  EXPECT_EQ(refusal("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"),
            "chat_template:1:132: the nesting of the expression (257) exceeds the limit 'chat_depth' (256)" + tail);
  std::string ifs;
  for (int i = 0; i < 100000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(refusal(ifs), "chat_template:1:3332: the nesting of blocks (257) exceeds the limit 'chat_depth' (256)" + tail);
  std::string fors;
  for (int i = 0; i < 100000; ++i) fors += "{% for x in y %}";
  EXPECT_CONTAINS(refusal(fors), "the nesting of blocks (257) exceeds the limit 'chat_depth'");
  EXPECT_CONTAINS(refusal("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}"),
                  "the nesting of the expression (257) exceeds the limit 'chat_depth'");
  EXPECT_CONTAINS(refusal("{{ " + std::string(100000, '-') + "1 }}"), "exceeds the limit 'chat_depth'");
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_CONTAINS(refusal(nots + "1 }}"), "the nesting of the expression (257) exceeds the limit 'chat_depth'");
  // Chains grow the tree without recursion in the parser.
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " ~ 1";
  EXPECT_CONTAINS(refusal(chain + " }}"),
                  "the height of the expression (operators nested or chained) (257) exceeds the limit 'chat_depth'");
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|upper";
  EXPECT_CONTAINS(refusal(filters + " }}"), "the height of the expression (operators nested or chained) (257)");
}

TEST(ChatTemplateLimits, DeepEvaluationIsRefusedWhileRendering) {
  EXPECT_EQ(refusal("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
            "chat_template:1:19: the nesting of blocks, expressions and macro calls being evaluated (257) exceeds "
            "the limit 'chat_depth' (256)" + kRaise + "chat_depth=N or ARCHETYPE_LIMITS=chat_depth=N");
  // Recursion through a deep argument, and mutual recursion.
  std::string deep = "n";
  for (int i = 0; i < 100; ++i) deep = "(" + deep + " + 0)";
  EXPECT_CONTAINS(refusal("{% macro m(n) %}{{ m(" + deep + " + 1) }}{% endmacro %}{{ m(0) }}"),
                  "exceeds the limit 'chat_depth'");
  EXPECT_CONTAINS(refusal("{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}"),
                  "the nesting of blocks, expressions and macro calls being evaluated (257)");
  // Values nested by a loop, and a deep context.
  EXPECT_CONTAINS(refusal("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
                  "chat_template:1:64: the nesting of the lists, dicts and namespaces of a value (257) exceeds the "
                  "limit 'chat_depth' (256)");
  auto t = parse_chat_template("{{ x }}");
  ASSERT_TRUE(t.ok());
  auto out = t->render(nlohmann::ordered_json{
      {"x", nlohmann::ordered_json::parse(std::string(100000, '[') + std::string(100000, ']'))}});
  ASSERT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error().message, "the nesting of the context's arrays and objects (257) exceeds the limit 'chat_depth'");
  // A recursive macro that ends renders.
  EXPECT_EQ(render_text("{% macro c(n) %}{% if n > 0 %}{{ n }}{{ c(n - 1) }}{% endif %}{% endmacro %}{{ c(5) }}").value(),
            "54321");
}

// ---- what a render holds ----

TEST(ChatTemplateLimits, CyclesAreUnlinkedWhenTheRenderEnds) {
  // A macro holds its scope, which holds the macro; a namespace may hold
  // itself. Both renders work, and the render breaks the cycles when it ends
  // (before, each leaked everything the render held: tools/sanitize.sh's
  // leak check, or valgrind, shows it).
  EXPECT_EQ(render_text("{% set s = 'x' * 1000000 %}{% macro m() %}{{ s|length }}{% endmacro %}{{ m() }}").value(),
            "1000000");
  EXPECT_EQ(render_text("{% set ns = namespace(s='x' * 1000) %}{% set ns.me = ns %}{{ ns.me.me.s|length }}").value(),
            "1000");
  EXPECT_EQ(render_text("{% set ns = namespace() %}{% for x in [ns] %}{% set ns.l = loop %}{% endfor %}"
                        "{% macro m(a) %}{{ a }}{% endmacro %}{% set ns.m = m %}{{ ns.m(2) }}{{ ns.l.length }}")
                .value(),
            "21");
}

// ---- raising a limit ----

TEST(ChatTemplateLimits, RaisingALimitLetsALargerCasePass) {
  const std::string tmpl = "{{ ('x' * 70000000)|length }}";  // past the default 64 MiB
  EXPECT_CONTAINS(refusal(tmpl), "exceeds the limit 'chat_text_bytes' (67108864)");
  {
    LimitFor more("chat_text_bytes", 128 << 20);
    EXPECT_EQ(render_text(tmpl).value(), "70000000");
  }
  EXPECT_CONTAINS(refusal(tmpl), "'chat_text_bytes' (67108864)");  // restored

  std::string parens = "{{ " + std::string(300, '(') + "7" + std::string(300, ')') + " }}";
  EXPECT_CONTAINS(refusal(parens), "exceeds the limit 'chat_depth' (256)");
  {
    LimitFor more("chat_depth", 1000);
    EXPECT_EQ(render_text(parens).value(), "7");
  }

  const std::string loops = "{% for i in range(300) %}{% for j in range(300) %}{% endfor %}{% endfor %}ok";
  {
    LimitFor fewer("chat_iterations", 50000);
    EXPECT_CONTAINS(refusal(loops), "exceeds the limit 'chat_iterations' (50000)");
  }
  {
    LimitFor enough("chat_iterations", 100000);
    EXPECT_EQ(render_text(loops).value(), "ok");
  }
}

}  // namespace
}  // namespace arch::testing
