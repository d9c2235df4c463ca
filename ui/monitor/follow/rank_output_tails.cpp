#include "follow/rank_output_tails.h"

#include <QDir>
#include <QRegularExpression>

#include "follow/metrics_tail.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {
// Output can be bulky (a traceback, a progress bar): read in steps, never stalling the window.
constexpr qint64 kMaxBytesPerPoll = 1 << 20;
constexpr int kMaxRoundsPerPoll = 8;
}  // namespace

RankOutputTails::RankOutputTails(QString runDir) : dir_(std::move(runDir)) {}

RankOutputTails::~RankOutputTails() = default;

QString RankOutputTails::outputFile(const QString& runDir, int rank) {
  return RunDirectory::logPath(runDir, rank);
}

void RankOutputTails::poll(const std::function<void(int, const QString&)>& on_line) {
  static const QRegularExpression name(QStringLiteral("^rank-(\\d{1,7})\\.log$"));
  for (const QString& f : QDir(dir_).entryList({QStringLiteral("rank-*.log")}, QDir::Files)) {
    const auto m = name.match(f);
    if (!m.hasMatch()) continue;
    const int rank = m.captured(1).toInt();
    if (!tails_.count(rank))
      tails_[rank] = std::make_unique<MetricsTail>(outputFile(dir_, rank), kMaxBytesPerPoll);
  }
  for (auto& entry : tails_) {
    const int rank = entry.first;  // (a lambda cannot capture a structured binding in C++17)
    auto& tail = entry.second;
    QStringList& last = last_[rank];
    for (int round = 0; round < kMaxRoundsPerPoll; ++round) {
      qsizetype added = 0;
      const MetricsTail::Poll p = tail->poll([&](std::string_view bytes) {
        QString line = QString::fromUtf8(bytes.data(), qsizetype(bytes.size()));
        if (line.endsWith(QLatin1Char('\r'))) line.chop(1);
        last << line;
        if (last.size() > kKeptLines) last.removeFirst();
        ++added;
        on_line(rank, line);
      });
      // A file read again from its start: what was kept before belongs to the old one.
      if (p.restarted) last = last.mid(std::max<qsizetype>(0, last.size() - added));
      if (!p.more) break;
    }
  }
}

QStringList RankOutputTails::lastLines(int rank) const {
  const auto it = last_.find(rank);
  return it == last_.end() ? QStringList() : it->second;
}

}  // namespace ddpdesk
