#include "engine/serve/server.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <httplib.h>
#include <omp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "engine/runtime/generate.h"
#include "engine/runtime/graph_outputs.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/speak.h"
#include "engine/runtime/text_encoder.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/gated_http_server.h"
#include "engine/serve/http_reply.h"

namespace arch::serve {

namespace {

// A chat template from a Jinja file, rendered with the checkpoint's special
// tokens where it has them.
Result<ChatTemplateInfo> template_from_file(const std::string& file, const std::string& model_path) {
  ChatTemplateInfo info;
  if (auto from_model = load_model_chat_template(model_path); from_model.ok()) info = *from_model;
  std::ifstream in(file, std::ios::binary);
  if (!in) return error("--chat-template " + file + ": cannot be read");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto parsed = parse_chat_template(text);
  if (!parsed.ok()) return error(file + ": " + parsed.error().message);
  info.path = file;
  info.source = text;
  info.chat_template = std::move(parsed).value();
  return info;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::make(std::shared_ptr<const Model> m, const std::string& model_path,
                                             ServeOptions opt) {
  std::unique_ptr<Server> s(new Server());
  s->model_ = m;
  s->path_ = model_path;
  if (opt.parallel < 1 || opt.parallel > 1024) return error("--parallel must be from 1 to 1024, got " + std::to_string(opt.parallel));
  if (opt.queue < 0) return error("the queue must be >= 0");
  if (opt.queue == 0) opt.queue = 4 * opt.parallel;
  if (opt.context < 0) return error("--ctx must be >= 0");
  if (opt.context == 0) {
    const int64_t trained = m->config_int("max_position_embeddings", 0);
    opt.context = trained > 0 ? std::min<int64_t>(trained, 4096) : 2048;
  }
  if (auto t = load_model_tokenizer(model_path); t.ok()) s->tok_ = *t;
  if (!opt.chat_template.empty()) {
    ARCH_TRY(auto info, template_from_file(opt.chat_template, model_path));
    s->chat_ = std::move(info);
  } else if (auto info = load_model_chat_template(model_path); info.ok()) {
    s->chat_ = std::move(info).value();
  } else {
    s->chat_missing_ = info.error().message;
  }
  s->vocab_ = m->config_int("vocab_size", 0);
  s->embeds_ = has_output(*m, "mean_pooled");  // a text encoder (its token states in last_hidden_state)
  s->reranks_ = s->tok_ && has_classifier(*m);
  if (std::error_code ec; s->embeds_ && std::filesystem::is_directory(model_path, ec)) {
    auto card = read_pooling_card(side_files_in(model_path));
    if (!card.ok()) return error(model_path + "/" + card.error().message);
    s->pooling_ = *card;
  }
  s->speaks_ = speech_graph(*m) != nullptr;
  // Speech in: an encoder-decoder whose encoder takes log-mel features.
  if (const ModelGraph* tg = m->token_graph(); tg && m->is_encoder_decoder())
    for (const auto& g : m->graphs) s->transcribes_ = s->transcribes_ || g->graph.find_input("input_features") >= 0;
  if (m->token_graph() && !m->is_encoder_decoder()) {
    ARCH_TRY(s->batcher_, Batcher::make(*m, {.slots = opt.parallel,
                                                .context = opt.context,
                                                .queue = opt.queue,
                                                .adaptive_threads = opt.adaptive_threads,
                                                .profile = opt.profile}));
    s->stop_ids_ = eos_ids(*m, s->tok_.get());
  }
  if (!s->batcher_ && !s->embeds_ && !s->speaks_ && !s->transcribes_)
    return error(model_path + ": family " + m->family + " serves none of completions (a decoder), embeddings (an encoder with mean_pooled), speech (a voice) or transcriptions (a speech encoder-decoder)");
  s->start(model_path, opt);
  return s;
}

Result<std::unique_ptr<Server>> Server::make(std::shared_ptr<Pipeline> p, const std::string& path, ServeOptions opt) {
  if (p->kind != "StableDiffusionPipeline" && p->kind != "StableDiffusionXLPipeline")
    return error(path + ": /v1/images/generations serves Stable Diffusion 1.x, 2.x and XL pipelines; " + p->kind +
                 " runs through archrun imagine");
  if (p->conditioning_channels)
    return error(path + ": an inpainting UNet makes images from an image and a mask, which /v1/images/generations does "
                        "not take: it runs through archrun imagine --init-image --mask");
  std::unique_ptr<Server> s(new Server());
  s->pipeline_ = std::move(p);
  s->path_ = path;
  if (auto t = load_model_tokenizer(path + "/tokenizer"); t.ok()) s->tok_ = *t;
  if (auto t = load_model_tokenizer(path + "/tokenizer_2"); s->pipeline_->text_encoder_2 && t.ok()) s->tok_2_ = *t;
  s->start(path, opt);
  return s;
}

void Server::start(const std::string& path, ServeOptions opt) {
  name_ = !opt.name.empty() ? opt.name : std::filesystem::path(path).filename().string();
  if (name_.empty()) name_ = std::filesystem::path(path).parent_path().filename().string();
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  opt_ = opt;
  threads_ = omp_get_max_threads();
  // Each request being served holds a thread while it streams: room for
  // every running and waiting request, and a few more for the rest.
  // Connections still sending their request hold none (ConnectionGate).
  http_ = std::make_unique<GatedHttpServer>(GateOptions{.max_waiting = opt.max_waiting,
                                                        .first_request_seconds = opt.request_seconds,
                                                        .workers = opt.parallel + opt.queue + 8});
  routes();
}

std::unique_lock<std::mutex> Server::hold_work() {
  std::unique_lock<std::mutex> lock(work_mu_);
  omp_set_num_threads(threads_);
  return lock;
}

Server::~Server() {
  if (http_) {
    http_->stop();
    http_->close_waiting();
  }
  batcher_.reset();  // ends what still runs: every stream sees its end
  http_.reset();     // then its workers are joined
}

int64_t Server::cache_bytes() const { return batcher_ ? batcher_->cache_bytes() : 0; }

std::string Server::serves() const {
  std::string s;
  if (batcher_) s += chat_ ? "completions, chat completions" : "completions (no chat template: " + chat_missing_ + ")";
  if (embeds_) s += std::string(s.empty() ? "" : ", ") + "embeddings";
  if (reranks_) s += std::string(s.empty() ? "" : ", ") + "rerank";
  if (speaks_) s += std::string(s.empty() ? "" : ", ") + "speech";
  if (transcribes_) s += std::string(s.empty() ? "" : ", ") + "transcriptions";
  if (pipeline_) s += std::string(s.empty() ? "" : ", ") + "images";
  return s;
}

ApiError Server::unknown_model(const std::string& asked) const {
  return {404, "The model '" + asked + "' does not exist (this server serves '" + name_ + "')", "invalid_request_error",
          "model", "model_not_found"};
}

std::variant<nlohmann::json, ApiError> Server::json_request(const httplib::Request& req) const {
  auto parsed = parse_json_object(req.body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  auto model = string_field(std::get<nlohmann::json>(parsed), "model", "");
  if (auto* e = std::get_if<ApiError>(&model)) return *e;
  if (const std::string& m = std::get<std::string>(model); !m.empty() && m != name_) return unknown_model(m);
  return parsed;
}

Result<int> Server::bind() {
  // Every waiting connection is a descriptor: the soft limit (often 1024)
  // raised to the hard one, so that they are refused by the gate's bound
  // (503) before accept() fails for want of descriptors.
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  // httplib listens with a backlog of 5: 64 clients connecting at once
  // would overflow it, and some of them see their connection dropped. The
  // socket is caught as it is made and listened on again with room for
  // them (Linux updates the backlog of a listening socket).
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = sock;
  });
  const int port = opt_.port == 0 ? http_->bind_to_any_port(opt_.host) : (http_->bind_to_port(opt_.host, opt_.port) ? opt_.port : -1);
  if (port < 0) return error("cannot listen on " + opt_.host + ":" + std::to_string(opt_.port) + " (in use, or not this machine's address)");
  if (listen_fd_ >= 0) ::listen(listen_fd_, 1024);
  return port;
}

void Server::run() { http_->listen_after_bind(); }
void Server::stop() { http_->stop(); }

void Server::routes() {
  httplib::Server& h = *http_;
  h.set_payload_max_length(size_t(64) << 20);
  h.set_read_timeout(10);  // a body that stops arriving for this long
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opt_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + opt_.api_key) return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, {401, "Incorrect API key provided: give it as 'Authorization: Bearer KEY'", "invalid_request_error", "",
                      "invalid_api_key"});
    return httplib::Server::HandlerResponse::Handled;
  });
  // A status with no body (no route, a body too large): the API's JSON.
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // httplib caps a form-encoded body at 8 KiB (curl -d sends JSON as one).
    const bool form = req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
    std::string what = res.status == 404             ? "no such endpoint: " + req.method + " " + req.path
                       : res.status == 413 && form ? "a body sent as application/x-www-form-urlencoded is limited to 8 KiB: "
                                                     "send it with 'Content-Type: application/json'"
                       : res.status == 413         ? "the request body is too large (at most 64 MiB)"
                                                   : "the request could not be served (HTTP " + std::to_string(res.status) + ")";
    reply_error(res, {res.status, what, res.status < 500 ? "invalid_request_error" : "server_error", "", ""});
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    reply_error(res, {500, what, "server_error", "", ""});
  });
  h.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const GateCounts g = http_->counts();
    nlohmann::json j = {{"status", "ok"}, {"model", name_},
                        {"connections", {{"waiting", g.waiting}, {"most_waiting", opt_.max_waiting}, {"refused", g.refused},
                                         {"timed_out", g.timed_out}, {"headers_too_large", g.too_large}}}};
    if (batcher_) {
      auto l = batcher_->load();
      j["slots"] = {{"total", opt_.parallel}, {"running", l.running}, {"waiting", l.waiting}, {"queue", opt_.queue},
                    {"context", opt_.context}, {"steps", l.steps}, {"step_rows", l.step_rows}};
    }
    reply_json(res, j);
  });
  h.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { reply_json(res, model_list(name_, created_)); });
  h.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != name_) return reply_error(res, unknown_model(req.matches[1]));
    reply_json(res, model_list(name_, created_)["data"][0]);
  });
  h.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { complete(req, res, false); });
  h.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { complete(req, res, true); });
  h.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { embed(req, res); });
  h.Post("/v1/rerank", [this](const httplib::Request& req, httplib::Response& res) { rerank(req, res); });
  h.Post("/v1/audio/speech", [this](const httplib::Request& req, httplib::Response& res) { speech(req, res); });
  h.Post("/v1/audio/transcriptions", [this](const httplib::Request& req, httplib::Response& res) { transcription(req, res); });
  h.Post("/v1/images/generations", [this](const httplib::Request& req, httplib::Response& res) { image(req, res); });
}

}  // namespace arch::serve
