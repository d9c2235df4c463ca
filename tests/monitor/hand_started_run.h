// Test helper: real ddpdesk-worker ranks started the way a person starts them by hand with
// torchrun's environment contract (RANK, WORLD_SIZE, MASTER_ADDR/PORT ...), with `--run-dir` and
// no monitor socket, so the only trace of them is what they write into the run directory.
// Every rank is killed and reaped when the object goes.
#pragma once

#include <QHostAddress>
#include <QProcess>
#include <QTcpServer>
#include <memory>
#include <vector>

namespace ddpdesk::test {

class HandStartedRun {
 public:
  HandStartedRun(const QString& worker, const QString& runDir, int world, QStringList args,
                 const QProcessEnvironment& extra = {}) {
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    const QString port = QString::number(probe.serverPort());
    probe.close();
    for (int r = 0; r < world; ++r) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.remove(QStringLiteral("DDPDESK_MONITOR"));
      env.remove(QStringLiteral("DDPDESK_TOKEN"));
      env.insert(QStringLiteral("RANK"), QString::number(r));
      env.insert(QStringLiteral("LOCAL_RANK"), QString::number(r));
      env.insert(QStringLiteral("WORLD_SIZE"), QString::number(world));
      env.insert(QStringLiteral("LOCAL_WORLD_SIZE"), QString::number(world));
      env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
      env.insert(QStringLiteral("MASTER_PORT"), port);
      env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
      env.insert(extra);
      auto p = std::make_unique<QProcess>();
      p->setProcessEnvironment(env);
      p->setProcessChannelMode(QProcess::MergedChannels);
      p->start(worker, QStringList{QStringLiteral("--run-dir"), runDir} + args);
      p->waitForStarted();
      pids_ << p->processId();  // QProcess forgets it once the process has finished
      ranks.push_back(std::move(p));
    }
  }
  ~HandStartedRun() {
    for (auto& p : ranks) {
      if (p->state() != QProcess::NotRunning) p->kill();
      p->waitForFinished(10000);
    }
  }
  QList<qint64> pids() const { return pids_; }
  // Every rank exited (the event loop runs meanwhile); their output when one did not exit 0.
  bool waitAllExited(int ms, QString* output = nullptr) {
    bool ok = true;
    for (auto& p : ranks) {
      if (p->state() != QProcess::NotRunning && !p->waitForFinished(ms)) return false;
      if (p->exitStatus() != QProcess::NormalExit || p->exitCode() != 0) ok = false;
      if (output) *output += QString::fromLocal8Bit(p->readAll());
    }
    return ok;
  }

  std::vector<std::unique_ptr<QProcess>> ranks;

 private:
  QList<qint64> pids_;
};

}  // namespace ddpdesk::test
