// EndCommands (end_command.h): the spec's on_end command started after a run ended, watched
// from the event loop, killed when it outlives its time, its troubles logged.
#include "run/end_command.h"

#include <unistd.h>
#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QProcess>
#include <QTimer>
#include <algorithm>
#include <csignal>

#include "run/monitor_settings.h"
#include "run/run_directory.h"

namespace ddpdesk {

int runExitCode(const QString& status, bool rejected, int stopSignal) {
  if (status == QLatin1String("Finished")) return 0;
  if (status == QLatin1String("Stopped")) return 128 + (stopSignal > 0 ? stopSignal : SIGINT);
  return rejected ? 2 : 1;
}

struct EndCommands::Command {
  QProcess process;
  QTimer timer;
  QElapsedTimer clock;
  RunEnding ending;
  qint64 pid = 0;
  bool timedOut = false;

  // The whole group: the shell and whatever it started (a `sleep`, curl, sendmail).
  void killGroup() {
    if (pid > 0) ::kill(-pid_t(pid), SIGKILL);
    process.kill();
  }
};

EndCommands::EndCommands(QObject* parent)
    : QObject(parent), timeout_ms_(monitorSettings().onEndTimeoutSeconds * 1000) {}

EndCommands::~EndCommands() {
  const QDeadlineTimer deadline(kExitWaitMs);
  for (auto& c : commands_) {
    // Blocking here is bounded and only at the very end (the window closing): there is no event
    // loop left to wait in.
    c->timer.stop();
    QObject::disconnect(&c->process, nullptr, this, nullptr);
    if (!c->process.waitForFinished(int(std::max<qint64>(0, deadline.remainingTime())))) {
      c->killGroup();
      c->process.waitForFinished(1000);
      RunDirectory::appendEvent(c->ending.runDir,
                                QStringLiteral("on_end command killed: ddpdesk exited"));
    } else {
      RunDirectory::appendEvent(
          c->ending.runDir,
          QStringLiteral("on_end command exited with code %1").arg(c->process.exitCode()));
    }
  }
}

void EndCommands::start(const QString& command, const RunEnding& ending) {
  auto owned = std::make_unique<Command>();
  Command* c = owned.get();
  c->ending = ending;
  const bool haveDir = !ending.runDir.isEmpty() && QFileInfo(ending.runDir).isDir();

  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("DDPDESK_RUN_DIR"), ending.runDir);
  env.insert(QStringLiteral("DDPDESK_RUN_NAME"), ending.runName);
  env.insert(QStringLiteral("DDPDESK_STATUS"), ending.status);
  env.insert(QStringLiteral("DDPDESK_EXIT_CODE"), QString::number(ending.exitCode));
  env.insert(QStringLiteral("DDPDESK_REASON"), ending.reason.section(QLatin1Char('\n'), 0, 0));
  c->process.setProcessEnvironment(env);
  c->process.setProgram(QStringLiteral("/bin/sh"));
  c->process.setArguments({QStringLiteral("-c"), command});
  c->process.setStandardInputFile(QProcess::nullDevice());
  if (haveDir) {
    c->process.setWorkingDirectory(ending.runDir);
    c->process.setStandardOutputFile(QDir(ending.runDir).filePath(QStringLiteral("on-end.log")),
                                     QIODevice::Append);
    c->process.setProcessChannelMode(QProcess::MergedChannels);
  } else {
    c->process.setStandardOutputFile(QProcess::nullDevice());
    c->process.setStandardErrorFile(QProcess::nullDevice());
  }
  // Between fork and exec (async-signal-safe calls only): a group of its own, so a terminal's
  // Ctrl+C for ddpdesk does not reach it and the timeout can kill all it started; the stop
  // signals as a shell expects them, whatever ddpdesk blocked or caught.
  c->process.setChildProcessModifier([] {
    sigset_t stops;
    ::sigemptyset(&stops);
    ::sigaddset(&stops, SIGINT);
    ::sigaddset(&stops, SIGTERM);
    ::sigprocmask(SIG_UNBLOCK, &stops, nullptr);
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::setpgid(0, 0);
  });

  connect(&c->process, &QProcess::finished, this, [this, c](int code, QProcess::ExitStatus status) {
    if (c->timedOut)
      finish(c, -1,
             QStringLiteral("on_end command killed after %1 s (its time limit)")
                 .arg(timeout_ms_ / 1000.0));
    else if (status != QProcess::NormalExit)
      finish(c, -1, QStringLiteral("on_end command died: %1").arg(c->process.errorString()));
    else if (code != 0)
      finish(c, code, QStringLiteral("on_end command exited with code %1").arg(code));
    else
      finish(c, 0, QString());
  });
  connect(&c->process, &QProcess::errorOccurred, this, [this, c](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart)
      finish(c, -1,
             QStringLiteral("on_end command could not start: %1").arg(c->process.errorString()));
  });
  c->timer.setSingleShot(true);
  connect(&c->timer, &QTimer::timeout, this, [c] {
    c->timedOut = true;
    c->killGroup();  // finished() follows and reports it
  });

  commands_.push_back(std::move(owned));
  RunDirectory::appendEvent(ending.runDir,
                            QStringLiteral("on_end command started: %1 (%2, exit code %3)")
                                .arg(command, ending.status)
                                .arg(ending.exitCode));
  c->clock.start();
  c->process.start();
  c->pid = c->process.processId();
  if (c->process.state() != QProcess::NotRunning) c->timer.start(timeout_ms_);
}

void EndCommands::finish(Command* c, int exitCode, const QString& why) {
  auto it =
      std::find_if(commands_.begin(), commands_.end(), [c](const auto& p) { return p.get() == c; });
  if (it == commands_.end()) return;  // reported already (an error, then finished())
  c->timer.stop();
  const QString runDir = c->ending.runDir;
  const double secs = c->clock.elapsed() / 1000.0;
  if (why.isEmpty()) {
    RunDirectory::appendEvent(
        runDir,
        QStringLiteral("on_end command exited with code 0 after %1 s").arg(secs, 0, 'f', 1));
  } else {
    RunDirectory::appendEvent(runDir, QStringLiteral("warning: ") + why);
    Q_EMIT warning(why);
  }
  // Not deleted from inside its own signal: the process object is still in its call.
  QObject::disconnect(&c->process, nullptr, this, nullptr);
  QObject::disconnect(&c->timer, nullptr, this, nullptr);
  done_.push_back(std::move(*it));
  commands_.erase(it);
  QTimer::singleShot(0, this, [this] { done_.clear(); });
  Q_EMIT ended(runDir, exitCode);
}

bool EndCommands::waitForAll(int ms) {
  if (commands_.empty()) return true;
  QEventLoop loop;
  QTimer limit;
  limit.setSingleShot(true);
  connect(&limit, &QTimer::timeout, &loop, &QEventLoop::quit);
  connect(this, &EndCommands::ended, &loop, [this, &loop] {
    if (commands_.empty()) loop.quit();
  });
  limit.start(ms);
  loop.exec();
  return commands_.empty();
}

}  // namespace ddpdesk
