// RankOutputTails: the ranks' output files of a run directory, `rank-N.log` (ddpdesk's local
// runs write their ranks' stdout and stderr there; its Slurm jobs have srun write them with
// --output=rank-%t.log; a run started by hand may redirect into them), polled the way the
// metrics files are (MetricsTail: every complete line once, files appearing late, a file read
// again from its start when replaced or truncated), so a followed run's output reaches the Log
// tab as a local run's does. The last lines of each rank are kept for a failure message.
// Qt Core only; no timer of its own (RunFollower polls it with the metrics files).
#pragma once

#include <QString>
#include <QStringList>
#include <functional>
#include <map>
#include <memory>

namespace ddpdesk {

class MetricsTail;

class RankOutputTails {
 public:
  static constexpr int kKeptLines = 10;

  explicit RankOutputTails(QString runDir);
  ~RankOutputTails();

  static QString outputFile(const QString& runDir, int rank);  // <runDir>/rank-N.log

  // Reads what was appended to every rank-N.log since the last poll: on_line(rank, line), in
  // order, without the '\n'.
  void poll(const std::function<void(int rank, const QString& line)>& on_line);
  // The rank's last kKeptLines lines (of its current file: a restarted file starts afresh).
  QStringList lastLines(int rank) const;

 private:
  QString dir_;
  std::map<int, std::unique_ptr<MetricsTail>> tails_;
  std::map<int, QStringList> last_;
};

}  // namespace ddpdesk
