#include "importer/text/chat_template/chat_template.h"

#include "importer/text/chat_template/ast.h"
#include "importer/text/chat_template/interpreter.h"
#include "importer/text/chat_template/lexer.h"
#include "importer/text/chat_template/parser.h"

namespace arch {

ChatTemplate::ChatTemplate() : body_(std::make_shared<const jinja::Body>()) {}

Result<ChatTemplate> parse_chat_template(std::string_view source) {
  std::string text = jinja::normalize_template_source(source);
  ARCH_TRY(auto tokens, jinja::lex_template(text));
  ARCH_TRY(jinja::Body body, jinja::parse_tokens(tokens));
  ChatTemplate t;
  t.source_ = std::string(source);
  t.body_ = std::make_shared<const jinja::Body>(std::move(body));
  return t;
}

namespace {

template <class J>
Result<std::string> render_json(const jinja::Body& body, const J& context,
                                 std::optional<std::chrono::system_clock::time_point> now) {
  if (!context.is_object())
    return error(std::string("chat_template: the context must be a JSON object, not ") + context.type_name());
  jinja::RenderOptions options;
  options.now = now;
  ARCH_TRY(jinja::Value ctx, jinja::from_json(context));
  return jinja::render_body(body, ctx, options);
}

}  // namespace

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const {
  return render_json(*body_, context, now_);
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return render_json(*body_, context, now_);
}

}  // namespace arch
