#include "engine/distributed/follower.h"

#include <map>

#include "engine/distributed/call_codec.h"
#include "engine/runtime/batched_session.h"
#include "engine/runtime/session.h"

namespace arch {

MpiMirror::~MpiMirror() { tell(SessionCall{.kind = SessionCall::kExit}); }

std::unique_lock<std::recursive_mutex> MpiMirror::tell(const SessionCall& call) {
  std::unique_lock<std::recursive_mutex> lock(calls_);
  // Rank 0 cannot go on alone: the others would wait for it forever.
  if (Status s = world_.send_call(encode_call(call)); !s.ok()) world_.abort(s.error().message);
  return lock;
}

std::vector<double> MpiMirror::peak_rss_mb(double mine) {
  auto lock = tell(SessionCall{.kind = SessionCall::kPeakRss});
  return world_.everyone_mb(mine);
}

Status follow(const Model& m, MpiWorld& world) {
  std::map<int64_t, std::unique_ptr<Session>> sessions;
  std::map<int64_t, std::unique_ptr<BatchedSession>> batches;
  auto session = [&](int64_t id) -> Result<Session*> {
    auto it = sessions.find(id);
    if (it == sessions.end()) return error("rank 0 named session " + std::to_string(id) + ", which is not open");
    return it->second.get();
  };
  for (;;) {
    ARCH_TRY(std::string bytes, world.receive_call());
    ARCH_TRY(SessionCall c, decode_call(bytes));
    switch (c.kind) {
      case SessionCall::kExit:
        return {};
      case SessionCall::kPeakRss:
        world.everyone_mb(own_peak_rss_mb());
        break;
      case SessionCall::kOpen:
        sessions[c.session] = std::make_unique<Session>(m, SessionOptions{c.n, int(c.m)});
        break;
      case SessionCall::kOpenBatch: {
        ARCH_TRY(auto b, BatchedSession::make(m, int(c.n), c.m, /*logits_here=*/false));
        batches[c.session] = std::move(b);
        break;
      }
      case SessionCall::kClose:
        sessions.erase(c.session);
        batches.erase(c.session);
        break;
      case SessionCall::kRun: {
        ARCH_TRY(Session* s, session(c.session));
        ARCH_TRY(auto out, s->run(c.graph, std::move(c.inputs), {}, c.last_only));
        break;
      }
      case SessionCall::kRewind: {
        ARCH_TRY(Session* s, session(c.session));
        ARCH_TRY_STATUS(s->rewind(c.n));
        break;
      }
      case SessionCall::kMark: {
        ARCH_TRY(Session* s, session(c.session));
        s->mark();
        break;
      }
      case SessionCall::kBackTo: {
        ARCH_TRY(Session* s, session(c.session));
        ARCH_TRY(int64_t at, s->back_to(c.n));
        (void)at;
        break;
      }
      case SessionCall::kReset: {
        ARCH_TRY(Session* s, session(c.session));
        s->reset();
        break;
      }
      case SessionCall::kRunBatch:
      case SessionCall::kRelease: {
        auto it = batches.find(c.session);
        if (it == batches.end()) return error("rank 0 named batch " + std::to_string(c.session) + ", which is not open");
        if (c.kind == SessionCall::kRelease) {
          it->second->release(int(c.n));
          break;
        }
        std::vector<BatchedSession::Piece> pieces;
        for (const auto& [slot, tokens] : c.pieces) pieces.push_back({slot, tokens});
        ARCH_TRY(Tensor logits, it->second->run(pieces));
        break;
      }
    }
  }
}

}  // namespace arch
