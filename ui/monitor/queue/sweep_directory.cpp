#include "queue/sweep_directory.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QStandardPaths>

#include "queue/run_queue.h"
#include "run/atomic_file.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

QJsonObject toQt(const nlohmann::json& j) {
  return QJsonDocument::fromJson(QByteArray::fromStdString(j.dump())).object();
}

QJsonObject readIndex(const QString& dir) {
  QFile f(SweepDirectory::indexPath(dir));
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace

QString SweepDirectory::sweepsRoot() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         QStringLiteral("/ddpdesk/sweeps");
}

QString SweepDirectory::indexPath(const QString& dir) {
  return dir + QStringLiteral("/index.json");
}
QString SweepDirectory::definitionPath(const QString& dir) {
  return dir + QStringLiteral("/sweep.json");
}
QString SweepDirectory::queuePath(const QString& dir) {
  return dir + QStringLiteral("/queue.json");
}

QString SweepDirectory::create(const SweepPlan& plan, const QByteArray& definition, QString* error,
                               const QString& root) {
  RunSpec named;
  named.name = plan.name;
  const QString dir = RunDirectory::newRunPath(named, QDateTime::currentDateTime(), root);
  if (!QDir().mkpath(dir)) {
    if (error) *error = QStringLiteral("cannot create sweep directory %1").arg(dir);
    return {};
  }
  QJsonArray runs;
  for (std::size_t i = 0; i < plan.runs.size(); ++i)
    runs.append(QJsonObject{{QStringLiteral("run"), int(i) + 1},
                            {QStringLiteral("fields"), toQt(plan.runs[i].fields)},
                            {QStringLiteral("state"), QStringLiteral("queued")},
                            {QStringLiteral("run_dir"), QString()},
                            {QStringLiteral("reason"), QString()}});
  QJsonArray skipped;
  for (const SweepSkip& s : plan.skipped)
    skipped.append(QJsonObject{{QStringLiteral("fields"), toQt(s.fields)},
                               {QStringLiteral("reason"), QString::fromStdString(s.reason)}});
  const QJsonObject index{
      {QStringLiteral("version"), 1},
      {QStringLiteral("name"), QString::fromStdString(plan.name)},
      {QStringLiteral("definition"), QStringLiteral("sweep.json")},
      {QStringLiteral("created"), QDateTime::currentDateTime().toString(Qt::ISODate)},
      {QStringLiteral("runs"), runs},
      {QStringLiteral("skipped"), skipped}};
  QByteArray text = definition;
  if (!text.endsWith('\n')) text += '\n';
  if (!writeFileAtomically(definitionPath(dir), text, error) ||
      !writeFileAtomically(indexPath(dir), QJsonDocument(index).toJson(), error)) {
    QDir(dir).removeRecursively();  // nothing half-written stays behind
    return {};
  }
  return dir;
}

void SweepDirectory::addRuns(const SweepPlan& plan, const QString& dir, RunQueue* queue) {
  for (std::size_t i = 0; i < plan.runs.size(); ++i)
    queue->add(plan.runs[i].spec, {{QStringLiteral("sweep"), dir},
                                   {QStringLiteral("sweep_run"), int(i) + 1},
                                   {QStringLiteral("fields"), toQt(plan.runs[i].fields)}});
}

bool SweepDirectory::record(const QueueEntry& entry, bool removed, QString* error) {
  const QString dir = entry.extra.value(QLatin1String("sweep")).toString();
  const int k = entry.extra.value(QLatin1String("sweep_run")).toInt();
  if (dir.isEmpty() || k <= 0) return true;
  QJsonObject index = readIndex(dir);
  QJsonArray runs = index.value(QLatin1String("runs")).toArray();
  for (int i = 0; i < runs.size(); ++i) {
    QJsonObject r = runs[i].toObject();
    if (r.value(QLatin1String("run")).toInt() != k) continue;
    r[QStringLiteral("state")] =
        removed ? QStringLiteral("removed") : QueueEntry::stateName(entry.state);
    r[QStringLiteral("run_dir")] = entry.runDir;
    r[QStringLiteral("reason")] = entry.reason;
    runs[i] = r;
    index[QStringLiteral("runs")] = runs;
    return writeFileAtomically(indexPath(dir), QJsonDocument(index).toJson(), error);
  }
  if (error) *error = QStringLiteral("%1 lists no run %2").arg(indexPath(dir)).arg(k);
  return false;
}

void SweepDirectory::follow(RunQueue* queue) {
  QObject::connect(queue, &RunQueue::entryChanged, queue, [queue](const QueueEntry& e) {
    QString error;
    if (!record(e, queue->indexOf(e.id) < 0, &error)) Q_EMIT queue->message(error);
  });
}

}  // namespace ddpdesk
