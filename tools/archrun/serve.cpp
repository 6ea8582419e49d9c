// archrun serve: the model behind the OpenAI HTTP API until interrupted.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "engine/runtime/pipeline.h"
#include "engine/serve/server.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

serve::Server* running = nullptr;

void on_signal(int) {
  if (running) running->stop();
}

}  // namespace

int run_serve(const ServeArgs& a) {
  if (a.common.model == "toy") return fail(error("give the model to serve: archrun serve MODEL_DIR"));
  serve::ServeOptions o = a.options;
  if (o.api_key.empty())
    if (const char* k = std::getenv("ARCHETYPE_API_KEY")) o.api_key = k;
  // A diffusers pipeline folder serves images; any other checkpoint what its family does.
  Result<std::unique_ptr<serve::Server>> s = error("");
  std::string family;
  if (is_pipeline(a.common.model)) {
    auto p = open_pipeline(a.common);
    if (!p.ok()) return fail(p.error());
    family = p->index.value("_class_name", "a pipeline");
    s = serve::Server::make(std::make_shared<Pipeline>(std::move(p).value()), a.common.model, o);
  } else {
    auto m = open_model(a.common);
    if (!m.ok()) return fail(m.error());
    family = (*m)->family;
    o.adaptive_threads = governed_threads(a.common);
    s = serve::Server::make(*m, a.common.model, o);
  }
  if (!s.ok()) return fail(s.error());
  auto port = (*s)->bind();
  if (!port.ok()) return fail(port.error());
  running = s->get();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not the end of the server
  const auto& opt = (*s)->options();
  const std::string batching =
      opt.context > 0 ? "; " + std::to_string(opt.parallel) + " sequences together, " + std::to_string(opt.context) +
                            " positions each (caches and states " + std::to_string(((*s)->cache_bytes() + (1 << 20) - 1) >> 20) +
                            " MiB, resident from the first request), " + std::to_string(opt.queue) + " may wait"
                      : "";
  std::fprintf(stderr, "archrun serve: model '%s' (%s) on http://%s:%d/v1: %s%s%s\n", (*s)->model_name().c_str(), family.c_str(),
               o.host.c_str(), *port, (*s)->serves().c_str(), batching.c_str(), o.api_key.empty() ? "" : "; API key required");
  std::printf("listening on %s:%d\n", o.host.c_str(), *port);
  std::fflush(stdout);
  (*s)->run();
  running = nullptr;
  std::fprintf(stderr, "archrun serve: stopped\n");
  return 0;
}

}  // namespace arch::cli
