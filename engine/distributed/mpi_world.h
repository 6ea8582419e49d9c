// The processes of one job (`mpirun -np N`, MPI_COMM_WORLD), started once:
// this process's rank, the collectives a split graph's ops call
// (engine/core/collectives.h), and the channel on which rank 0 sends the
// others its session calls. Every MPI error is a value here; where one
// process cannot go on without the others going wrong, it ends the job.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "engine/core/collectives.h"
#include "engine/core/error.h"

namespace arch {

class MpiWorld : public Collectives {
 public:
  // Starts MPI on the first call (finished at exit); the same world after.
  static Result<MpiWorld*> start();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status all_reduce_sum(float* data, int64_t n) override;
  Status all_gather(const void* mine, const std::vector<int64_t>& bytes, void* all) override;
  Status send(int to, const void* data, int64_t bytes) override;
  Status recv(int from, void* data, int64_t bytes) override;

  // Rank 0: a session call's bytes to every other process, in order.
  Status send_call(const std::string& bytes);
  // The others: the next call rank 0 sent.
  Result<std::string> receive_call();
  // Each process's `ok`, all of them, on every process (rank order).
  std::vector<int> everyone(int ok);
  std::vector<double> everyone_mb(double mb);
  // Prints "archrun: rank R (HOST): error: MESSAGE" and ends every process
  // of the job.
  [[noreturn]] void abort(const std::string& message);
  const std::string& host() const { return host_; }

 private:
  MpiWorld() = default;
  int rank_ = 0, size_ = 1;
  std::string host_;
  // Sends not yet taken (a pipeline stage goes on while the next one is
  // busy): each with its own copy of the bytes, freed once done.
  struct Pending {
    MPI_Request request;
    std::vector<char> bytes;
  };
  std::vector<std::unique_ptr<Pending>> pending_;
  Status finish_sends(bool wait);
  MPI_Comm data_ = MPI_COMM_NULL;   // the graph's collectives
  MPI_Comm calls_ = MPI_COMM_NULL;  // rank 0's session calls
};

}  // namespace arch
