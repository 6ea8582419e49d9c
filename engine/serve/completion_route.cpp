// POST /v1/completions and /v1/chat/completions: the request read and
// checked, its prompt made (the chat template rendered), handed to the
// batcher, and its text sent back whole or as server-sent events.
#include <random>

#include <httplib.h>

#include "engine/core/limits.h"
#include "engine/runtime/image_prompt.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/http_reply.h"
#include "engine/serve/server.h"
#include "engine/serve/text_job.h"
#include "engine/serve/tool_calls.h"
#include "importer/text/token_bytes.h"

namespace arch::serve {

std::variant<std::vector<int32_t>, ApiError> Server::prompt_ids(const CompletionRequest& r) {
  std::vector<int32_t> ids;
  if (r.chat) {
    if (!chat_) return bad_request("this model has no chat template (" + chat_missing_ + "); start the server with --chat-template FILE, or use /v1/completions", "messages");
    if (!tok_) return bad_request("this model has no tokenizer: chat needs one", "messages");
    auto rendered = chat_->chat_template.render(chat_->context(r.messages, true, r.tools.empty() ? nullptr : r.tools_json));
    if (!rendered.ok()) return bad_request("the chat template cannot render these messages: " + rendered.error().message, "messages");
    std::string text = std::move(*rendered);
    if (!r.images.empty()) {  // each image marker the template wrote: the image's tokens in its place
      auto ip = image_prompt(*model_);
      if (!ip.ok()) return bad_request(ip.error().message, r.image_fields.front());
      auto expanded = expand_image_text(text, *tok_, *ip, int(r.images.size()));
      if (!expanded.ok())
        return bad_request("the chat template's rendering: " + expanded.error().message +
                               " (a template that writes no image marker for an image part cannot place it)",
                           "messages");
      text = std::move(*expanded);
    }
    ids = tok_->encode(text, false);  // the template writes the special tokens itself
  } else if (r.prompt_is_ids) {
    ids = r.prompt_ids;
  } else {
    if (!tok_) return bad_request("this model has no tokenizer: send the prompt as token ids", "prompt");
    ids = tok_->encode(r.prompt, true);
  }
  if (ids.empty()) return bad_request("the prompt is empty", r.chat ? "messages" : "prompt");
  for (int32_t id : ids)
    if (vocab_ > 0 && id >= vocab_)
      return bad_request("token id " + std::to_string(id) + " is not in the vocabulary (" + std::to_string(vocab_) + " tokens)", "prompt");
  return ids;
}

std::shared_ptr<const GrammarVocab> Server::grammar_vocab() {
  std::call_once(grammar_vocab_once_, [&] { grammar_vocab_ = std::make_shared<const GrammarVocab>(token_bytes(*tok_)); });
  return grammar_vocab_;
}

void Server::complete(const httplib::Request& req, httplib::Response& res, bool chat) {
  auto parsed = parse_completion_request(req.body, chat);
  if (auto* e = std::get_if<ApiError>(&parsed)) return reply_error(res, *e);
  const CompletionRequest& r = std::get<CompletionRequest>(parsed);
  if (!r.model.empty() && r.model != name_)
    return reply_error(res, unknown_model(r.model));
  if (!batcher_) return reply_error(res, bad_request("model '" + name_ + "' does not generate text: it serves " + serves(), "model"));
  // A prompt no context could hold is refused before the tokenizer spends
  // time and memory on it.
  const int64_t set = limit("prompt_bytes"), most_bytes = set > 0 ? set : 64 * opt_.context;
  if (const int64_t bytes = prompt_bytes(r); bytes > most_bytes)
    return reply_error(res, {413,
                             "the prompt (" + std::to_string(bytes) + " bytes) exceeds the limit 'prompt_bytes' (" +
                                 std::to_string(most_bytes) + (set > 0 ? "" : ": 64 per position of the " + std::to_string(opt_.context) + "-position context") +
                                 "); raise it with archrun serve --limit prompt_bytes=N if this is meant",
                             "invalid_request_error", r.chat ? "messages" : "prompt", "prompt_too_large"});
  NamedTensors images;
  if (!r.images.empty()) {
    auto state = image_state(r);
    if (auto* e = std::get_if<ApiError>(&state)) return reply_error(res, *e);
    images = std::move(std::get<NamedTensors>(state));
  }
  auto made = prompt_ids(r);
  if (auto* e = std::get_if<ApiError>(&made)) return reply_error(res, *e);
  std::vector<int32_t>& prompt = std::get<std::vector<int32_t>>(made);
  const int64_t context = opt_.context, n = int64_t(prompt.size());
  const int64_t room = context - n;
  if (room < 1 || (r.max_tokens && *r.max_tokens > room))
    return reply_error(res, bad_request("This model's maximum context length is " + std::to_string(context) + " tokens. However, you requested " +
                                            std::to_string(n + (r.max_tokens ? *r.max_tokens : 1)) + " tokens (" + std::to_string(n) +
                                            " in the prompt, " + std::to_string(r.max_tokens ? *r.max_tokens : 1) + " for the completion).",
                                        r.max_tokens && room >= 1 ? "max_tokens" : r.chat ? "messages" : "prompt",
                                        "context_length_exceeded"));
  for (const auto& [id, bias] : r.logit_bias)
    if (vocab_ > 0 && id >= vocab_)
      return reply_error(res, bad_request("'logit_bias': token id " + std::to_string(id) + " is not in the vocabulary (" +
                                              std::to_string(vocab_) + " tokens)",
                                          "logit_bias"));
  SamplingOptions sampling;
  sampling.presence_penalty = float(r.presence_penalty);
  sampling.frequency_penalty = float(r.frequency_penalty);
  sampling.logit_bias = r.logit_bias;
  sampling.greedy = r.temperature <= 0.0;
  sampling.temperature = float(r.temperature);
  sampling.top_p = float(r.top_p);
  sampling.seed = r.seed ? *r.seed : std::random_device{}();
  // Tools: how this model writes a call (its chat template's way); a call
  // required (or one function named): the reply held to a call's grammar.
  std::optional<ToolFormat> tools;
  std::string grammar = r.grammar, grammar_field = r.grammar_field;
  if (!r.tools.empty() && r.tool_choice != "none") {
    tools = chat_ ? tool_format(chat_->source) : std::nullopt;
    if (!tools)
      return reply_error(res, bad_request("this model's chat template shows no way to write a tool call (<tool_call>, [TOOL_CALLS] "
                                          "or a JSON call with \"parameters\"); start the server with --chat-template FILE that takes 'tools'",
                                          "tools"));
    if (r.tool_choice == "required" || r.tool_choice == "function") {
      if (!grammar.empty())
        return reply_error(res, bad_request("a required tool call and '" + grammar_field + "' both hold the reply: give one", "tool_choice"));
      auto g = tool_call_gbnf(*tools, r.tools, r.tool_choice_name);
      if (!g.ok()) return reply_error(res, bad_request(g.error().message, "tools"));
      grammar = *g;
      grammar_field = "tools";
    }
  }
  // A grammar: the reply held to it, step by step, beside the other
  // sequences of the batch.
  std::shared_ptr<GrammarConstraint> constraint;
  if (!grammar.empty()) {
    if (!tok_) return reply_error(res, bad_request("this model has no tokenizer: '" + grammar_field + "' needs the tokens' text", grammar_field));
    if (stop_ids_.empty())
      return reply_error(res, bad_request("this model names no end-of-sequence token, so a reply held to '" + grammar_field + "' could not end", grammar_field));
    auto g = parse_gbnf(grammar, "the request's grammar");
    if (!g.ok()) return reply_error(res, bad_request(g.error().message, grammar_field));
    constraint = std::make_shared<GrammarConstraint>(std::make_shared<const Grammar>(std::move(*g)), grammar_vocab(), stop_ids_);
  }
  auto job = std::make_shared<TextJob>(tok_, r.stop);
  const int32_t last_prompt_token = prompt.back();  // the first new token's context, for logprobs
  BatchRequest br = job->request(std::move(prompt), int(r.max_tokens ? *r.max_tokens : room), sampling,
                                 r.ignore_eos ? std::vector<int32_t>{} : stop_ids_, r.top_logprobs);
  br.state = std::move(images);
  if (constraint)
    br.process_logits = [constraint](std::span<float> row, const std::vector<int32_t>& so_far) { constraint->mask(row, so_far); };
  auto submitted = batcher_->submit(std::move(br));
  if (!submitted.ok()) return reply_error(res, bad_request(submitted.error().message));
  if (!*submitted)
    return reply_error(res, {503, "the server is busy: " + std::to_string(opt_.parallel) + " sequences running and " +
                                      std::to_string(opt_.queue) + " waiting; retry shortly",
                             "server_error", "", "server_overloaded"});
  const ReplyHeader header = make_header(chat, name_);
  // A token's text for logprobs: what it adds to the token before it (a
  // token decoded alone may lose its leading space), or its id where there
  // is no tokenizer. The token before is decoded once for a token and all
  // its alternatives.
  auto piece = [tok = tok_, prev_id = int32_t(-1), prev_text = std::string()](int32_t id, int32_t prev) mutable {
    if (!tok) return "token_id:" + std::to_string(id);
    if (prev < 0) return tok->decode(std::span<const int32_t>(&id, 1), false);
    if (prev != prev_id) prev_text = tok->decode(std::span<const int32_t>(&prev, 1), false), prev_id = prev;
    const int32_t pair[2] = {prev, id};
    const std::string both = tok->decode(pair, false);
    return both.compare(0, prev_text.size(), prev_text) == 0 ? both.substr(prev_text.size())
                                                            : tok->decode(std::span<const int32_t>(&id, 1), false);
  };
  const bool logprobs = r.top_logprobs >= 0;
  const LogprobsCursor start{0, last_prompt_token};
  if (!r.stream) {
    TextJob::Taken all = job->wait_all();
    const BatchOutcome& o = job->outcome();
    if (o.finish_reason == "error") return reply_error(res, {500, "generation failed: " + o.error, "server_error", "", ""});
    LogprobsCursor at = start;
    nlohmann::json reply = completion_reply(header, all.text, all.ids, o.finish_reason, {o.prompt_tokens, o.completion_tokens},
                                  logprobs ? logprobs_json(chat, all.ids, all.logprobs, piece, at) : nullptr);
    if (tools) with_tool_calls(reply["choices"][0], parse_tool_calls(all.text, *tools, r.parallel_tool_calls), header.id, false);
    return reply_json(res, reply);
  }
  res.set_header("Cache-Control", "no-cache");
  if (tools) {
    // A reply that may be a call streams whole at its end: its text is
    // the call's until it is parsed.
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, header, format = *tools, parallel = r.parallel_tool_calls](size_t, httplib::DataSink& sink) {
          TextJob::Taken all = job->wait_all();
          const BatchOutcome& o = job->outcome();
          if (o.finish_reason == "error") {
            const std::string e = sse(ApiError{500, "generation failed: " + o.error, "server_error", "", ""}.body());
            sink.write(e.data(), e.size());
            sink.done();
            return true;
          }
          const ParsedReply parsed = parse_tool_calls(all.text, format, parallel);
          nlohmann::json chunk = completion_chunk(header, parsed.calls.empty() ? all.text : parsed.content, all.ids, true);
          with_tool_calls(chunk["choices"][0], parsed, header.id, true);
          nlohmann::json end = final_chunk(header, parsed.calls.empty() ? o.finish_reason : "tool_calls", {o.prompt_tokens, o.completion_tokens});
          for (const std::string& event : {sse(chunk), sse(end), std::string(kSseDone)})
            if (!sink.write(event.data(), event.size())) return job->abandon(), false;
          sink.done();
          return true;
        },
        [job](bool) { job->abandon(); });
    return;
  }
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, header, first = true, logprobs, piece, at = start, has_text = tok_ != nullptr](size_t,
                                                                                       httplib::DataSink& sink) mutable {
        TextJob::Taken t = job->take(std::chrono::milliseconds(250));
        auto send = [&](const std::string& event) {
          if (sink.write(event.data(), event.size())) return true;
          job->abandon();  // the client is gone: the sequence ends at its next token
          return false;
        };
        if (!sink.is_writable()) return job->abandon(), false;
        // One event per token as OpenAI streams, even when several came
        // since the last take; a token that released no text yet (a partial
        // character, a possible stop string) rides with the next one.
        auto chunk = [&](size_t ids_from, size_t ids_to, size_t text_from, size_t text_to) {
          const std::span<const int32_t> ids(t.ids.data() + ids_from, ids_to - ids_from);
          const nlohmann::json lp =
              logprobs ? logprobs_json(header.chat, ids, std::span(t.logprobs).subspan(ids_from, ids_to - ids_from), piece, at)
                       : nullptr;
          const bool ok = send(sse(completion_chunk(header, t.text.substr(text_from, text_to - text_from),
                                                    std::vector<int32_t>(ids.begin(), ids.end()), first, lp)));
          first = false;
          return ok;
        };
        size_t ids_from = 0, text_from = 0;
        for (size_t i = 0; i < t.ids.size(); ++i) {
          const bool last = i + 1 == t.ids.size();
          const size_t text_to = last ? t.text.size() : t.text_ends[i];
          if (text_to == text_from && !last && has_text) continue;
          if (!chunk(ids_from, i + 1, text_from, text_to)) return false;
          ids_from = i + 1, text_from = text_to;
        }
        if (t.ids.empty() && (!t.text.empty() || (first && header.chat)) && !chunk(0, 0, 0, t.text.size())) return false;
        if (!t.done) return true;
        const BatchOutcome& o = job->outcome();
        const std::string end = o.finish_reason == "error"
                                    ? sse(ApiError{500, "generation failed: " + o.error, "server_error", "", ""}.body())
                                    : sse(final_chunk(header, o.finish_reason, {o.prompt_tokens, o.completion_tokens}));
        if (!send(end) || !send(kSseDone)) return false;
        sink.done();
        return true;
      },
      [job](bool) { job->abandon(); });
}

}  // namespace arch::serve
