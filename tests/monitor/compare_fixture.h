// Hand-made run directories for the comparison tests: spec.json and metrics.jsonl written the
// way RunDirectory and the codec write them, with curves the tests know point by point.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>
#include <QStringList>
#include <vector>

#include "monitor_test_util.h"
#include "run/run_directory.h"
#include "run_spec.h"
#include "wire.h"

namespace ddpdesk::testing {

// A spec that differs from the default in batch size and accumulation (and where it lives).
inline RunSpec compareSpec(int batch, int accum, const std::string& runDir = {},
                           const std::string& task = "seed") {
  RunSpec s;
  s.task = task;
  s.batch_size = batch;
  s.accum_steps = accum;
  s.run_dir = runDir;
  return s;
}

// Shared with the other monitor tests that run programs (monitor_test_util.h).
using test::ProcessResult;
using test::runProgram;

inline wire::Message stepMessage(std::int64_t step, double loss, std::int64_t samples, double time,
                                 double samplesPerSec = 100.0) {
  wire::Step s;
  s.step = step;
  s.loss = loss;
  s.global_loss = loss;
  s.samples = samples;
  s.time = time;
  s.lr = 1e-3;
  s.samples_per_s = samplesPerSec;
  return s;
}

inline wire::Message evalMessage(std::int64_t step, double loss, double accuracy) {
  wire::Eval e;
  e.step = step;
  e.loss = loss;
  e.accuracy = accuracy;
  return e;
}

// `dir`/spec.json and `dir`/metrics.jsonl; false when a file cannot be written.
inline bool writeRun(const QString& dir, const RunSpec& spec,
                     const std::vector<wire::Message>& messages) {
  if (!QDir().mkpath(dir)) return false;
  QFile s(RunDirectory::specPath(dir));
  if (!s.open(QIODevice::WriteOnly)) return false;
  s.write(QByteArray::fromStdString(to_json_text(spec)));
  QFile m(RunDirectory::metricsPath(dir));
  if (!m.open(QIODevice::WriteOnly)) return false;
  for (const wire::Message& msg : messages)
    m.write(QByteArray::fromStdString(wire::encode(msg)) + '\n');
  return true;
}

// A run of `steps` (x, loss) points with `batch` samples per step and 0.1 s per step.
inline std::vector<wire::Message> lossCurve(const std::vector<std::pair<int, double>>& points,
                                            int batch = 32) {
  std::vector<wire::Message> out;
  for (const auto& [step, loss] : points)
    out.push_back(stepMessage(step, loss, std::int64_t(step) * batch, 0.1 * step));
  return out;
}

}  // namespace ddpdesk::testing
