// format_diagnostic: "file:line:col: severity: message", then the source
// line and a caret under the column, each indented by four spaces.
#include "dsl/diagnostic.h"

#include <gtest/gtest.h>

namespace arch::dsl {
namespace {

TEST(Diagnostic, LineAndCaret) {
  std::string src = "family T\ngraph g(x: f32[seq]) {\n  y = q @ W\n}\n";
  EXPECT_EQ(format_diagnostic({"families/t.arch", &src}, {3, 7}, "undefined name 'q'"),
            "families/t.arch:3:7: error: undefined name 'q'\n"
            "      y = q @ W\n"
            "          ^");
}

TEST(Diagnostic, TabsAreKeptSoTheCaretLinesUp) {
  std::string src = "family T\n\ty =\tq\n";
  // Column 6 is the 'q' after the second tab (a tab is one column); the
  // caret line copies the tabs, so the caret lines up in any tab width.
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {2, 6}, "m"),
            "t.arch:2:6: error: m\n"
            "    \ty =\tq\n"
            "    \t   \t^");
}

TEST(Diagnostic, ColumnPastTheEndOfTheLine) {
  std::string src = "ab\ncd";
  // The caret stops just past the line's last character.
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {1, 10}, "m"),
            "t.arch:1:10: error: m\n"
            "    ab\n"
            "      ^");
  // The last line, without a trailing newline.
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {2, 3}, "m"),
            "t.arch:2:3: error: m\n"
            "    cd\n"
            "      ^");
}

TEST(Diagnostic, EndOfFileAfterTheLastNewline) {
  std::string src = "family T\n";
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {2, 1}, "expected '}'"),
            "t.arch:2:1: error: expected '}'\n"
            "    \n"
            "    ^");
}

TEST(Diagnostic, LineBeyondTheFileHasNoSourceLine) {
  std::string src = "a\nb";
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {5, 1}, "m"), "t.arch:5:1: error: m");
}

TEST(Diagnostic, WithoutSourceOrLine) {
  EXPECT_EQ(format_diagnostic({"t.arch", nullptr}, {3, 4}, "m"), "t.arch:3:4: error: m");
  std::string src = "x\n";
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {0, 0}, "m"), "t.arch:0:0: error: m");
}

TEST(Diagnostic, Severity) {
  std::string src = "x = 1\n";
  EXPECT_EQ(format_diagnostic({"t.arch", &src}, {1, 1}, "unused", "warning"),
            "t.arch:1:1: warning: unused\n"
            "    x = 1\n"
            "    ^");
}

TEST(Diagnostic, DiagMakesAnError) {
  std::string src = "x\n";
  Error e = diag({"t.arch", &src}, {1, 1}, "m");
  EXPECT_EQ(e.message, "t.arch:1:1: error: m\n    x\n    ^");
}

}  // namespace
}  // namespace arch::dsl
