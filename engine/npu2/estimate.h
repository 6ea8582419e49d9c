// A cost estimate of a lowered program (archc lower --estimate): each
// unit's time on a device description (compute tiles, MAC rate per dtype,
// DRAM bandwidth, a fixed cost per command), summed for a decode step;
// beside it, the same step with every IR op its own command and the
// merged matvecs and the gated activation unfused, so a fusion is judged
// by what it saves.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/npu2/program.h"

namespace arch::npu2 {

struct Device {
  std::string path, name;
  int tiles = 1;
  double clock_ghz = 1;
  std::map<std::string, double> macs_per_cycle;  // per tile, by dtype
  double vector_ops_per_cycle = 1;               // per tile
  double bandwidth_gb_s = 1;
  double command_us = 0;
};

Result<Device> read_device(const std::string& path);

struct UnitCost {
  std::string kind, block;
  double macs = 0, bytes = 0, seconds = 0;
  bool bound_by_memory = false;
};

struct Estimate {
  int64_t position = 0;            // the decode step priced: its attention reads this many positions
  std::vector<UnitCost> units;     // in program order
  double seconds = 0;              // one decode step
  double weight_bytes = 0;
  // A step's traffic to the layers' memory of the past: the recurrent
  // states read and written whole (the same at any position), and the KV
  // caches read up to the position.
  double state_bytes = 0, cache_bytes = 0;
  std::map<std::string, double> by_kind;  // seconds, by unit kind (matvecs by role)
  // The same step unfused: one command per IR op, each merged part and
  // the activation's intermediate through DRAM.
  double unfused_seconds = 0;
  int64_t commands = 0, unfused_commands = 0;
  double tokens_per_second() const { return seconds > 0 ? 1 / seconds : 0; }
};

// A decode step at `position` (its attention over that many keys).
Estimate estimate(const Program& p, const Device& d, int64_t position);
// The estimate as a table: where the time goes, tok/s, what the fusions save.
std::string estimate_text(const Device& d, const Estimate& e);

}  // namespace arch::npu2
