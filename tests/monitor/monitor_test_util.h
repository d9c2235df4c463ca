// Helpers shared by the monitor tests: where the fake worker is, and whether a pid is gone.
#pragma once

#include <sys/types.h>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QTemporaryDir>
#include <QTest>
#include <cerrno>
#include <csignal>
#include <memory>

#include "run_spec.h"

namespace ddpdesk::test {

// Writes `content` to `dir`/`name` and returns its path: stand-ins for the user's files in tests
// where only their existence (not their contents) matters.
inline QString writeFile(const QDir& dir, const QString& name,
                         const QByteArray& content = "fake\n") {
  QFile f(dir.filePath(name));
  if (!f.open(QIODevice::WriteOnly) || f.write(content) != content.size()) return QString();
  return f.fileName();
}

// Settings and run history of this test process in `home` (XDG data and config), under an
// application name of its own, so no test reads or leaves a person's settings.
inline void useScratchHome(const QTemporaryDir& home, const char* appName = "ddpdesk-test") {
  qputenv("XDG_DATA_HOME", home.filePath(QStringLiteral("data")).toUtf8());
  qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toUtf8());
  QCoreApplication::setOrganizationName(QStringLiteral("ddpdesk-test"));
  QCoreApplication::setApplicationName(QString::fromLatin1(appName));
}

inline QString fakeWorker() {
  return QStringLiteral(DDPDESK_FAKE_WORKER);
}

// True when no process with this pid exists any more (reaped, not even a zombie).
inline bool pidGone(qint64 pid) {
  if (pid <= 0) return true;
  return ::kill(pid_t(pid), 0) == -1 && errno == ESRCH;
}

// Gone, or a zombie nobody has reaped yet: an orphan's reaper (init, or a container's PID 1)
// is outside the test's control, so this is the check for processes that outlived their parent.
inline bool notRunning(qint64 pid) {
  if (pidGone(pid)) return true;
  QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return true;
  const QByteArray s = stat.readAll();
  const int close = s.lastIndexOf(')');
  return close > 0 && s.size() > close + 2 && s.at(close + 2) == 'Z';
}

inline bool allGone(const QList<qint64>& pids) {
  for (qint64 pid : pids)
    if (!pidGone(pid)) return false;
  return true;
}

// A small valid spec for the fake worker; the fake reads epochs, batch and accum from it.
inline RunSpec fakeSpec(int nproc, const QString& runDir = QString()) {
  RunSpec s;
  s.task = "seed";
  s.nproc = nproc;
  s.batch_size = 4;
  s.accum_steps = 2;
  s.epochs = 2;
  s.run_dir = runDir.toStdString();
  return s;
}

inline QProcessEnvironment fakeEnv(std::initializer_list<std::pair<const char*, QString>> vars) {
  QProcessEnvironment env;
  for (const auto& [k, v] : vars) env.insert(QString::fromLatin1(k), v);
  return env;
}

// `<program> --headless <args>` (the ddpdesk binary) started with `worker` as its ranks' program
// and its data directory under `xdgData`.
inline std::unique_ptr<QProcess> startHeadless(const QString& program, const QString& worker,
                                               const QString& xdgData, const QStringList& args) {
  auto p = std::make_unique<QProcess>();
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  e.insert(QStringLiteral("XDG_DATA_HOME"), xdgData);
  e.insert(QStringLiteral("DDPDESK_WORKER"), worker);
  p->setProcessEnvironment(e);
  p->start(program, QStringList{QStringLiteral("--headless")} + args);
  return p;
}

// True once a run's metrics.jsonl holds step messages from ranks 0 and 1: their signal handlers
// are in, so a stop (or the monitor's death) is graceful rather than racing their start-up.
inline bool bothRanksStepping(const QString& metricsPath) {
  QFile f(metricsPath);
  if (!f.open(QIODevice::ReadOnly)) return false;
  bool stepped[2] = {false, false};
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    const int rank = o.value(QStringLiteral("rank")).toInt(-1);
    if (o.value(QStringLiteral("type")).toString() == QLatin1String("step") && rank >= 0 &&
        rank < 2)
      stepped[rank] = true;
  }
  return stepped[0] && stepped[1];
}

}  // namespace ddpdesk::test
