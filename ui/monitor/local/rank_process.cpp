#include "local/rank_process.h"

#include <sys/prctl.h>
#include <unistd.h>
#include <csignal>

namespace ddpdesk {
namespace {

// Long enough for any sane log line; longer output is split rather than lost.
constexpr std::size_t kMaxLogLine = 64 * 1024;

QString signalName(int sig) {
  switch (sig) {
    case SIGHUP:
      return QStringLiteral("SIGHUP");
    case SIGINT:
      return QStringLiteral("SIGINT");
    case SIGQUIT:
      return QStringLiteral("SIGQUIT");
    case SIGILL:
      return QStringLiteral("SIGILL");
    case SIGTRAP:
      return QStringLiteral("SIGTRAP");
    case SIGABRT:
      return QStringLiteral("SIGABRT");
    case SIGBUS:
      return QStringLiteral("SIGBUS");
    case SIGFPE:
      return QStringLiteral("SIGFPE");
    case SIGKILL:
      return QStringLiteral("SIGKILL");
    case SIGSEGV:
      return QStringLiteral("SIGSEGV");
    case SIGPIPE:
      return QStringLiteral("SIGPIPE");
    case SIGTERM:
      return QStringLiteral("SIGTERM");
    default:
      return QStringLiteral("signal %1").arg(sig);
  }
}

}  // namespace

RankProcess::RankProcess(int rank, QObject* parent)
    : QObject(parent),
      rank_(rank),
      proc_(new QProcess(this)),
      out_(kMaxLogLine, LineBuffer::Overflow::Split),
      err_(kMaxLogLine, LineBuffer::Overflow::Split) {
  connect(proc_, &QProcess::readyReadStandardOutput, this,
          [this] { readChannel(QProcess::StandardOutput); });
  connect(proc_, &QProcess::readyReadStandardError, this,
          [this] { readChannel(QProcess::StandardError); });
  connect(proc_, &QProcess::started, this, [this] {
    if (pid_ == 0) pid_ = proc_->processId();
    Q_EMIT started(rank_);
  });
  connect(proc_, &QProcess::finished, this, &RankProcess::onFinished);
  connect(proc_, &QProcess::errorOccurred, this, &RankProcess::onError);
}

RankProcess::~RankProcess() {
  killAndReap();
}

void RankProcess::start(const QString& program, const QStringList& args,
                        const QProcessEnvironment& env, const QString& logPath,
                        StopSignals stopSignals, const QString& workdir) {
  log_.setFileName(logPath);
  log_.open(QIODevice::WriteOnly | QIODevice::Append);
  proc_->setProgram(program);
  proc_->setArguments(args);
  proc_->setProcessEnvironment(env);
  proc_->setWorkingDirectory(workdir);
  const pid_t monitor = ::getpid();
  // Runs in the child between fork and exec (async-signal-safe calls only). If the monitor dies
  // in any way, the kernel sends the rank SIGTERM, which the worker treats as a graceful stop.
  // Its own process group keeps a terminal's Ctrl+C (sent to the whole foreground group) away
  // from the ranks: the monitor relays it as one SIGTERM, because the worker takes a second
  // signal as "exit now, no checkpoint". For the worker, SIGINT and SIGTERM are blocked from
  // birth (the mask survives exec): a stop that comes while the rank is still being loaded stays
  // pending until its stop-signal thread takes it (engine/runtime/stop_signals.h), instead of
  // killing it.
  const bool block = stopSignals == StopSignals::Blocked;
  proc_->setChildProcessModifier([monitor, block] {
    if (block) {
      sigset_t stops;
      ::sigemptyset(&stops);
      ::sigaddset(&stops, SIGINT);
      ::sigaddset(&stops, SIGTERM);
      ::sigprocmask(SIG_BLOCK, &stops, nullptr);
    }
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != monitor) ::raise(SIGTERM);  // it died before prctl took effect
  });
  proc_->start(QIODevice::ReadOnly);
  pid_ = proc_->processId();  // known as soon as the fork happened; 0 if it did not
}

void RankProcess::terminate() {
  if (isRunning()) proc_->terminate();
}

void RankProcess::kill() {
  if (!isRunning()) return;
  exit_.killedByUs = true;
  proc_->kill();
  killGroup();
}

void RankProcess::killAndReap() {
  if (proc_->state() == QProcess::NotRunning) return;
  exit_.killedByUs = true;
  proc_->kill();
  killGroup();
  proc_->waitForFinished(10000);
}

void RankProcess::killGroup() const {
  // The rank leads its own process group (see start()): its children are in it unless they
  // left (setsid). While any of them lives the group's id cannot be handed to a new process.
  if (pid_ > 0) ::kill(-pid_t(pid_), SIGKILL);
}

void RankProcess::readChannel(QProcess::ProcessChannel channel) {
  const bool isErr = channel == QProcess::StandardError;
  const QByteArray data = isErr ? proc_->readAllStandardError() : proc_->readAllStandardOutput();
  (isErr ? err_ : out_).feed(data.constData(), std::size_t(data.size()), [&](std::string_view l) {
    emitLine(isErr, l);
  });
  log_.flush();
}

void RankProcess::emitLine(bool isErr, std::string_view text) {
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  log_.write(text.data(), qint64(text.size()));
  log_.write("\n", 1);
  const QString s = QString::fromUtf8(text.data(), qsizetype(text.size()));
  if (isErr) {
    tail_.append(s);
    while (tail_.size() > tailLines()) tail_.removeFirst();
  }
  Q_EMIT line(rank_, isErr, s);
}

void RankProcess::onFinished(int code, QProcess::ExitStatus status) {
  readChannel(QProcess::StandardOutput);
  readChannel(QProcess::StandardError);
  // A last line without its newline still belongs to the log.
  if (!out_.pending().empty()) emitLine(false, out_.pending());
  if (!err_.pending().empty()) emitLine(true, err_.pending());
  out_.clear();
  err_.clear();
  log_.close();
  // What the rank started and left behind (a Python script's DataLoader workers, a tool it ran)
  // ends with it, however it ended.
  killGroup();
  exit_.exited = true;
  exit_.crashed = status == QProcess::CrashExit;
  // On Unix Qt reports the terminating signal as the exit code of a crashed process.
  if (exit_.crashed)
    exit_.signal = code;
  else
    exit_.exitCode = code;
  Q_EMIT finished(rank_);
}

void RankProcess::onError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || exit_.exited) return;
  exit_.exited = true;
  exit_.startFailed = true;
  exit_.startError = proc_->errorString();
  log_.write(QStringLiteral("ddpdesk: could not start %1: %2\n")
                 .arg(proc_->program(), exit_.startError)
                 .toUtf8());
  log_.close();
  Q_EMIT finished(rank_);
}

QString RankProcess::describeExit() const {
  if (!exit_.exited) return QStringLiteral("is running");
  if (exit_.startFailed) return QStringLiteral("could not be started: %1").arg(exit_.startError);
  if (exit_.crashed)
    return QStringLiteral("was killed by signal %1 (%2)")
        .arg(exit_.signal)
        .arg(signalName(exit_.signal));
  return QStringLiteral("exited with code %1").arg(exit_.exitCode);
}

}  // namespace ddpdesk
