// archrun generate --backend npu2 / --numerics npu2.
#include "tools/archrun/npu2_run.h"

#include <chrono>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "engine/npu2/emulator.h"
#include "engine/runtime/generate.h"
#include "importer/text/text_stream.h"
#include "tools/toolkit/npu2_lowering.h"

namespace arch::cli {

int run_generate_npu2(const GenerateArgs& a, const std::vector<int32_t>& prompt, std::shared_ptr<const Tokenizer> tok) {
  if (a.sampling_given) return fail(error("--backend npu2 draws greedily (the engine's argmax): drop --temperature, --top-k and --top-p"));
  if (!a.numerics.empty()) return fail(error("--backend npu2 computes under the NPU2 numerics itself: drop --numerics"));
  // The model is read on the reference path: its graph is what is lowered,
  // its checkpoint what the program's constants are bound to.
  Common c = a.common;
  c.path = "reference";
  c.programs = false;
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  const int64_t context = int64_t(prompt.size()) + a.n;
  npu2::Program program;
  if (!a.program.empty()) {
    auto p = npu2::read_program(a.program);
    if (!p.ok()) return fail(p.error());
    program = std::move(*p);
  } else {
    Npu2Options o;
    o.max_context = context;
    o.chunk = a.chunk;
    auto l = lower_model(**m, o);
    if (!l.ok()) return fail(l.error());
    if (!l->refusals.empty()) {
      std::fprintf(stderr, "archrun: error: %s", refusal_message(a.common.model, *l).c_str());
      return 1;
    }
    // The emulator runs what the text says: the program goes through it.
    auto p = npu2::parse_program(npu2::program_yaml(l->program), "the lowered program");
    if (!p.ok()) return fail(p.error());
    program = std::move(*p);
  }
  auto emu = npu2::Emulator::load(program, (*m)->checkpoint, op_table());
  if (!emu.ok()) return fail(emu.error());
  npu2::UnitCheck check;
  const ModelGraph* step = (*m)->token_graph();
  if (a.common.check) {
    if (!step) return fail(error(a.common.model + ": no step graph to check the units against"));
    (*emu)->check_against(step->graph, &check, npu2::check_tolerance(program));
  }
  std::optional<TextStream> stream;
  if (tok) stream.emplace(tok, true);
  std::function<void(int32_t)> on_token;
  if (!a.json)
    on_token = [&](int32_t t) {
      if (stream) std::fputs(stream->push(t).c_str(), stdout);
      else std::printf("%d ", t);
      std::fflush(stdout);
    };
  std::vector<int32_t> stop;
  if (!a.ignore_eos) stop = eos_ids(**m, tok.get());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = npu2::emulate_greedy(**emu, prompt, a.n, stop, on_token);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.common.check) {
    for (const auto& line : check.skipped_units) std::fprintf(stderr, "check: %s\n", line.c_str());
    std::string why;
    for (const auto& [reason, n] : check.skipped_why) why += "; " + std::to_string(n) + " " + reason;
    std::fprintf(stderr, "check: %lld unit runs within their ops' reference (worst at %.0f%% of its bound), %lld skipped%s; %d failed\n",
                 (long long)check.checked, 100 * check.worst, (long long)check.skipped, why.c_str(), r.ok() ? 0 : 1);
  }
  if (!r.ok()) return fail(r.error());
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = *r;
    j["backend"] = "npu2 (emulated)";
    j["units"] = program.units.size();
    if (tok) {
      j["prompt_tokens"] = prompt;
      j["text"] = tok->decode(*r, true);
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    if (stream) std::fputs(stream->finish().c_str(), stdout);
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr, "%s on the NPU2 emulator: %zu units, %zu prompt tokens in chunks of %lld, %zu new tokens in %.3f s\n",
                 (*m)->family.c_str(), program.units.size(), prompt.size(), (long long)program.chunk_of("prompt"),
                 r->size(), seconds);
  }
  return 0;
}

}  // namespace arch::cli
