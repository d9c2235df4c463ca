#include "metrics/step_breakdown.h"

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
    case StepPart::Other:
      return QStringLiteral("other");
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
    case StepPart::Other:
      return t.other;
    case StepPart::Telemetry:
      return t.telemetry;
  }
  return 0;
}

double computeMs(const wire::StepTimes& t) {
  return t.data + t.forward + t.backward + t.optimizer + t.other;
}

double waitMs(const wire::StepTimes& t) {
  return t.comm_measured ? t.comm : std::numeric_limits<double>::quiet_NaN();
}

double syncEfficiency(const wire::StepTimes& t) {
  return t.step > 0 && t.comm_measured ? computeMs(t) / t.step
                                       : std::numeric_limits<double>::quiet_NaN();
}

void BreakdownSeries::append(const wire::Step& s) {
  if (!s.times) return;
  const wire::StepTimes& t = *s.times;
  step.push_back(double(s.step));
  time.push_back(s.time);
  for (StepPart p : kStepParts) parts[int(p)].push_back(partMs(t, p));
  stepMs.push_back(t.step);
  steps.push_back(double(t.steps));
  commMeasured.push_back(t.comm_measured ? 1.0 : 0.0);
  commMeasured_ = commMeasured_ || t.comm_measured;
  // A message that says it covers no steps still says something: it counts once.
  const double w = t.steps > 0 ? double(t.steps) : 1.0;
  sum_.data += w * t.data;
  sum_.forward += w * t.forward;
  sum_.backward += w * t.backward;
  sum_.comm += w * t.comm;
  sum_.optimizer += w * t.optimizer;
  sum_.telemetry += w * t.telemetry;
  sum_.other += w * t.other;
  sum_.step += w * t.step;
  sum_.steps += t.steps;
  weight_ += w;
}

wire::StepTimes BreakdownSeries::at(std::size_t i) const {
  wire::StepTimes t;
  t.data = parts[int(StepPart::Data)][i];
  t.forward = parts[int(StepPart::Forward)][i];
  t.backward = parts[int(StepPart::Backward)][i];
  t.comm = parts[int(StepPart::Comm)][i];
  t.optimizer = parts[int(StepPart::Optimizer)][i];
  t.telemetry = parts[int(StepPart::Telemetry)][i];
  t.other = parts[int(StepPart::Other)][i];
  t.comm_measured = commMeasured[i] != 0;
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
  wire::StepTimes a = sum_;
  a.data /= weight_;
  a.forward /= weight_;
  a.backward /= weight_;
  a.comm /= weight_;
  a.optimizer /= weight_;
  a.telemetry /= weight_;
  a.other /= weight_;
  a.comm_measured = commMeasured_;
  a.step /= weight_;
  return a;
}

}  // namespace ddpdesk
