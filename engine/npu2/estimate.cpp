#include "engine/npu2/estimate.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace arch::npu2 {

Result<Device> read_device(const std::string& path) {
  Device d;
  d.path = path;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return error(path + ": cannot read the device description");
  } catch (const YAML::Exception& e) {
    return error(path + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg);
  }
  auto positive = [&](const char* key, double& into) -> Status {
    if (!root[key]) return error(path + ": '" + std::string(key) + "' is missing");
    try {
      into = root[key].as<double>();
    } catch (const YAML::Exception&) {
      return error(path + ":" + std::to_string(root[key].Mark().line + 1) + ": '" + key + "' is not a number");
    }
    if (!(into > 0) && std::string(key) != "command_us")
      return error(path + ":" + std::to_string(root[key].Mark().line + 1) + ": '" + key + "' must be positive");
    return {};
  };
  double tiles = 0;
  ARCH_TRY_STATUS(positive("tiles", tiles));
  d.tiles = int(tiles);
  ARCH_TRY_STATUS(positive("clock_ghz", d.clock_ghz));
  ARCH_TRY_STATUS(positive("vector_ops_per_cycle", d.vector_ops_per_cycle));
  ARCH_TRY_STATUS(positive("bandwidth_gb_s", d.bandwidth_gb_s));
  ARCH_TRY_STATUS(positive("command_us", d.command_us));
  d.name = root["name"] ? root["name"].as<std::string>() : "device";
  if (!root["macs_per_cycle"] || !root["macs_per_cycle"].IsMap())
    return error(path + ": 'macs_per_cycle' maps a dtype (bf16, f32) to MACs per cycle per tile");
  for (const auto& kv : root["macs_per_cycle"]) d.macs_per_cycle[kv.first.as<std::string>()] = kv.second.as<double>();
  if (!d.macs_per_cycle.count("bf16")) return error(path + ": 'macs_per_cycle' has no bf16 rate");
  return d;
}

namespace {

double type_bytes(const std::string& t) { return t == "bf16" ? 2 : 4; }

double numel(const Dims& d) {
  double n = 1;
  for (int64_t x : d) n *= double(x);
  return n;
}

double slot_width(const Program& p, const Slot& s) {
  if (s.end) return double(s.end - s.begin);
  const Buffer* b = p.buffer(s.buffer);
  return b ? double(b->width) : 0;
}
double slot_bytes(const Program& p, const Slot& s) {
  const Buffer* b = p.buffer(s.buffer);
  return b ? slot_width(p, s) * type_bytes(b->dtype) : 0;
}

// The time of `macs` multiplies, `vector` other element operations and
// `bytes` of DRAM traffic on d: compute and traffic overlap, the command
// cost does not.
double unit_seconds(const Device& d, const std::string& dtype, double macs, double vector, double bytes, bool* memory) {
  const double hz = d.clock_ghz * 1e9 * d.tiles;
  const double rate = d.macs_per_cycle.count(dtype) ? d.macs_per_cycle.at(dtype) : d.macs_per_cycle.at("bf16");
  const double compute = macs / (hz * rate) + vector / (hz * d.vector_ops_per_cycle);
  const double traffic = bytes / (d.bandwidth_gb_s * 1e9);
  if (memory) *memory = traffic >= compute;
  return std::max(compute, traffic) + d.command_us * 1e-6;
}

}  // namespace

Estimate estimate(const Program& p, const Device& d, int64_t position) {
  Estimate e;
  e.position = position;
  for (const Unit& u : p.units) {
    UnitCost c{u.kind, u.block};
    double vector = 0, constants = 0, io = 0;
    // An embedding reads one row of its table; an expert matvec the chosen
    // k experts' rows of every expert's.
    const double chosen = u.kind == "expert_matvec" ? double(u.attrs.value("k", int64_t(1))) /
                                                          double(std::max<int64_t>(1, u.attrs.value("experts", int64_t(1))))
                                                    : 1.0;
    for (const auto& k : u.constants)
      constants += (u.kind == "embedding" && k.shape.size() == 2 ? double(k.shape[1]) : numel(k.shape) * chosen) * type_bytes(k.dtype);
    for (const auto& s : u.reads)
      if (s.buffer != "cache") io += slot_bytes(p, s);
    for (const auto& s : u.writes)
      if (s.buffer != "cache") io += slot_bytes(p, s);
    double extra_unfused = 0;   // DRAM traffic the unfused ops would add
    int unfused_ops = 0;
    for (const auto& op : u.ops)
      if (op.find("= reshape") == std::string::npos) ++unfused_ops;
    std::string role = u.attrs.value("role", std::string());
    if (u.kind == "matvec" || u.kind == "expert_matvec") {
      const double N = u.constants[0].shape[0], K = u.constants[0].shape.size() > 1 ? u.constants[0].shape[1] : 1;
      c.macs = N * K * chosen;
      // Unfused, each part reads the input again.
      extra_unfused += double(u.writes.size() - 1) * slot_bytes(p, u.reads[0]);
    } else if (u.kind == "delta_rule" || u.kind == "conv") {
      // A recurrent state, read and written whole every step at any
      // position (where an attention reads a row a position).
      const int64_t index = u.attrs.value("state", int64_t(0));
      const State* st = index >= 0 && index < int64_t(p.states.size()) ? &p.states[size_t(index)] : nullptr;
      const double state = st ? numel(st->shape) * type_bytes(st->dtype) : 0;
      io += 2 * state;
      e.state_bytes += 2 * state;
      if (u.kind == "delta_rule" && st) {  // decay S, S^T k, S += k delta^T, S^T q: per value head
        const double cells = numel(st->shape);
        c.macs = 3 * cells;
        vector = cells;
      } else {
        c.macs = st ? numel(st->shape) + slot_width(p, u.writes[0]) : 0;  // the kernel's taps
        vector = 4 * slot_width(p, u.writes[0]);                          // silu
      }
    } else if (u.kind == "attention" || u.kind == "kv_write") {
      const double KH = u.attrs.value("kv_heads", int64_t(1)), D = u.attrs.value("head_dim", int64_t(1));
      const double cb = p.caches.empty() ? 2 : type_bytes(p.caches[0].dtype);
      if (u.kind == "attention") {
        const int64_t window = u.attrs.value("window", int64_t(0));
        e.cache_bytes += 2 * KH * D * double(window > 0 ? std::min<int64_t>(position + 1, window) : position + 1) * cb;
        const double H = u.attrs.value("heads", int64_t(1));
        // a sliding window reads its last positions only
        const double seen = double(window > 0 ? std::min<int64_t>(position + 1, window) : position + 1);
        c.macs = 2 * H * D * seen;
        vector = 3 * H * seen;  // scale, exp, sum
        io += 2 * KH * D * seen * cb;
      } else {
        io += 2 * KH * D * cb;
      }
    } else if (u.kind == "swiglu") {
      const double w = slot_width(p, u.writes[0]);
      vector = 6 * w;  // silu (exp, add, div, mul) and the product
      extra_unfused += 2 * w * type_bytes(p.numerics.value("activations", std::string("bf16")));
    } else {
      for (const auto& s : u.writes) vector += 4 * slot_width(p, s);
    }
    c.bytes = constants + io;
    e.weight_bytes += constants;
    const std::string dtype = u.constants.empty() ? "bf16" : u.constants[0].dtype;
    // The advance is the step's bookkeeping, carried by its last command.
    c.seconds = u.kind == "advance" ? 0 : unit_seconds(d, dtype, c.macs, vector, c.bytes, &c.bound_by_memory);
    e.seconds += c.seconds;
    e.by_kind[u.kind == "matvec" ? "matvec " + role : u.kind] += c.seconds;
    if (u.kind != "advance") ++e.commands;
    // Unfused: one command per op, the extra traffic.
    const int commands = std::max(1, unfused_ops) * (u.kind == "advance" ? 0 : 1);
    e.unfused_commands += commands;
    e.unfused_seconds += c.seconds + (commands - (u.kind == "advance" ? 0 : 1)) * d.command_us * 1e-6 +
                         extra_unfused / (d.bandwidth_gb_s * 1e9);
    e.units.push_back(c);
  }
  return e;
}

std::string estimate_text(const Device& d, const Estimate& e) {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "estimate on %s (%s): %d tiles at %.2f GHz, %.0f bf16 MACs/cycle/tile, %.0f GB/s, %.0f us per command\n",
                d.name.c_str(), d.path.c_str(), d.tiles, d.clock_ghz, d.macs_per_cycle.at("bf16"), d.bandwidth_gb_s, d.command_us);
  s << line;
  std::snprintf(line, sizeof line, "a decode step at position %lld: %.3f ms, %.1f tok/s; %.1f MB of constants read; %lld commands\n",
                (long long)e.position, e.seconds * 1e3, e.tokens_per_second(), e.weight_bytes / 1e6, (long long)e.commands);
  s << line;
  std::vector<std::pair<double, std::string>> kinds;
  for (const auto& [k, t] : e.by_kind) kinds.push_back({t, k});
  std::sort(kinds.rbegin(), kinds.rend());
  s << "where the time goes:\n";
  for (const auto& [t, k] : kinds) {
    std::snprintf(line, sizeof line, "  %-16s %8.3f ms  %5.1f%%\n", k.c_str(), t * 1e3, 100 * t / e.seconds);
    s << line;
  }
  if (e.state_bytes > 0 || e.cache_bytes > 0) {
    std::snprintf(line, sizeof line,
                  "per step: %.3f MB of recurrent state read and written (any position), %.3f MB of KV cache read at position %lld\n",
                  e.state_bytes / 1e6, e.cache_bytes / 1e6, (long long)e.position);
    s << line;
  }
  const double saved = e.unfused_seconds - e.seconds;
  std::snprintf(line, sizeof line,
                "unfused (each IR op its own command, merged parts and the activation's intermediate through DRAM): %.3f ms, "
                "%.1f tok/s, %lld commands; the fusions save %.3f ms per token (%.1f%%)\n",
                e.unfused_seconds * 1e3, e.unfused_seconds > 0 ? 1 / e.unfused_seconds : 0, (long long)e.unfused_commands,
                saved * 1e3, 100 * saved / e.unfused_seconds);
  s << line;
  return s.str();
}

}  // namespace arch::npu2
