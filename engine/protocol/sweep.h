// A sweep: a grid over numeric RunSpec fields, expanded into one RunSpec per combination. Read
// from a JSON file (`ddpdesk --headless --sweep FILE`) or built by the GUI's sweep dialog; both
// expand here, and every expanded spec goes through the RunSpec's own validate().
//
//   {
//     "name": "accum",                                   optional, default "sweep"
//     "base": {"task": "fmnist-mlp", "nproc": 2, ...},   run spec fields every run shares
//     "grid": {"accum_steps": [1, 2, 4]},                 numeric fields -> lists of values
//     "effective_batch": 256,                             optional: keep nproc x batch x accum at
//                                                         this (true: the base spec's)
//     "derive": "batch_size",                             the field computed to keep it (or
//                                                         "accum_steps"); default batch_size
//     "stop_on_failure": false                            a failed run stops the rest
//   }
//
// Combinations are taken in the grid's key order, the last key varying fastest. With
// effective_batch, a combination whose other factors do not divide it is skipped with the reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_spec.h"

namespace ddpdesk {

struct SweepRun {
  RunSpec spec;           // base + this combination (+ the derived field), named "<sweep>-<k>"
  nlohmann::json fields;  // the swept (and derived) fields' values of this run
};

struct SweepSkip {
  nlohmann::json fields;  // the combination as given
  std::string reason;
};

struct SweepPlan {
  std::string name = "sweep";
  bool stop_on_failure = false;
  std::vector<SweepRun> runs;
  std::vector<SweepSkip> skipped;
  // The first problem found: one line naming the field ("grid.batch_size", "base.lr", ...), the
  // value and what is allowed. Empty when the sweep is good.
  std::string error;
  bool ok() const { return error.empty(); }
};

// Most runs one sweep may expand to: a typo in a grid should not queue a week of training.
constexpr std::size_t kMaxSweepRuns = 1000;

// The keys a sweep definition may hold.
const std::vector<std::string>& sweep_keys();

// Parses a sweep definition (the text of a sweep file) and expands it.
SweepPlan parse_sweep(const std::string& text);
// Expands an already parsed definition; grid_order lists the grid's keys in the order they were
// written (a JSON object does not keep it); keys missing from it follow in sorted order.
SweepPlan expand_sweep(const nlohmann::json& definition,
                       const std::vector<std::string>& grid_order = {});

}  // namespace ddpdesk
