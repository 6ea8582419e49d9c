// Several "processes" of a split model as threads of one test: the
// collectives over shared memory, summed in rank order (so every thread
// gets the same bits, as MPI gives every rank).
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "engine/core/collectives.h"

namespace arch::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int ranks) : ranks_(ranks), slots_(size_t(ranks)) {}
  int ranks() const { return ranks_; }

  // Each rank's bytes, all of them, to every rank (which reads them before
  // anyone writes again).
  template <typename Read>
  void exchange(int rank, const void* data, size_t bytes, Read read) {
    {
      std::unique_lock<std::mutex> l(mu_);
      slots_[size_t(rank)].assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    }
    barrier();
    read(slots_);
    barrier();
  }

 private:
  void barrier() {
    std::unique_lock<std::mutex> l(mu_);
    const int64_t gen = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(l, [&] { return generation_ != gen; });
    }
  }
  // Point to point: each (from, to) pair's messages in order.
 public:
  void put(int from, int to, std::vector<char> bytes) {
    std::unique_lock<std::mutex> l(mu_);
    queues_[{from, to}].push_back(std::move(bytes));
    cv_.notify_all();
  }
  std::vector<char> take(int from, int to) {
    std::unique_lock<std::mutex> l(mu_);
    auto& q = queues_[{from, to}];
    cv_.wait(l, [&] { return !q.empty(); });
    std::vector<char> b = std::move(q.front());
    q.pop_front();
    return b;
  }

 private:
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queues_;
  const int ranks_;
  std::vector<std::vector<char>> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

class ThreadCollectives : public Collectives {
 public:
  ThreadCollectives(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.ranks(); }
  Status all_reduce_sum(float* data, int64_t n) override {
    g_.exchange(rank_, data, size_t(n) * 4, [&](const std::vector<std::vector<char>>& all) {
      std::vector<float> sum(size_t(n), 0.0f);
      for (const auto& part : all)
        for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += reinterpret_cast<const float*>(part.data())[i];
      std::memcpy(data, sum.data(), size_t(n) * 4);
    });
    return {};
  }
  Status all_gather(const void* mine, const std::vector<int64_t>& bytes, void* all) override {
    g_.exchange(rank_, mine, size_t(bytes[size_t(rank_)]), [&](const std::vector<std::vector<char>>& parts) {
      char* out = static_cast<char*>(all);
      for (const auto& part : parts) {
        std::memcpy(out, part.data(), part.size());
        out += part.size();
      }
    });
    return {};
  }
  Status send(int to, const void* data, int64_t bytes) override {
    g_.put(rank_, to, std::vector<char>(static_cast<const char*>(data), static_cast<const char*>(data) + bytes));
    return {};
  }
  Status recv(int from, void* data, int64_t bytes) override {
    std::vector<char> b = g_.take(from, rank_);
    if (int64_t(b.size()) != bytes) return error("recv: " + std::to_string(b.size()) + " bytes, " + std::to_string(bytes) + " expected");
    std::memcpy(data, b.data(), b.size());
    return {};
  }

 private:
  ThreadGroup& g_;
  const int rank_;
};

}  // namespace arch::testing
