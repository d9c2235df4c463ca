// What the tests of Python-script runs through `ddpdesk --headless` share: the worker beside
// ddpdesk (a script run takes the client's folder from its place), whether the test's python3
// has torch, the run directory a run made, and the step losses it charted.
#pragma once

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <map>

#include "monitor_test_util.h"

namespace ddpdesk::test {

inline QString workerBeside() {
  return QFileInfo(QStringLiteral(DDPDESK_BIN)).absolutePath() + QStringLiteral("/ddpdesk-worker");
}

inline bool pythonHasTorch(const QString& python) {
  return runProgram(python, {QStringLiteral("-c"), QStringLiteral("import torch")}).code == 0;
}

// The messages of one type in a run's metrics.jsonl, in order.
inline QList<QJsonObject> runMessages(const QString& runDir, const QString& type) {
  QList<QJsonObject> out;
  QFile f(runDir + QStringLiteral("/metrics.jsonl"));
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.value(QStringLiteral("type")).toString() == type) out << o;
  }
  return out;
}

// rank -> step -> loss, from a run's step messages.
inline std::map<int, std::map<qint64, double>> stepLosses(const QString& runDir) {
  std::map<int, std::map<qint64, double>> out;
  for (const QJsonObject& o : runMessages(runDir, QStringLiteral("step")))
    out[o.value(QStringLiteral("rank")).toInt()]
       [qint64(o.value(QStringLiteral("step")).toDouble())] =
           o.value(QStringLiteral("loss")).toDouble();
  return out;
}

// The one run directory under an XDG data home, empty while there is none (or several).
inline QString onlyRunDir(const QString& xdg) {
  const QDir runs(xdg + QStringLiteral("/ddpdesk/runs"));
  const QStringList dirs = runs.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  return dirs.size() == 1 ? runs.filePath(dirs.front()) : QString();
}

}  // namespace ddpdesk::test
