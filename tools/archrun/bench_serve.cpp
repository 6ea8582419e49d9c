// archrun bench-serve: concurrent streamed completions against the server
// (MODEL served in-process, or --url for one already running, such as
// llama-server on the same model): per round of C streams, the aggregate
// decode rate and the time to first token. Prompts are seeded random ids,
// distinct per request (no shared prefix to reuse); end tokens are ignored,
// so every request decodes its -n tokens.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/serve/server.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

struct Stream {
  double first = -1, end = -1;  // seconds from the round's start
  int64_t tokens = 0;
  std::vector<double> times;    // each token's arrival
  std::string error;
};

// One streamed completion; tokens counted from each chunk's `tokens` (this
// server) or one per chunk with text (llama-server), the final usage
// preferred where it is given.
Stream run_stream(const std::string& host, int port, const std::vector<int32_t>& prompt, int n, double temperature,
                  clock_type::time_point t0) {
  Stream s;
  httplib::Client c(host, port);
  c.set_read_timeout(600);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = json{{"prompt", prompt}, {"max_tokens", n}, {"temperature", temperature}, {"stream", true}, {"ignore_eos", true}}.dump();
  std::string buf;
  int64_t usage = -1;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buf.append(data, len);
    for (size_t at; (at = buf.find("\n\n")) != std::string::npos; buf.erase(0, at + 2)) {
      std::string event = buf.substr(0, at);
      if (event.rfind("data: ", 0) != 0 || event == "data: [DONE]") continue;
      json j = json::parse(event.substr(6), nullptr, false);
      if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) continue;
      const json& ch = j["choices"][0];
      int64_t got = ch.contains("tokens") && ch["tokens"].is_array() ? int64_t(ch["tokens"].size())
                                                                     : int64_t(!ch.value("text", "").empty());
      const double now = std::chrono::duration<double>(clock_type::now() - t0).count();
      if (got > 0 && s.first < 0) s.first = now;
      s.tokens += got;
      s.times.insert(s.times.end(), size_t(got), now);
      if (j.contains("usage") && j["usage"].is_object()) usage = j["usage"].value("completion_tokens", int64_t(-1));
    }
    return true;
  };
  auto r = c.send(req);
  s.end = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (!r) s.error = "no reply (" + httplib::to_string(r.error()) + ")";
  else if (r->status != 200) s.error = "HTTP " + std::to_string(r->status) + ": " + r->body;
  if (usage >= 0) s.tokens = usage;
  return s;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

// Each round's decode rate over its own sweep's single stream, where the
// sweep has one: the two rates taken seconds apart, not a sweep apart.
void ratios_within_sweeps(json& rounds) {
  for (json& r : rounds)
    for (const json& one : rounds)
      if (one["sweep"] == r["sweep"] && one["streams"] == 1)
        r["vs_one_stream"] = double(r["decode_tok_s"]) / std::max(1e-9, double(one["decode_tok_s"]));
}

// Per concurrency, over the sweeps: the decode rate's least, median and
// most, and the range of its ratios to one stream.
json summary_over_sweeps(const json& rounds, const std::vector<int>& concurrency) {
  json out = json::array();
  std::vector<int> seen;
  for (int c : concurrency) {
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;  // given twice: summed up once
    seen.push_back(c);
    std::vector<double> rates, ratios;
    for (const json& r : rounds)
      if (r["streams"] == c) {
        rates.push_back(r["decode_tok_s"]);
        if (r.contains("vs_one_stream")) ratios.push_back(r["vs_one_stream"]);
      }
    if (rates.empty()) continue;
    json s = {{"streams", c}, {"rounds", rates.size()}, {"decode_tok_s_min", quantile(rates, 0)},
              {"decode_tok_s_median", quantile(rates, 0.5)}, {"decode_tok_s_max", quantile(rates, 1)}};
    if (!ratios.empty()) s["vs_one_stream_min"] = quantile(ratios, 0), s["vs_one_stream_max"] = quantile(ratios, 1);
    out.push_back(s);
  }
  return out;
}

}  // namespace

int run_bench_serve(const BenchServeArgs& a) {
  const int most = *std::max_element(a.concurrency.begin(), a.concurrency.end());
  std::string host = "127.0.0.1";
  int port = 0;
  std::unique_ptr<serve::Server> server;
  std::thread serving;
  std::shared_ptr<Model> model;
  int64_t vocab = 32000;
  BatchProfile profile;  // --profile: the worker's, one round at a time (reset between rounds)
  if (!a.url.empty()) {
    if (a.profile) return fail(error("--profile times the batch worker of a model served in-process, not a server at --url"));
    // http://HOST:PORT
    std::string u = a.url.rfind("http://", 0) == 0 ? a.url.substr(7) : a.url;
    if (auto slash = u.find('/'); slash != std::string::npos) u.resize(slash);
    auto colon = u.rfind(':');
    if (colon == std::string::npos) return fail(error("--url " + a.url + ": give it as http://HOST:PORT"));
    host = u.substr(0, colon);
    port = std::atoi(u.substr(colon + 1).c_str());
    if (a.common.model != "toy") {
      auto m = open_model(a.common);
      if (!m.ok()) return fail(m.error());
      vocab = (*m)->config_int("vocab_size", vocab);
    }
  } else {
    if (a.common.model == "toy") return fail(error("give the model: archrun bench-serve MODEL (or --url for a server running)"));
    auto m = open_model(a.common);
    if (!m.ok()) return fail(m.error());
    model = *m;
    vocab = model->config_int("vocab_size", vocab);
    serve::ServeOptions o;
    o.port = 0;
    o.parallel = most;
    o.queue = most;
    o.context = a.context > 0 ? a.context : a.prompt_tokens + a.new_tokens + 1;
    o.adaptive_threads = governed_threads(a.common);
    if (a.profile) o.profile = &profile;
    auto s = serve::Server::make(model, a.common.model, o);
    if (!s.ok()) return fail(s.error());
    server = std::move(s).value();
    auto p = server->bind();
    if (!p.ok()) return fail(p.error());
    port = *p;
    serving = std::thread([&] { server->run(); });
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> id(3, int32_t(std::min<int64_t>(vocab, 30000)) - 1);
  auto prompt = [&] {
    std::vector<int32_t> p(size_t(a.prompt_tokens));
    for (auto& t : p) t = id(rng);
    return p;
  };
  std::fprintf(stderr, "bench-serve: %s, prompts of %d tokens, %d new each (end tokens ignored), %s\n",
               a.url.empty() ? (a.common.model + " in-process").c_str() : a.url.c_str(), a.prompt_tokens, a.new_tokens,
               a.temperature > 0 ? ("temperature " + std::to_string(a.temperature)).c_str() : "greedy");
  run_stream(host, port, prompt(), 4, a.temperature, clock_type::now());  // warm-up: weights paged in, buffers made
  profile = BatchProfile{};  // (the warm-up has ended)
  json rounds = json::array();
  std::printf("%8s %12s %14s %12s %12s %12s %8s\n", "streams", "tokens", "decode tok/s", "per stream", "ttft med ms", "ttft p99 ms", "errors");
  for (int sweep = 0; sweep < a.repeat; ++sweep) {
    if (a.repeat > 1) std::printf("sweep %d of %d\n", sweep + 1, a.repeat);
    for (int c : a.concurrency) {
      std::vector<std::vector<int32_t>> prompts;
      for (int k = 0; k < c; ++k) prompts.push_back(prompt());
      std::vector<Stream> streams(static_cast<size_t>(c));
      std::vector<std::thread> threads;
      const auto t0 = clock_type::now();
      for (int k = 0; k < c; ++k)
        threads.emplace_back([&, k] { streams[size_t(k)] = run_stream(host, port, prompts[size_t(k)], a.new_tokens, a.temperature, t0); });
      for (auto& t : threads) t.join();
      // Every stream has ended, so the worker's last write to the profile is
      // done (BatcherOptions::profile); the next round starts from nothing.
      json round_profile;
      if (a.profile) {
        round_profile = {{"decode_steps", profile.decode_steps}, {"step_rows", profile.step_rows},
                         {"steps", profile_json(profile.steps)}, {"prompts", profile_json(profile.prompts)}};
        profile = BatchProfile{};
      }
      int64_t tokens = 0, errors = 0;
      double all_decoding = 0, one_ends = 1e30, last = 0;
      std::vector<double> ttft;
      for (const auto& s : streams) {
        if (!s.error.empty()) {
          if (errors++ == 0) std::fprintf(stderr, "bench-serve: %s\n", s.error.c_str());
          continue;
        }
        tokens += s.tokens;
        if (s.first >= 0) ttft.push_back(s.first), all_decoding = std::max(all_decoding, s.first);
        one_ends = std::min(one_ends, s.end);
        last = std::max(last, s.end);
      }
      // Decoding: the tokens that arrive while every stream is decoding (from
      // the last first token to the first end), over that window; where the
      // streams never all decode at once (a server taking them one by one),
      // every token over the whole round.
      int64_t in_window = 0;
      for (const auto& s : streams)
        for (size_t k = 1; k < s.times.size(); ++k) in_window += s.times[k] > all_decoding && s.times[k] <= one_ends;
      const double window = one_ends - all_decoding;
      const double decode = window > 0 && in_window > 0 ? double(in_window) / window : double(tokens) / std::max(last, 1e-9);
      std::printf("%8d %12lld %14.1f %12.1f %12.1f %12.1f %8lld\n", c, (long long)tokens, decode, decode / c, 1e3 * quantile(ttft, 0.5),
                  1e3 * quantile(ttft, 0.99), (long long)errors);
      std::fflush(stdout);
      rounds.push_back({{"sweep", sweep}, {"streams", c}, {"tokens", tokens}, {"decode_tok_s", decode}, {"ttft_median_ms", 1e3 * quantile(ttft, 0.5)},
                        {"ttft_p99_ms", 1e3 * quantile(ttft, 0.99)}, {"errors", errors}, {"seconds", last}});
      if (a.profile) rounds.back()["profile"] = round_profile;
    }
  }
  for (const json& r : rounds) {  // --profile: where each round's worker time went
    if (!r.contains("profile")) continue;
    const json& p = r["profile"];
    const int64_t steps = p["decode_steps"].get<int64_t>();
    double step_ms = 0;
    for (const json& o : p["steps"]) step_ms += o["ms"].get<double>();
    if (a.repeat > 1) std::printf("sweep %d, ", int(r["sweep"]) + 1);
    std::printf("%d streams: %lld decode steps of %.1f rows on average, %.2f ms each\n", int(r["streams"]),
                (long long)steps, steps > 0 ? double(p["step_rows"].get<int64_t>()) / double(steps) : 0.0,
                steps > 0 ? step_ms / double(steps) : 0.0);
    print_profile("decode steps", p["steps"]);
    print_profile("prompts", p["prompts"]);
  }
  ratios_within_sweeps(rounds);
  const json summary = summary_over_sweeps(rounds, a.concurrency);
  if (a.repeat == 1) {
    for (const json& r : rounds)
      if (r.contains("vs_one_stream"))
        std::printf("%d streams: %.2fx one stream's decode rate\n", int(r["streams"]), double(r["vs_one_stream"]));
  } else {
    for (const json& s : summary) {
      std::printf("%d streams over %d sweeps: %.1f-%.1f decode tok/s (median %.1f)", int(s["streams"]), a.repeat,
                  double(s["decode_tok_s_min"]), double(s["decode_tok_s_max"]), double(s["decode_tok_s_median"]));
      if (s.contains("vs_one_stream_min"))
        std::printf(", %.2f-%.2fx one stream's rate within a sweep", double(s["vs_one_stream_min"]),
                    double(s["vs_one_stream_max"]));
      std::printf("\n");
    }
  }
  if (a.json) std::printf("%s\n", json{{"url", a.url}, {"model", a.common.model}, {"prompt_tokens", a.prompt_tokens}, {"new_tokens", a.new_tokens}, {"temperature", a.temperature}, {"repeat", a.repeat}, {"rounds", rounds}, {"summary", summary}}.dump().c_str());
  if (server) {
    server->stop();
    serving.join();
  }
  return 0;
}

}  // namespace arch::cli
