// Step breakdown: where each rank's optimizer steps go (the `time_ms` of its step messages: data,
// forward, backward, exposed comm, optimizer, other, telemetry, in ms per step averaged over the
// log interval), kept per rank as columns, and the figures derived from it:
//   compute = data + forward + backward + optimizer + other   (the rank's own work)
//   wait    = comm                                             (blocked on its peers)
//   sync efficiency = compute / step                           (1 = never waits, never idles)
// Telemetry counts as neither: it is the monitor's own cost, shown apart. "Other" is a training
// script's time outside the phases it measured (ddpdesk.phase); a script that measured no comm
// has no wait and no sync efficiency (NaN), since its waiting hides inside its other parts.
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
enum class StepPart { Data, Forward, Backward, Comm, Optimizer, Other, Telemetry };
constexpr int kStepPartCount = 7;
constexpr std::array<StepPart, kStepPartCount> kStepParts = {
    StepPart::Data,      StepPart::Forward, StepPart::Backward, StepPart::Comm,
    StepPart::Optimizer, StepPart::Other,   StepPart::Telemetry};
// The parts that make up compute (the straggler detector compares these).
constexpr std::array<StepPart, 5> kComputeParts = {
    StepPart::Data, StepPart::Forward, StepPart::Backward, StepPart::Optimizer, StepPart::Other};

// "data", "forward", "backward", "comm", "optimizer", "other", "telemetry" (as in the wire
// format).
QString stepPartName(StepPart part);
double partMs(const wire::StepTimes& t, StepPart part);

double computeMs(const wire::StepTimes& t);
// comm; NaN when comm was not measured.
double waitMs(const wire::StepTimes& t);
// compute / step; NaN when the step time is not positive or comm was not measured.
double syncEfficiency(const wire::StepTimes& t);

// One rank's breakdowns in arrival order (one entry per step message that carried `time_ms`).
// Columns, like the rest of the store: appending never moves what is there.
struct BreakdownSeries {
  Column step;                               // optimizer step of the message
  Column time;                               // seconds since the rank started (worker clock)
  std::array<Column, kStepPartCount> parts;  // ms per step, indexed by StepPart
  Column stepMs;                             // ms per step, the parts' sum
  Column steps;                              // optimizer steps the averages cover
  Column commMeasured;                       // 1 or 0 (wire::StepTimes::comm_measured)

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
  bool commMeasured_ = false;  // by any message: the average's comm_measured
};

}  // namespace ddpdesk
