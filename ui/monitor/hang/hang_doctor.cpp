#include "hang/hang_doctor.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QHostInfo>
#include <QStandardPaths>

#include "metrics/metrics_store.h"
#include "run/atomic_file.h"
#include "run/run_controller.h"

namespace ddpdesk {

HangDoctor::HangDoctor(RunController& run) : QObject(&run), run_(run), collector_(this) {
  connect(&collector_, &StackCollector::collected, this, &HangDoctor::onCollected);
}

std::vector<StackTarget> HangDoctor::targets() const {
  const QString here = QHostInfo::localHostName();
  std::vector<StackTarget> out;
  for (const RunController::RankState& r : run_.ranks()) {
    StackTarget t;
    t.rank = r.rank;
    const QString host = run_.store()->rankInfo(r.rank).host;
    // A local run's ranks are this machine's; a followed one's say where they run in their hello.
    const bool local = !run_.isAttached() || host.isEmpty() || host == here;
    if (!local) {
      t.problem = QStringLiteral("runs on %1, not on this machine").arg(host);
    } else if (r.pid <= 0 || !r.running) {
      t.problem = r.pid <= 0 ? QStringLiteral("no process") : QStringLiteral("not running");
    } else {
      t.pid = r.pid;
    }
    out.push_back(t);
  }
  return out;
}

bool HangDoctor::examine(const QString& why) {
  if (collector_.busy()) return false;
  why_ = why;
  return collector_.collect(targets(), run_.runDirectory());
}

QString HangDoctor::filePath(const QDateTime& when) const {
  QString dir = run_.runDirectory();
  if (run_.isAttached() || dir.isEmpty() || !QFileInfo(dir).isWritable())
    dir = QDir(QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation))
              .filePath(QStringLiteral("ddpdesk/stacks/") + run_.runName());
  const QString stem = QStringLiteral("stacks-") + when.toString(QStringLiteral("yyyyMMdd-HHmmss"));
  QString path = QDir(dir).filePath(stem + QStringLiteral(".txt"));
  for (int n = 2; QFileInfo::exists(path); ++n)
    path = QDir(dir).filePath(QStringLiteral("%1-%2.txt").arg(stem).arg(n));
  return path;
}

QString HangDoctor::fileText(const QString& runDir, const QString& why, const QString& verdict,
                             const QString& tool, const QString& note,
                             const std::vector<RankStacks>& stacks) {
  QString t;
  t += QStringLiteral("ddpdesk hang doctor, %1\n")
           .arg(QDateTime::currentDateTime().toString(Qt::ISODate));
  t += QStringLiteral("run: %1\n").arg(runDir);
  t += QStringLiteral("why: %1\n").arg(why.isEmpty() ? QStringLiteral("asked for") : why);
  t += QStringLiteral("verdict: %1\n").arg(verdict);
  // The tool as it is: eu-stack is the first choice, whether gdb is installed or not.
  t += QStringLiteral("native stacks: %1\n").arg(!note.isEmpty() ? note : tool);
  t += QLatin1Char('\n');
  for (const RankStacks& s : stacks) {
    const PhaseReading r = classifyRank(s);
    QString line = QStringLiteral("rank %1").arg(s.rank);
    if (s.pid > 0) line += QStringLiteral(" (pid %1)").arg(s.pid);
    if (!r.taken) {
      line += QStringLiteral(": no stack");
    } else {
      line += QStringLiteral(": ") + phaseName(r.phase);
      if (!r.collective.isEmpty()) line += QStringLiteral(" (%1)").arg(r.collective);
      if (!r.frame.isEmpty()) line += QStringLiteral(", from the frame: ") + r.frame;
    }
    if (s.stopped) line += QStringLiteral(" (stopped by a signal, state T: left stopped)");
    if (!s.problem.isEmpty()) line += QStringLiteral(" [%1]").arg(s.problem);
    t += line + QLatin1Char('\n');
  }
  for (const RankStacks& s : stacks) {
    const auto section = [&](const QString& what, const QString& text) {
      if (text.trimmed().isEmpty()) return;
      t += QStringLiteral("\n===== rank %1, pid %2: %3 =====\n").arg(s.rank).arg(s.pid).arg(what);
      t += text;
      if (!text.endsWith(QLatin1Char('\n'))) t += QLatin1Char('\n');
    };
    section(QStringLiteral("Python stacks (faulthandler)"), s.python);
    section(QStringLiteral("native stacks (%1)").arg(tool), s.native);
  }
  return t;
}

void HangDoctor::onCollected(const std::vector<RankStacks>& stacks, const QString& note) {
  QString verdict = hangVerdict(stacks);
  if (!note.isEmpty()) verdict += QStringLiteral(" (") + note + QLatin1Char(')');
  const QString path = filePath(QDateTime::currentDateTime());
  QDir().mkpath(QFileInfo(path).absolutePath());
  const QString text =
      fileText(run_.runDirectory(), why_, verdict, collector_.tool(), note, stacks);
  QString error;
  const bool written = writeFileAtomically(path, text.toUtf8(), &error);
  Q_EMIT examined(why_, verdict, written ? path : QString());
}

}  // namespace ddpdesk
