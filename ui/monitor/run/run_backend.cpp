// What every kind of run's backend shares (run_backend.h).
#include "run/run_backend.h"

#include "metrics/metrics_store.h"

namespace ddpdesk {

RunBackend::RunBackend(RunController& run) : run_(run) {}

RunBackend::~RunBackend() = default;

bool RunBackend::start(const RunSpec&, const QString&, QString* error) {
  if (error) *error = QStringLiteral("this kind of run cannot be started, only followed");
  return false;
}

bool RunBackend::attach(const QString&, QString* error) {
  if (error) *error = QStringLiteral("this kind of run cannot be followed");
  return false;
}

int RunBackend::worldSize() const {
  return int(run_.connected_.size());
}

void RunBackend::ingestMeasured(const std::vector<wire::Message>& messages) const {
  QByteArray lines;
  for (const wire::Message& m : messages)
    lines += QByteArray::fromStdString(wire::encode(m)) + '\n';
  ingest(messages, lines);
}

void RunBackend::announceRestart(int attempt, int maxRestarts, const QString& cause,
                                 int delayMs) const {
  const RunProgress progress = store()->progress();
  wire::Event e;
  e.rank = 0;
  e.event = "restart";
  e.epoch = progress.epoch;
  e.step = progress.step;
  e.detail = cause.toStdString();
  e.time = progress.elapsed;
  ingestMeasured({e});
  Q_EMIT run_.restarting(attempt, maxRestarts, cause, delayMs);
}

QList<qint64> RunBackend::pids() const {
  QList<qint64> out;
  for (const RankState& r : ranks()) out.append(r.pid);
  return out;
}

}  // namespace ddpdesk
