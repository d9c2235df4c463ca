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
#include <QRegularExpression>
#include <QString>
#include <QStringList>
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

// This process's environment with `add` added and the variables in `unset` taken out.
inline QProcessEnvironment childEnvironment(const QProcessEnvironment& add = {},
                                            const QStringList& unset = {}) {
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  for (const QString& k : unset) e.remove(k);
  for (const QString& k : add.keys()) e.insert(k, add.value(k));
  return e;
}

// `<program> --headless <args>` (the ddpdesk binary) started with `worker` as its ranks' program,
// its data directory under `xdgData`, and `env` added to this process's environment. Its
// temporary files, the monitor's socket directory among them, go to `xdgData`/tmp: a monitor
// the test kills outright (SIGKILL) cannot remove that directory, and the test's own temporary
// directory takes it away with the rest.
inline std::unique_ptr<QProcess> startHeadless(const QString& program, const QString& worker,
                                               const QString& xdgData, const QStringList& args,
                                               const QProcessEnvironment& env = {}) {
  auto p = std::make_unique<QProcess>();
  QProcessEnvironment e = childEnvironment(env, {QStringLiteral("XDG_RUNTIME_DIR")});
  const QString tmp = xdgData + QStringLiteral("/tmp");
  QDir().mkpath(tmp);
  e.insert(QStringLiteral("TMPDIR"), tmp);
  e.insert(QStringLiteral("XDG_DATA_HOME"), xdgData);
  e.insert(QStringLiteral("DDPDESK_WORKER"), worker);
  p->setProcessEnvironment(e);
  p->start(program, QStringList{QStringLiteral("--headless")} + args);
  return p;
}

#ifdef DDPDESK_REAL_WORKER
// How long a test waits on runs of the real worker: LibTorch start-up and Gloo rendezvous on a
// loaded 2-core box.
constexpr int kRealWorkerTimeoutMs = 300000;

// `ddpdesk --headless <args>` with this build's ddpdesk-worker as its ranks' program.
inline std::unique_ptr<QProcess> startRealHeadless(const QString& xdgData, const QStringList& args,
                                                   const QProcessEnvironment& env = {}) {
  return startHeadless(QStringLiteral(DDPDESK_BIN), QStringLiteral(DDPDESK_REAL_WORKER), xdgData,
                       args, env);
}
#endif

struct ProcessResult {
  int code = -1;  // -1: crashed or timed out (the output still says why)
  QString out, err;
};

// Waits for a started process to end (killed after timeoutMs, so no test leaves one behind) and
// collects its exit code and output.
inline ProcessResult finishProcess(QProcess& p, int timeoutMs) {
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished();
  }
  ProcessResult r;
  if (p.exitStatus() == QProcess::NormalExit) r.code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// Runs `program` with `args` to its end, in this process's environment with `env` added and the
// variables in `unset` taken out.
inline ProcessResult runProgram(const QString& program, const QStringList& args,
                                const QProcessEnvironment& env = {}, int timeoutMs = 120000,
                                const QStringList& unset = {}) {
  QProcess p;
  p.setProcessEnvironment(childEnvironment(env, unset));
  p.start(program, args);
  return finishProcess(p, timeoutMs);
}

// Reads a running monitor's stderr (appending it to *err) until `pattern` matches it, for at most
// timeoutMs; the match (hasMatch() false when it never came).
inline QRegularExpressionMatch waitForStderr(QProcess& p, const QRegularExpression& pattern,
                                             QString* err, int timeoutMs) {
  QRegularExpressionMatch m;
  for (int i = 0; i < timeoutMs / 50; ++i) {
    p.waitForReadyRead(50);
    *err += QString::fromUtf8(p.readAllStandardError());
    m = pattern.match(*err);
    if (m.hasMatch()) break;
  }
  return m;
}

// The pids of a monitor's "pids 123 456" (the numbers, as captured from it).
inline QList<qint64> pidList(const QString& numbers) {
  QList<qint64> pids;
  for (const auto& s : numbers.split(QLatin1Char(' '), Qt::SkipEmptyParts)) pids << s.toLongLong();
  return pids;
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
