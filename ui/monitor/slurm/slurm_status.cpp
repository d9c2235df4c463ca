#include "slurm/slurm_status.h"

#include <QMap>
#include <QRegularExpression>
#include <QStringList>

namespace ddpdesk {
namespace {

std::optional<SlurmJobStatus> fromWord(const QString& word) {
  const auto state = mapSlurmState(word);
  if (!state) return std::nullopt;
  SlurmJobStatus s;
  s.state = *state;
  s.slurmState = word.section(QLatin1Char(' '), 0, 0).remove(QLatin1Char('+')).toUpper();
  return s;
}

// The '|'-separated fields of the first line (the format ddpdesk asks squeue and sacct for).
QStringList firstLineFields(const QString& text) {
  return text.trimmed().section(QLatin1Char('\n'), 0, 0).trimmed().split(QLatin1Char('|'));
}

}  // namespace

std::optional<SlurmJobStatus::State> mapSlurmState(const QString& given) {
  using S = SlurmJobStatus::State;
  // sacct: "CANCELLED by 1000", "RUNNING+" (truncated): the first word, without the '+'.
  const QString w =
      given.trimmed().section(QLatin1Char(' '), 0, 0).remove(QLatin1Char('+')).toUpper();
  if (w.isEmpty()) return std::nullopt;
  static const QStringList pending = {
      QStringLiteral("PENDING"),     QStringLiteral("CONFIGURING"),
      QStringLiteral("REQUEUED"),    QStringLiteral("REQUEUE_HOLD"),
      QStringLiteral("REQUEUE_FED"), QStringLiteral("RESV_DEL_HOLD"),
      QStringLiteral("SPECIAL_EXIT")};
  static const QStringList running = {QStringLiteral("RUNNING"),   QStringLiteral("COMPLETING"),
                                      QStringLiteral("SUSPENDED"), QStringLiteral("STOPPED"),
                                      QStringLiteral("SIGNALING"), QStringLiteral("STAGE_OUT"),
                                      QStringLiteral("RESIZING")};
  if (pending.contains(w)) return S::Pending;
  if (running.contains(w)) return S::Running;
  if (w == QLatin1String("COMPLETED")) return S::Completed;
  if (w == QLatin1String("CANCELLED")) return S::Cancelled;
  if (w == QLatin1String("TIMEOUT")) return S::TimedOut;
  return S::Failed;  // FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED, ...
}

QString slurmStateName(SlurmJobStatus::State s) {
  using S = SlurmJobStatus::State;
  switch (s) {
    case S::Pending:
      return QStringLiteral("pending");
    case S::Running:
      return QStringLiteral("running");
    case S::Completed:
      return QStringLiteral("completed");
    case S::Failed:
      return QStringLiteral("failed");
    case S::Cancelled:
      return QStringLiteral("cancelled");
    case S::TimedOut:
      return QStringLiteral("timed out");
  }
  return {};
}

QString describeSlurmStatus(const SlurmJobStatus& s) {
  using S = SlurmJobStatus::State;
  QString text = slurmStateName(s.state);
  const bool plain = s.slurmState.isEmpty() ||
                     s.slurmState.compare(slurmStateName(s.state).remove(QLatin1Char(' ')),
                                          Qt::CaseInsensitive) == 0 ||
                     (s.state == S::TimedOut && s.slurmState == QLatin1String("TIMEOUT"));
  if (s.state == S::Pending) {
    if (!s.reason.isEmpty() && s.reason != QLatin1String("None"))
      text += QStringLiteral(" (%1)").arg(s.reason);
  } else if (s.state == S::Running) {
    if (s.slurmState != QLatin1String("RUNNING") && !s.slurmState.isEmpty())
      text += QStringLiteral(" (%1)").arg(s.slurmState.toLower());
    if (!s.nodes.isEmpty() && s.nodes != QLatin1String("(null)"))
      text += QStringLiteral(" on ") + s.nodes;
  } else {
    QStringList what;
    if (!plain) what << s.slurmState;
    if (!s.exitCode.isEmpty() && s.exitCode != QLatin1String("0:0"))
      what << QStringLiteral("exit ") + s.exitCode;
    if (!what.isEmpty()) text += QStringLiteral(" (%1)").arg(what.join(QStringLiteral(", ")));
  }
  return text;
}

bool endedByStopSignal(const SlurmJobStatus& s) {
  static const QStringList stopCodes = {QStringLiteral("130:0"), QStringLiteral("143:0"),
                                        QStringLiteral("0:2"), QStringLiteral("0:15")};
  return s.state == SlurmJobStatus::State::Failed && stopCodes.contains(s.exitCode);
}

std::optional<SlurmJobStatus> parseSqueue(const QString& text) {
  const QStringList f = firstLineFields(text);  // STATE|REASON|NODELIST|RESTARTCNT
  auto s = fromWord(f.value(0));
  if (!s) return std::nullopt;
  s->reason = f.value(1).trimmed();
  s->nodes = f.value(2).trimmed();
  bool counted = false;
  const int restarts = f.value(3).trimmed().toInt(&counted);
  if (counted) s->restarts = restarts;
  return s;
}

std::optional<SlurmJobStatus> parseScontrolJob(const QString& text) {
  // Key=Value words over several lines; values have no blanks in the keys ddpdesk reads.
  QMap<QString, QString> kv;
  static const QRegularExpression word(QStringLiteral("(\\w+)=(\\S*)"));
  for (auto it = word.globalMatch(text); it.hasNext();) {
    const auto m = it.next();
    if (!kv.contains(m.captured(1))) kv.insert(m.captured(1), m.captured(2));
  }
  auto s = fromWord(kv.value(QStringLiteral("JobState")));
  if (!s) return std::nullopt;
  // scontrol writes the reason's blanks as '_' ("launch_failed_requeued_held"); squeue as they are.
  s->reason = kv.value(QStringLiteral("Reason")).replace(QLatin1Char('_'), QLatin1Char(' '));
  s->nodes = kv.value(QStringLiteral("NodeList"));
  s->exitCode = kv.value(QStringLiteral("ExitCode"));
  bool counted = false;
  const int restarts = kv.value(QStringLiteral("Restarts")).toInt(&counted);
  if (counted) s->restarts = restarts;
  return s;
}

std::optional<SlurmJobStatus> parseSacct(const QString& text) {
  // STATE|EXITCODE|NODELIST of the job's allocation (-X: that line only).
  const QStringList f = firstLineFields(text);
  auto s = fromWord(f.value(0));
  if (!s) return std::nullopt;
  s->exitCode = f.value(1).trimmed();
  s->nodes = f.value(2).trimmed();
  return s;
}

std::vector<SrunTaskError> srunTaskErrors(const QString& text) {
  // Ranges ("tasks 0-1: Killed") name no single culprit; skipped.
  static const QRegularExpression line(QStringLiteral("^srun: error: (\\S+): task (\\d+): (.+)$"),
                                       QRegularExpression::MultilineOption);
  std::vector<SrunTaskError> out;
  for (auto it = line.globalMatch(text); it.hasNext();) {
    const auto m = it.next();
    out.push_back(SrunTaskError{m.captured(1), m.captured(2).toInt(), m.captured(3).trimmed()});
  }
  return out;
}

std::optional<SrunTaskError> firstSrunTaskError(const QString& text) {
  const std::vector<SrunTaskError> all = srunTaskErrors(text);
  return all.empty() ? std::nullopt : std::optional<SrunTaskError>(all.front());
}

std::optional<SrunTaskError> causeSrunTaskError(const QString& text, bool workerRanks) {
  const std::vector<SrunTaskError> all = srunTaskErrors(text);
  if (all.empty()) return std::nullopt;
  if (workerRanks)
    for (const SrunTaskError& e : all)
      if (e.what == QLatin1String("Exited with exit code 3")) return e;
  return all.front();
}

}  // namespace ddpdesk
