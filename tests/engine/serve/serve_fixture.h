// A server on 127.0.0.1 (any free port) over stories260K, a real trained
// Llama with its tokenizer, given a small chat template from a scratch file;
// an httplib client to it.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/runtime/model.h"
#include "engine/serve/server.h"
#include "tests/shared_data.h"
#include "tests/test_files.h"

namespace arch::testing {

inline std::string stories_dir() { return shared_dir() + "/models/stories260K"; }

inline std::string chat_template_file() {
  static TempDir dir;  // removed when the test program ends
  static const std::string path = [] {
    std::string p = dir / "chat.jinja";
    std::ofstream(p) << "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                        "{% if add_generation_prompt %}assistant:{% endif %}";
    return p;
  }();
  return path;
}

inline std::shared_ptr<Model> stories_model() {
  static std::shared_ptr<Model> m = [] {
    auto r = load_model(stories_dir());
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : nullptr;
  }();
  return m;
}

// Server options by the knobs the tests turn (0: the server's default), on
// any free port.
inline serve::ServeOptions options(int parallel = 4, int64_t context = 0, int queue = 0, std::string api_key = "") {
  serve::ServeOptions o;
  o.port = 0;
  o.parallel = parallel;
  o.context = context;
  o.queue = queue;
  o.api_key = std::move(api_key);
  return o;
}

// A server, bound and serving on a thread until the test ends.
class RunningServer {
 public:
  // One made by either factory (its options' port 0).
  explicit RunningServer(Result<std::unique_ptr<serve::Server>> made) {
    EXPECT_TRUE(made.ok()) << made.error().message;
    if (!made.ok()) return;
    server_ = std::move(made).value();
    auto p = server_->bind();
    EXPECT_TRUE(p.ok()) << p.error().message;
    port_ = p.ok() ? *p : 0;
    thread_ = std::thread([this] { server_->run(); });
  }
  // A model's (stories260K with a small chat template by default).
  explicit RunningServer(serve::ServeOptions o, std::shared_ptr<Model> m = stories_model(), const std::string& path = stories_dir())
      : RunningServer(serve::Server::make(m, path, with_template(std::move(o), path))) {}
  ~RunningServer() {
    if (!server_) return;
    server_->stop();
    thread_.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120);
    return c;
  }
  int port() const { return port_; }
  serve::Server& server() { return *server_; }

 private:
  static serve::ServeOptions with_template(serve::ServeOptions o, const std::string& path) {
    if (o.chat_template.empty() && path == stories_dir()) o.chat_template = chat_template_file();
    return o;
  }
  std::unique_ptr<serve::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

inline nlohmann::json body_of(const httplib::Result& r) {
  if (!r) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, false);
}

// The data events of a server-sent event stream, [DONE] as the string "[DONE]".
inline std::vector<nlohmann::json> events_of(const std::string& stream) {
  std::vector<nlohmann::json> out;
  size_t at = 0;
  while ((at = stream.find("data: ", at)) != std::string::npos) {
    size_t end = stream.find("\n\n", at);
    std::string data = stream.substr(at + 6, end - at - 6);
    out.push_back(data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data, nullptr, false));
    at = end;
  }
  return out;
}

}  // namespace arch::testing
