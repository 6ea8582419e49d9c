#include "engine/distributed/split_model.h"

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "engine/distributed/follower.h"
#include "engine/distributed/mpi_world.h"
#include "engine/distributed/pipeline_split.h"
#include "engine/distributed/tensor_split.h"
#include "kernels/kernels.h"

namespace arch {

Result<std::shared_ptr<Model>> load_split_model(const std::string& dir, LoadOptions opt, const std::string& split) {
  if (split != "tensor" && split != "pipeline") return error("--split " + split + ": the splits are tensor and pipeline");
  ARCH_TRY(MpiWorld* world, MpiWorld::start());
  opt.kernels.collectives = world;
  const int rank = world->rank(), ranks = world->size();
  auto summary = std::make_shared<std::string>();
  // The largest quantized block among the weights: cuts along a row fall
  // on whole blocks (Q4_0's rows pair values 64 apart).
  auto granule = std::make_shared<int64_t>(1);
  opt.inspect = [granule](const Checkpoint& c) { *granule = block_granule(c); };
  GraphRewrite before = opt.rewrite;
  opt.rewrite = [=](const Graph& g, const std::string& path) -> Result<Graph> {
    Graph in = g;
    if (before) {
      ARCH_TRY(in, before(g, path));
    }
    if (split == "pipeline") {
      PipelineSplitReport report;
      ARCH_TRY(Graph out, split_pipeline(in, op_table(), rank, ranks, &report));
      *summary += (summary->empty() ? "" : "; ") + g.name + ": rank 0 holds layers [" + std::to_string(report.first) +
                  ", " + std::to_string(report.last) + ") of " + std::to_string(report.layers) + ", sends " +
                  std::to_string(report.sent) + " and receives " + std::to_string(report.received) + " values per run";
      return out;
    }
    TensorSplitReport report;
    ARCH_TRY(Graph out, split_tensors(in, op_table(), rank, ranks, &report, *granule));
    *summary += (summary->empty() ? "" : "; ") + g.name + ": " + std::to_string(report.all_reduces) +
                " all-reduces, " + std::to_string(report.all_gathers) + " all-gathers per run, " +
                std::to_string(report.weights_in_part) + " weights in part, " + std::to_string(report.whole.size()) +
                " matmul weights whole";
    for (const auto& w : report.whole) *summary += "\n  whole on every process: " + w;
    return out;
  };
  auto m = load_model(dir, opt);
  const std::vector<int> ok = world->everyone(m.ok() ? 1 : 0);
  const std::vector<int> pids = world->everyone(int(getpid()));
  int failed = -1;
  for (int r = 0; r < ranks && failed < 0; ++r)
    if (!ok[size_t(r)]) failed = r;
  if (rank != 0) {
    // Rank 0 says its own error; another rank's is said by that rank.
    if (!m.ok() && failed == rank) std::fprintf(stderr, "archrun: rank %d (%s): error: %s\n", rank,
                                                world->host().c_str(), m.error().message.c_str());
    if (failed >= 0) std::exit(1);
    if (Status s = follow(**m, *world); !s.ok()) world->abort(s.error().message);
    m = Result<std::shared_ptr<Model>>(error("done"));  // the model goes before MPI finishes
    std::exit(0);
  }
  if (!m.ok()) return m;
  if (failed >= 0)
    return error("rank " + std::to_string(failed) + " could not load its share of " + dir + " (its message is above)");
  (*m)->mirror = std::make_shared<MpiMirror>(*world);
  // A pipeline's prompt in chunks (two per stage, of 128 rows or more),
  // so that its stages overlap.
  if (split == "pipeline") {
    (*m)->prompt_chunk = 128;
    (*m)->prompt_chunks = 2 * ranks;
  }
  if (ranks == 1)
    std::fprintf(stderr, "archrun: --split %s: this job has one process, which holds the whole model (mpirun -np N "
                         "archrun ... splits it over N)\n", split.c_str());
  std::string who;
  for (int r = 0; r < ranks; ++r) who += (r ? ", " : "") + std::to_string(r) + ": pid " + std::to_string(pids[size_t(r)]);
  if (ranks > 1)
    std::fprintf(stderr, "archrun: split %s over %d processes (rank %s): %s\n", split.c_str(), ranks, who.c_str(),
                 summary->c_str());
  return m;
}

}  // namespace arch
