#include "hang/stack_collector.h"

#include <sys/syscall.h>
#include <unistd.h>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTimer>
#include <algorithm>
#include <csignal>

namespace ddpdesk {
namespace {

constexpr int kPythonPollMs = 50;
constexpr int kTerminateGraceMs = 2000;

bool alive(qint64 pid) {
  return pid > 0 && ::kill(pid_t(pid), 0) == 0;
}

// The state letter of /proc/PID/stat ('R', 'S', 'T' stopped by a signal, 't' stopped by a
// tracer, ...); 0 when it cannot be read.
char processState(qint64 pid) {
  QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return 0;
  const QByteArray text = stat.readAll();
  const int close = text.lastIndexOf(')');
  if (close < 0 || close + 2 >= text.size()) return 0;
  return text.at(close + 2);
}

// Leaves a process as it was before its stacks were taken: one stopped by a signal (SIGSTOP,
// SIGTSTP) stopped again, whatever the tracer's detach did; any other one running, should a
// tracer that did not detach have left it in a stop.
void restoreState(qint64 pid, bool wasStopped) {
  if (pid <= 0) return;
  if (wasStopped) {
    ::kill(pid_t(pid), SIGSTOP);
    return;
  }
  const char state = processState(pid);
  if (state == 'T' || state == 't') ::kill(pid_t(pid), SIGCONT);
}

QString firstLine(const QString& text) {
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    const QString t = line.trimmed();
    if (!t.isEmpty()) return t;
  }
  return QString();
}

}  // namespace

StackCollector::StackCollector(QObject* parent) : QObject(parent) {}

StackCollector::~StackCollector() {
  for (Job& job : jobs_) {
    if (!job.process) continue;
    job.process->disconnect(this);
    job.process->terminate();  // gdb detaches on SIGTERM
    if (!job.process->waitForFinished(kTerminateGraceMs)) {
      job.process->kill();
      job.process->waitForFinished(1000);
    }
    restoreState(job.target.pid, job.out.stopped);
  }
}

QString StackCollector::nativeTool() {
  // eu-stack first: the same frames in tens of milliseconds, where gdb stops a LibTorch rank for
  // seconds while it loads every library's symbols (5.5 s and 300 MB a rank here).
  for (const char* tool : {"eu-stack", "gdb"})
    if (!QStandardPaths::findExecutable(QString::fromLatin1(tool)).isEmpty())
      return QString::fromLatin1(tool);
  return QString();
}

QString StackCollector::missingToolNote() {
  return QStringLiteral(
      "no native stacks: neither eu-stack nor gdb is installed (Debian: apt install elfutils "
      "for eu-stack, or gdb)");
}

QString StackCollector::pythonStackFile(const QString& runDir, int rank) {
  return QDir(runDir).filePath(QStringLiteral("python-stacks/rank-%1.txt").arg(rank));
}

bool StackCollector::collect(const std::vector<StackTarget>& targets, const QString& runDir) {
  if (busy_) return false;
  busy_ = true;
  run_dir_ = runDir;
  tool_ = nativeTool();
  jobs_.clear();
  next_ = 0;
  running_ = 0;
  done_ = 0;
  for (const StackTarget& t : targets) {
    Job job;
    job.target = t;
    job.out.rank = t.rank;
    job.out.pid = t.pid;
    jobs_.push_back(job);
  }
  std::sort(jobs_.begin(), jobs_.end(),
            [](const Job& a, const Job& b) { return a.target.rank < b.target.rank; });
  if (jobs_.empty()) {
    // Said from the event loop, as every other outcome is.
    QTimer::singleShot(0, this, [this] {
      busy_ = false;
      Q_EMIT collected({}, tool_.isEmpty() ? missingToolNote() : QString());
    });
    return true;
  }
  startNext();
  return true;
}

void StackCollector::startNext() {
  while (running_ < kParallel && next_ < jobs_.size()) {
    Job& job = jobs_[next_++];
    ++running_;
    if (job.target.pid <= 0 || !alive(job.target.pid)) {
      job.out.problem = job.target.pid <= 0
                            ? job.target.problem
                            : QStringLiteral("process %1 is gone").arg(job.target.pid);
      QTimer::singleShot(0, this, [this, j = &job] { jobDone(j); });
      continue;
    }
    // Stopped by a signal before anything was done to it: said in the verdict, and left so. Its
    // Python handler cannot run while it is stopped (the signal would wait for a SIGCONT).
    job.out.stopped = processState(job.target.pid) == 'T';
    if (job.out.stopped) {
      startNative(job);
      continue;
    }
    startPython(job);
  }
}

void StackCollector::startPython(Job& job) {
  QFile file(pythonStackFile(run_dir_, job.target.rank));
  static const QRegularExpression header(
      QStringLiteral(R"(^ddpdesk faulthandler pid=(\d+) signal=(\d+)\s*$)"));
  if (file.open(QIODevice::ReadOnly)) {
    const auto m = header.match(QString::fromUtf8(file.readLine()));
    // Only a file the rank itself wrote (a restart's rank, or another run's, has another pid):
    // the signal's default action would end a process that did not register it.
    if (m.hasMatch() && m.captured(1).toLongLong() == job.target.pid) {
      const int signo = m.captured(2).toInt();
      job.pyOffset = file.size();
      job.pySize = job.pyOffset;
      if (signo > 0 && signo < 65 &&
          ::syscall(SYS_tgkill, pid_t(job.target.pid), pid_t(job.target.pid), signo) == 0) {
        job.pyClock.start();
        QTimer::singleShot(kPythonPollMs, this, [this, j = &job] { pollPython(j); });
        return;
      }
      job.pyOffset = -1;
      job.out.problem =
          QStringLiteral("could not signal pid %1 for its Python stack").arg(job.target.pid);
    }
  }
  startNative(job);
}

void StackCollector::pollPython(Job* job) {
  QFile file(pythonStackFile(run_dir_, job->target.rank));
  const qint64 size = QFileInfo(file.fileName()).size();
  // Complete once it grew and then stayed the same for a poll (faulthandler writes the whole
  // dump from its handler at once).
  const bool settled = size > job->pyOffset && size == job->pySize;
  job->pySize = size;
  if (!settled && job->pyClock.elapsed() < kPythonWaitMs) {
    QTimer::singleShot(kPythonPollMs, this, [this, job] { pollPython(job); });
    return;
  }
  if (size > job->pyOffset && file.open(QIODevice::ReadOnly) && file.seek(job->pyOffset))
    job->out.python = QString::fromUtf8(file.readAll());
  else
    job->out.problem =
        QStringLiteral("no Python stack within %1 s of the signal").arg(kPythonWaitMs / 1000.0);
  startNative(*job);
}

void StackCollector::startNative(Job& job) {
  if (tool_.isEmpty()) {
    nativeDone(&job, QString());
    return;
  }
  auto* p = new QProcess(this);
  job.process = p;
  const QString pid = QString::number(job.target.pid);
  QStringList args;
  if (tool_ == QLatin1String("gdb"))
    args << QStringLiteral("-p") << pid << QStringLiteral("-batch") << QStringLiteral("-nx")
         << QStringLiteral("-iex") << QStringLiteral("set debuginfod enabled off")
         << QStringLiteral("-ex") << QStringLiteral("thread apply all bt");
  else
    args << QStringLiteral("-p") << pid;
  p->setStandardInputFile(QProcess::nullDevice());
  connect(p, &QProcess::finished, this, [this, j = &job](int code, QProcess::ExitStatus st) {
    QString problem;
    if (st != QProcess::NormalExit)
      problem = QStringLiteral("%1 took longer than %2 s and was ended")
                    .arg(tool_)
                    .arg(timeout_ms_ / 1000.0);
    else if (code != 0 && j->process->bytesAvailable() == 0)
      problem = QStringLiteral("%1 exited with code %2").arg(tool_).arg(code);
    nativeDone(j, problem);
  });
  connect(p, &QProcess::errorOccurred, this, [this, j = &job](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) nativeDone(j, QStringLiteral("%1 did not start").arg(tool_));
  });
  QTimer::singleShot(timeout_ms_, p, [p] {
    p->terminate();  // gdb detaches from the process it attached to
    QTimer::singleShot(kTerminateGraceMs, p, [p] { p->kill(); });
  });
  p->start(tool_, args);
}

void StackCollector::nativeDone(Job* job, const QString& problem) {
  QString why = problem;
  if (QProcess* p = job->process) {
    job->process = nullptr;
    p->disconnect(this);
    job->out.native = QString::fromLocal8Bit(p->readAllStandardOutput());
    const QString err = QString::fromLocal8Bit(p->readAllStandardError());
    // gdb says a refused attach on stderr ("ptrace: Operation not permitted."), with no frame.
    if (!job->out.native.contains(QRegularExpression(QStringLiteral(R"((^|\n)#\d+\s)")))) {
      if (why.isEmpty()) why = QStringLiteral("%1 printed no stack").arg(tool_);
      if (const QString e = firstLine(err); !e.isEmpty()) why += QStringLiteral(": ") + e;
    }
    p->deleteLater();
  }
  if (!why.isEmpty())
    job->out.problem =
        job->out.problem.isEmpty() ? why : job->out.problem + QStringLiteral("; ") + why;
  jobDone(job);
}

void StackCollector::jobDone(Job* job) {
  if (job->target.pid > 0) restoreState(job->target.pid, job->out.stopped);
  --running_;
  ++done_;
  if (done_ < int(jobs_.size())) {
    startNext();
    return;
  }
  std::vector<RankStacks> out;
  for (const Job& j : jobs_) out.push_back(j.out);
  busy_ = false;
  Q_EMIT collected(out, tool_.isEmpty() ? missingToolNote() : QString());
}

}  // namespace ddpdesk
