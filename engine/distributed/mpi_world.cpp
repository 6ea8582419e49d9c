#include "engine/distributed/mpi_world.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace arch {

namespace {

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

Status checked(int code, const char* what) {
  if (code == MPI_SUCCESS) return {};
  return error(std::string(what) + ": " + mpi_message(code));
}

void finish_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

Result<MpiWorld*> MpiWorld::start() {
  static MpiWorld* world = nullptr;
  if (world) return world;
  int provided = 0;
  // Serialized: rank 0's sessions may run on several threads (the server),
  // one call at a time (SessionMirror::tell's lock).
  if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided); code != MPI_SUCCESS)
    return error("MPI did not start: " + mpi_message(code));
  std::atexit(finish_mpi);
  if (provided < MPI_THREAD_SERIALIZED) return error("this MPI does not allow calls from more than one thread");
  auto* w = new MpiWorld();
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &w->data_);
  MPI_Comm_dup(MPI_COMM_WORLD, &w->calls_);
  // Errors come back as codes, to be said with their context.
  MPI_Comm_set_errhandler(w->data_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(w->calls_, MPI_ERRORS_RETURN);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  w->host_.assign(name, size_t(len));
  world = w;
  return world;
}

Status MpiWorld::all_reduce_sum(float* data, int64_t n) {
  while (n > 0) {
    const int chunk = int(std::min<int64_t>(n, INT_MAX / 2));
    ARCH_TRY_STATUS(checked(MPI_Allreduce(MPI_IN_PLACE, data, chunk, MPI_FLOAT, MPI_SUM, data_), "all_reduce"));
    data += chunk;
    n -= chunk;
  }
  return {};
}

Status MpiWorld::all_gather(const void* mine, const std::vector<int64_t>& bytes, void* all) {
  std::vector<int> counts, offsets;
  int64_t at = 0;
  for (int64_t b : bytes) {
    if (b > INT_MAX || at > INT_MAX) return error("all_gather: more than 2 GB at once");
    counts.push_back(int(b));
    offsets.push_back(int(at));
    at += b;
  }
  if (int(counts.size()) != size_) return error("all_gather: sizes for " + std::to_string(counts.size()) + " processes");
  return checked(MPI_Allgatherv(mine, counts[size_t(rank_)], MPI_BYTE, all, counts.data(), offsets.data(), MPI_BYTE,
                                data_),
                 "all_gather");
}

Status MpiWorld::finish_sends(bool wait) {
  for (size_t i = 0; i < pending_.size();) {
    int done = 0;
    ARCH_TRY_STATUS(checked(wait ? MPI_Wait(&pending_[i]->request, MPI_STATUS_IGNORE)
                                 : MPI_Test(&pending_[i]->request, &done, MPI_STATUS_IGNORE),
                            "send"));
    if (wait || done) pending_.erase(pending_.begin() + long(i));
    else ++i;
  }
  return {};
}

// Never waits for the receiver: a stage hands a prompt's next chunk on
// while the next stage still works on the last (and a ring's last stage
// sends back to one that has not come to receive yet).
Status MpiWorld::send(int to, const void* data, int64_t bytes) {
  if (bytes > INT_MAX) return error("send: more than 2 GB at once");
  ARCH_TRY_STATUS(finish_sends(false));
  auto p = std::make_unique<Pending>();
  p->bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  ARCH_TRY_STATUS(checked(MPI_Isend(p->bytes.data(), int(bytes), MPI_BYTE, to, 0, data_, &p->request), "send"));
  pending_.push_back(std::move(p));
  return {};
}

Status MpiWorld::recv(int from, void* data, int64_t bytes) {
  if (bytes > INT_MAX) return error("recv: more than 2 GB at once");
  ARCH_TRY_STATUS(finish_sends(false));
  MPI_Status status;
  ARCH_TRY_STATUS(checked(MPI_Recv(data, int(bytes), MPI_BYTE, from, 0, data_, &status), "recv"));
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  if (got != bytes)
    return error("recv: process " + std::to_string(from) + " sent " + std::to_string(got) + " bytes, " +
                 std::to_string(bytes) + " expected");
  return {};
}

Status MpiWorld::send_call(const std::string& bytes) {
  uint64_t n = bytes.size();
  ARCH_TRY_STATUS(checked(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, calls_), "sending a session call"));
  if (n > uint64_t(INT_MAX)) return error("a session call of more than 2 GB");
  return checked(MPI_Bcast(const_cast<char*>(bytes.data()), int(n), MPI_BYTE, 0, calls_), "sending a session call");
}

Result<std::string> MpiWorld::receive_call() {
  uint64_t n = 0;
  ARCH_TRY_STATUS(checked(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, calls_), "receiving a session call"));
  if (n > uint64_t(INT_MAX)) return error("a session call of more than 2 GB");
  std::string bytes(size_t(n), '\0');
  ARCH_TRY_STATUS(checked(MPI_Bcast(bytes.data(), int(n), MPI_BYTE, 0, calls_), "receiving a session call"));
  return bytes;
}

std::vector<int> MpiWorld::everyone(int ok) {
  std::vector<int> all(size_t(size_), 0);
  if (MPI_Allgather(&ok, 1, MPI_INT, all.data(), 1, MPI_INT, calls_) != MPI_SUCCESS) abort("the processes could not agree");
  return all;
}

std::vector<double> MpiWorld::everyone_mb(double mb) {
  std::vector<double> all(size_t(size_), 0);
  if (MPI_Allgather(&mb, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, calls_) != MPI_SUCCESS)
    abort("the processes could not agree");
  return all;
}

void MpiWorld::abort(const std::string& message) {
  std::fprintf(stderr, "archrun: rank %d (%s): error: %s\n", rank_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace arch
