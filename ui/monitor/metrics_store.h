// MetricsStore: every point of every series of a run, in contiguous column vectors, never sampled.
// Writers (the metrics server, or a metrics.jsonl being loaded) call ingest(); readers are charts
// and tables that redraw on their own timer. Two ways to follow it:
//  - connect to updated(), which a coalescing timer emits at most ~20 times a second, or
//  - poll revision() from a redraw timer and, for each series whose revision is newer than the
//    one last drawn, append the points from the count last drawn (vectors only ever grow until
//    clear(), which emits reset()).
// Columns are std::vector<double> so a chart can take pointers or copy ranges without conversion.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "wire.h"

namespace ddpdesk {

// One rank's step messages in arrival order; all columns have size() entries.
struct StepSeries {
  std::vector<double> step;           // x: optimizer step
  std::vector<double> loss;           // this rank's mean loss over the window
  std::vector<double> samples;        // global samples so far
  std::vector<double> time;           // seconds since the rank started (worker clock)
  std::vector<double> samplesPerSec;  // global samples/s reported with the step
  std::vector<double> epoch;
  quint64 revision = 0;  // store revision in which the series last grew
  std::size_t size() const { return step.size(); }
};

// The run as a whole: one point per optimizer step (the first rank to report a step gives it).
struct GlobalSeries {
  std::vector<double> step;
  std::vector<double> loss;  // global loss: mean over every rank's samples of the window
  std::vector<double> samples;
  std::vector<double> time;
  std::vector<double> samplesPerSec;
  std::vector<double> epoch;
  quint64 revision = 0;
  std::size_t size() const { return step.size(); }
};

// Validation results, one point per (epoch, step) (duplicates from several ranks are merged).
struct EvalSeries {
  std::vector<double> step;
  std::vector<double> epoch;
  std::vector<double> loss;
  std::vector<double> accuracy;  // NaN for regression tasks
  quint64 revision = 0;
  std::size_t size() const { return step.size(); }
};

// Latest known state of one rank, for a rank table.
struct RankInfo {
  bool seen = false;  // any message from this rank
  qint64 pid = 0;
  QString host;
  QString device;
  int epoch = 0;
  qint64 step = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();
  double samplesPerSec = 0;
  double time = 0;
  QString lastEvent;  // started, epoch, checkpoint, stopping, finished, stopped, ...
  QString error;      // message of the last error the rank sent
  quint64 revision = 0;
};

// The numbers a progress line or status bar shows.
struct RunProgress {
  int world = 0;
  int epoch = 0;  // as the worker counts (0-based)
  qint64 step = 0;
  qint64 totalSteps = 0;  // 0 until a rank sent "started"
  qint64 samples = 0;
  double globalLoss = std::numeric_limits<double>::quiet_NaN();
  double samplesPerSec = 0;
  double elapsed = 0;      // seconds, worker clock
  double etaSeconds = -1;  // -1: unknown
  double evalLoss = std::numeric_limits<double>::quiet_NaN();
  double evalAccuracy = std::numeric_limits<double>::quiet_NaN();
  QString lastCheckpoint;
};

class MetricsStore : public QObject {
  Q_OBJECT
 public:
  explicit MetricsStore(QObject* parent = nullptr);

  // --- writing -------------------------------------------------------------------------------
  void ingest(const wire::Message& message);
  void ingest(const std::vector<wire::Message>& messages);
  // Forgets everything; emits reset() at once.
  void clear();
  // Expected number of ranks (the controller knows it before any rank speaks).
  void setWorld(int world);

  struct LoadResult {
    bool ok = false;
    qint64 messages = 0;
    qint64 malformed = 0;
    QString error;
  };
  // clear(), then ingests every valid line of a metrics.jsonl file; emits updated() once.
  LoadResult loadJsonl(const QString& path);

  // Emits updated() now if anything changed since the last emission (end of run, tests).
  void flush();
  // Minimum time between updated() signals (default 50 ms).
  void setNotifyInterval(int ms) { timer_.setInterval(ms); }

  // --- reading -------------------------------------------------------------------------------
  quint64 revision() const { return revision_; }
  int rankCount() const { return int(ranks_.size()); }
  const StepSeries& rankSeries(int rank) const;  // empty series for an unknown rank
  const RankInfo& rankInfo(int rank) const;
  const GlobalSeries& global() const { return global_; }
  const EvalSeries& evals() const { return evals_; }
  const std::vector<wire::Event>& events() const { return events_; }
  const std::vector<wire::Error>& errors() const { return errors_; }
  // Ranks whose series grew after `revision` (ascending).
  std::vector<int> ranksChangedSince(quint64 revision) const;
  RunProgress progress() const;
  qint64 messageCount() const { return messages_; }

 Q_SIGNALS:
  // Something changed; at most one emission per notify interval. revision == revision().
  void updated(quint64 revision);
  // clear() ran: drop whatever was drawn.
  void reset();

 private:
  void apply(const wire::Message& m);
  void touch();
  RankInfo& info(int rank);
  StepSeries& series(int rank);

  quint64 revision_ = 0;
  bool dirty_ = false;
  qint64 messages_ = 0;
  int world_ = 0;
  std::vector<StepSeries> ranks_;
  std::vector<RankInfo> infos_;
  std::vector<int> sessions_;  // per rank: hellos seen (each starts a session)
  int globalSession_ = 0;      // session that produced the last global point
  GlobalSeries global_;
  EvalSeries evals_;
  std::set<std::pair<int, std::int64_t>> evalKeys_;  // (epoch, step) of every eval kept
  std::vector<wire::Event> events_;
  std::vector<wire::Error> errors_;
  qint64 totalSteps_ = 0;
  QString lastCheckpoint_;
  QTimer timer_;
};

}  // namespace ddpdesk
