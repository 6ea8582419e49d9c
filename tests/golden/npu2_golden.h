// What the NPU2 golden tests share: a checkpoint's graphs without kernels,
// the host reference under a lowering's numerics, and the judgement every
// family's program is held to (its emulated greedy tokens equal the host
// reference's, the prompt in chunks of 4 and in one call, --check passing).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/npu2/emulator.h"
#include "engine/runtime/generate.h"
#include "kernels/kernels.h"
#include "tests/golden/golden_case.h"
#include "tools/toolkit/npu2_lowering.h"

namespace arch::testing {

inline std::shared_ptr<Model> graph_only(const std::string& dir) {
  LoadOptions lo;
  lo.backend = "reference";
  lo.programs = false;
  auto m = load_model(dir, lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : nullptr;
}

// The host reference under the program's numerics.
inline std::shared_ptr<Model> host_reference(const std::string& dir, int64_t context, int64_t chunk) {
  LoadOptions lo;
  lo.backend = "reference";
  lo.rewrite = npu2_numerics_rewrite(dir, Npu2Options{context, chunk, ""});
  auto m = load_model(dir, lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : nullptr;
}

inline std::vector<int32_t> prompt_of(const std::string& dir, int n) {
  auto ids = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  if (n > 0 && n < int(ids.size())) ids.resize(size_t(n));
  return ids;
}

// The host reference's greedy tokens under the numerics of a program of
// this context and chunk.
inline std::vector<int32_t> host_greedy(const std::string& dir, const std::vector<int32_t>& prompt, int n, int64_t context,
                                        int64_t chunk) {
  auto host = host_reference(dir, context, chunk);
  if (!host) return {};
  GenerateOptions g;
  g.max_new_tokens = n;
  g.sampling.greedy = true;
  auto r = generate(*host, prompt, g);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

// The program lowered from dir's step graph, read back from its text, run on
// the emulator with --check: its greedy tokens equal the host reference's
// under the same numerics, with the prompt in chunks of 4 rows (several
// calls, the last one bounded) and of 64.
inline void expect_emulated_tokens_equal_host(const std::string& dir, const std::vector<int32_t>& prompt, int n) {
  const int64_t context = int64_t(prompt.size()) + n;
  auto m = graph_only(dir);
  ASSERT_TRUE(m);
  for (int64_t chunk : {int64_t(4), int64_t(64)}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Npu2Options o;
    o.max_context = context;
    o.chunk = chunk;
    auto l = lower_model(*m, o);
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE(l->refusals.empty()) << refusal_message(dir, *l);
    auto program = npu2::parse_program(npu2::program_yaml(l->program), "program");
    ASSERT_TRUE(program.ok()) << program.error().message;
    auto emu = npu2::Emulator::load(*program, m->checkpoint, op_table());
    ASSERT_TRUE(emu.ok()) << emu.error().message;
    npu2::UnitCheck check;
    (*emu)->check_against(m->token_graph()->graph, &check, npu2::check_tolerance(l->program));
    auto emulated = npu2::emulate_greedy(**emu, prompt, n, {});
    ASSERT_TRUE(emulated.ok()) << emulated.error().message;
    EXPECT_GT(check.checked, 0);
    if (int64_t(prompt.size()) > 1) {
      EXPECT_GT(check.skipped_why["bounded per call (a prompt chunk's rows)"], 0);
    }
    EXPECT_EQ(*emulated, host_greedy(dir, prompt, n, context, chunk))
        << dir << ": the emulated program and the host reference under the NPU2 numerics drew different tokens";
  }
}

}  // namespace arch::testing
