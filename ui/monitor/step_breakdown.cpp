#include "step_breakdown.h"

#include <limits>

namespace ddpdesk {

QString stepPartName(StepPart part) {
  switch (part) {
    case StepPart::Data:
      return QStringLiteral("data");
    case StepPart::Forward:
      return QStringLiteral("forward");
    case StepPart::Backward:
      return QStringLiteral("backward");
    case StepPart::Comm:
      return QStringLiteral("comm");
    case StepPart::Optimizer:
      return QStringLiteral("optimizer");
    case StepPart::Telemetry:
      return QStringLiteral("telemetry");
  }
  return {};
}

double partMs(const wire::StepTimes& t, StepPart part) {
  switch (part) {
    case StepPart::Data:
      return t.data;
    case StepPart::Forward:
      return t.forward;
    case StepPart::Backward:
      return t.backward;
    case StepPart::Comm:
      return t.comm;
    case StepPart::Optimizer:
      return t.optimizer;
    case StepPart::Telemetry:
      return t.telemetry;
  }
  return 0;
}

double computeMs(const wire::StepTimes& t) {
  return t.data + t.forward + t.backward + t.optimizer;
}

double waitMs(const wire::StepTimes& t) {
  return t.comm;
}

double syncEfficiency(const wire::StepTimes& t) {
  return t.step > 0 ? computeMs(t) / t.step : std::numeric_limits<double>::quiet_NaN();
}

void BreakdownSeries::append(const wire::Step& s) {
  if (!s.times) return;
  const wire::StepTimes& t = *s.times;
  step.push_back(double(s.step));
  time.push_back(s.time);
  for (StepPart p : kStepParts) parts[int(p)].push_back(partMs(t, p));
  stepMs.push_back(t.step);
  steps.push_back(double(t.steps));
}

wire::StepTimes BreakdownSeries::at(std::size_t i) const {
  wire::StepTimes t;
  t.data = parts[int(StepPart::Data)][i];
  t.forward = parts[int(StepPart::Forward)][i];
  t.backward = parts[int(StepPart::Backward)][i];
  t.comm = parts[int(StepPart::Comm)][i];
  t.optimizer = parts[int(StepPart::Optimizer)][i];
  t.telemetry = parts[int(StepPart::Telemetry)][i];
  t.step = stepMs[i];
  t.steps = long(steps[i]);
  return t;
}

std::optional<wire::StepTimes> BreakdownSeries::latest() const {
  if (empty()) return std::nullopt;
  return at(size() - 1);
}

std::optional<wire::StepTimes> BreakdownSeries::average() const {
  if (empty()) return std::nullopt;
  wire::StepTimes sum;
  double weight = 0;
  for (std::size_t i = 0; i < size(); ++i) {
    // A message that says it covers no steps still says something: count it once.
    const double w = steps[i] > 0 ? steps[i] : 1.0;
    const wire::StepTimes t = at(i);
    sum.data += w * t.data;
    sum.forward += w * t.forward;
    sum.backward += w * t.backward;
    sum.comm += w * t.comm;
    sum.optimizer += w * t.optimizer;
    sum.telemetry += w * t.telemetry;
    sum.step += w * t.step;
    sum.steps += long(steps[i]);
    weight += w;
  }
  sum.data /= weight;
  sum.forward /= weight;
  sum.backward /= weight;
  sum.comm /= weight;
  sum.optimizer /= weight;
  sum.telemetry /= weight;
  sum.step /= weight;
  return sum;
}

}  // namespace ddpdesk
