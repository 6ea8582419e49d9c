// archrun serve: the model behind the OpenAI HTTP API until interrupted.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "serve/server.h"
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
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  serve::ServeOptions o;
  o.host = a.host;
  o.port = a.port;
  o.parallel = a.parallel;
  o.context = a.context;
  o.queue = a.queue;
  o.api_key = a.api_key;
  if (o.api_key.empty())
    if (const char* k = std::getenv("ARCHETYPE_API_KEY")) o.api_key = k;
  o.name = a.name;
  o.chat_template = a.chat_template;
  auto s = serve::Server::make(*m, a.common.model, o);
  if (!s.ok()) return fail(s.error());
  auto port = (*s)->bind();
  if (!port.ok()) return fail(port.error());
  running = s->get();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not the end of the server
  const auto& opt = (*s)->options();
  std::fprintf(stderr, "archrun serve: model '%s' (%s) on http://%s:%d/v1: %s; %d sequences together, %lld positions each, %d may wait%s\n",
               (*s)->model_name().c_str(), (*m)->family.c_str(), o.host.c_str(), *port, (*s)->serves().c_str(), opt.parallel,
               (long long)opt.context, opt.queue, o.api_key.empty() ? "" : "; API key required");
  std::printf("listening on %s:%d\n", o.host.c_str(), *port);
  std::fflush(stdout);
  (*s)->run();
  running = nullptr;
  std::fprintf(stderr, "archrun serve: stopped\n");
  return 0;
}

}  // namespace arch::cli
