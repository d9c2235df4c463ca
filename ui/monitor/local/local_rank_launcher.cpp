#include "local/local_rank_launcher.h"

#include <QHostAddress>
#include <QRandomGenerator>
#include <QTcpServer>

#include "local/rank_command.h"
#include "local/rank_process.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

quint16 freePort() {
  // Bound and released at once: the port is free now, and rank 0 binds it moments later. The
  // same race every launcher (torchrun included) accepts.
  QTcpServer probe;
  if (!probe.listen(QHostAddress::LocalHost, 0)) return 0;
  return probe.serverPort();
}

QString randomToken() {
  quint32 words[4];
  QRandomGenerator::system()->fillRange(words);
  return QString::fromLatin1(
      QByteArray(reinterpret_cast<const char*>(words), sizeof words).toHex());
}

}  // namespace

LocalRankLauncher::LocalRankLauncher(QObject* parent) : QObject(parent) {}

LocalRankLauncher::~LocalRankLauncher() {
  killAndReapAll();
}

bool LocalRankLauncher::prepare(QString* error) {
  if (!choosePort(error)) return false;
  token_ = randomToken();
  return true;
}

bool LocalRankLauncher::choosePort(QString* error) {
  port_ = freePort();
  if (port_ == 0) {
    if (error) *error = QStringLiteral("no free TCP port on 127.0.0.1 for MASTER_PORT");
    return false;
  }
  return true;
}

QStringList LocalRankLauncher::workerArguments(const QString& runDir, const QString& resume) {
  QStringList args = {QStringLiteral("--config"), RunDirectory::specPath(runDir),
                      QStringLiteral("--run-dir"), runDir};
  if (!resume.isEmpty()) args << QStringLiteral("--resume") << resume;
  return args;
}

QProcessEnvironment LocalRankLauncher::rankEnvironment(int rank, int world,
                                                       const QString& socketPath) const {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  // Inherited from a torchrun that launched the monitor, these would make every rank a store
  // client of an agent that does not exist.
  for (const QString& key : env.keys())
    if (key.startsWith(QLatin1String("TORCHELASTIC_"))) env.remove(key);
  env.insert(extra_env_);
  env.insert(QStringLiteral("RANK"), QString::number(rank));
  env.insert(QStringLiteral("WORLD_SIZE"), QString::number(world));
  env.insert(QStringLiteral("LOCAL_RANK"), QString::number(rank));
  env.insert(QStringLiteral("LOCAL_WORLD_SIZE"), QString::number(world));
  env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
  env.insert(QStringLiteral("MASTER_PORT"), QString::number(port_));
  env.insert(QStringLiteral("DDPDESK_MONITOR"), socketPath);
  env.insert(QStringLiteral("DDPDESK_TOKEN"), token_);
  // N ranks each spawning a thread per core would oversubscribe the machine N times.
  if (!env.contains(QStringLiteral("OMP_NUM_THREADS")))
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
  return env;
}

void LocalRankLauncher::clear() {
  for (RankProcess* p : ranks_) {
    p->disconnect(this);
    p->deleteLater();
  }
  ranks_.clear();
}

void LocalRankLauncher::create(int world) {
  clear();
  for (int r = 0; r < world; ++r) {
    auto* p = new RankProcess(r, this);
    ranks_.push_back(p);
    connect(p, &RankProcess::line, this, &LocalRankLauncher::line);
    connect(p, &RankProcess::started, this,
            [this, p](int rank) { Q_EMIT rankStarted(rank, p->pid()); });
    connect(p, &RankProcess::finished, this, &LocalRankLauncher::rankFinished);
  }
}

void LocalRankLauncher::startRank(int rank, const QString& program, const QStringList& args,
                                  const QString& socketPath, const QString& logPath,
                                  RankProcess::StopSignals stopSignals) {
  ranks_[rank]->start(program, args, rankEnvironment(rank, size(), socketPath), logPath,
                      stopSignals);
}

void LocalRankLauncher::startRank(int rank, const RankCommand& command, const QString& socketPath,
                                  const QString& logPath) {
  QProcessEnvironment env = rankEnvironment(rank, size(), socketPath);
  env.insert(command.environment);
  ranks_[rank]->start(command.program, command.arguments, env, logPath, command.stopSignals,
                      command.workdir);
}

bool LocalRankLauncher::allExited() const {
  for (const RankProcess* p : ranks_)
    if (!p->exitInfo().exited) return false;
  return true;
}

void LocalRankLauncher::terminateAll() {
  for (RankProcess* p : ranks_) p->terminate();
}

void LocalRankLauncher::killAll() {
  for (RankProcess* p : ranks_) p->kill();
}

void LocalRankLauncher::killAndReapAll() {
  // Kill every rank first, then reap them: no waiting on one while the others still run.
  for (RankProcess* p : ranks_) {
    p->disconnect(this);
    p->kill();
  }
  for (RankProcess* p : ranks_) p->killAndReap();
}

}  // namespace ddpdesk
