// Step breakdown: where each rank's optimizer steps go (the `time_ms` of its step messages: data,
// forward, backward, exposed comm, optimizer, telemetry, in ms per step averaged over the log
// interval), kept per rank as columns, and the figures derived from it:
//   compute = data + forward + backward + optimizer   (the rank's own work)
//   wait    = comm                                     (blocked on its peers)
//   sync efficiency = compute / step                   (1 = never waits, never idles)
// Telemetry counts as neither: it is the monitor's own cost, shown apart.
// Step messages without `time_ms` (older workers, older metrics.jsonl files) add nothing here, so
// such a run simply has no breakdown.
#pragma once

#include <QString>
#include <array>
#include <cstddef>
#include <optional>

#include "metrics/chunked_array.h"
#include "wire.h"

namespace ddpdesk {

// The parts of a step, in the order charts stack them and tables list them.
enum class StepPart { Data, Forward, Backward, Comm, Optimizer, Telemetry };
constexpr int kStepPartCount = 6;
constexpr std::array<StepPart, kStepPartCount> kStepParts = {
    StepPart::Data, StepPart::Forward,   StepPart::Backward,
    StepPart::Comm, StepPart::Optimizer, StepPart::Telemetry};
// The parts that make up compute (the straggler detector compares these).
constexpr std::array<StepPart, 4> kComputeParts = {StepPart::Data, StepPart::Forward,
                                                   StepPart::Backward, StepPart::Optimizer};

// "data", "forward", "backward", "comm", "optimizer", "telemetry" (as in the wire format).
QString stepPartName(StepPart part);
double partMs(const wire::StepTimes& t, StepPart part);

double computeMs(const wire::StepTimes& t);
double waitMs(const wire::StepTimes& t);
// compute / step; NaN when the step time is not positive.
double syncEfficiency(const wire::StepTimes& t);

// One rank's breakdowns in arrival order (one entry per step message that carried `time_ms`).
// Columns, like the rest of the store: appending never moves what is there.
struct BreakdownSeries {
  Column step;                               // optimizer step of the message
  Column time;                               // seconds since the rank started (worker clock)
  std::array<Column, kStepPartCount> parts;  // ms per step, indexed by StepPart
  Column stepMs;                             // ms per step, the parts' sum
  Column steps;                              // optimizer steps the averages cover

  std::size_t size() const { return step.size(); }
  bool empty() const { return step.size() == 0; }
  void append(const wire::Step& s);  // no-op when s has no times
  wire::StepTimes at(std::size_t i) const;
  std::optional<wire::StepTimes> latest() const;
  // The whole series as one breakdown: each entry weighted by the steps it covers. Kept as
  // running sums, so asking is free however long the run.
  std::optional<wire::StepTimes> average() const;

 private:
  wire::StepTimes sum_;  // of each part times its weight; steps: the steps covered
  double weight_ = 0;
};

}  // namespace ddpdesk
