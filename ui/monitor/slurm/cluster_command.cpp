#include "slurm/cluster_command.h"

#include <QProcess>
#include <QTimer>
#include <memory>

#include "run/last_line.h"
#include "run/monitor_settings.h"

namespace ddpdesk {

QString ClusterCommand::Result::problem() const {
  const QString tool = argv.isEmpty() ? QStringLiteral("command") : argv.first();
  if (!started && !via.isEmpty())
    return sshClientMissing(monitorSettings().sshCommand.first(), QStringLiteral("not found"));
  if (!started)
    return QStringLiteral("%1 could not be run: not found on PATH or not executable").arg(tool);
  if (timedOut) return QStringLiteral("%1 did not answer in time").arg(tool);
  if (!via.isEmpty() && exitCode == 255) {  // ssh's own failure: no connection, no key
    const QString said = lastLine(err);
    return said.isEmpty() ? QStringLiteral("ssh %1 failed (exit 255)").arg(via) : said;
  }
  if (!via.isEmpty() && exitCode == 127) {  // the remote shell's "command not found"
    const QString said = lastLine(err);
    return said.contains(QLatin1String("not found"))
               ? said
               : QStringLiteral("%1 not found on the login node %2").arg(tool, via);
  }
  // The tool's own words, on one line: its last non-empty stderr line (sbatch: "error: ...").
  const QStringList lines =
      QString::fromLocal8Bit(err).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  for (auto it = lines.crbegin(); it != lines.crend(); ++it)
    if (!it->trimmed().isEmpty()) return it->trimmed();
  return QStringLiteral("%1 exited with code %2").arg(tool).arg(exitCode);
}

ClusterCommand::ClusterCommand(QObject* parent) : QObject(parent) {}

ClusterCommand::~ClusterCommand() {
  // The processes are children: kill and reap them before QObject deletes them.
  for (QProcess* p : findChildren<QProcess*>()) {
    p->disconnect();
    p->kill();
    p->waitForFinished(2000);
  }
}

void ClusterCommand::run(const QStringList& argv, Callback done, const QByteArray& input) {
  const QStringList words = remote_ ? remote_->command(argv) : prefix_ + argv;
  auto* proc = new QProcess(this);
  auto* timer = new QTimer(proc);
  timer->setSingleShot(true);
  auto result = std::make_shared<Result>();
  result->argv = argv;
  if (remote_) result->via = remote_->destination();
  ++running_;
  // Called exactly once per command, whichever way it ends.
  auto finish = [this, proc, result, done] {
    proc->disconnect();
    --running_;
    proc->deleteLater();
    done(*result);
  };
  connect(proc, &QProcess::finished, this,
          [proc, result, finish](int code, QProcess::ExitStatus st) {
            result->started = true;
            result->exitCode = st == QProcess::NormalExit ? code : -1;
            result->out = proc->readAllStandardOutput();
            result->err = proc->readAllStandardError();
            finish();
          });
  connect(proc, &QProcess::errorOccurred, this, [result, finish](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;  // the others end in finished()
    result->started = false;
    finish();
  });
  connect(timer, &QTimer::timeout, this, [proc, result] {
    result->timedOut = true;
    proc->kill();  // finished() follows
  });
  if (remote_) keepFromTerminalSignals(*proc);
  proc->setProgram(words.first());
  proc->setArguments(words.mid(1));
  timer->start(timeout_ms_);
  if (input.isEmpty()) proc->setStandardInputFile(QProcess::nullDevice());
  proc->start();
  if (!input.isEmpty()) {
    proc->write(input);
    proc->closeWriteChannel();
  }
}

}  // namespace ddpdesk
