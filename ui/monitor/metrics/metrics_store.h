// MetricsStore: every point of every series of a run, in chunked columns, never sampled.
// Writers (the metrics server, or a metrics.jsonl being loaded) call ingest(); readers are charts
// and tables that redraw on their own timer. Two ways to follow it:
//  - connect to updated(), which a coalescing timer emits at most ~20 times a second, or
//  - poll revision() from a redraw timer and, for each series whose revision is newer than the
//    one last drawn, append the points from the count last drawn (columns only ever grow until
//    clear(), which emits reset()).
// Columns are Chunked<double> (chunked_array.h): appending never moves or copies what is stored, so
// millions of points grow without the stalls of vectors doubling all at once, and a column's
// view() can be read on another thread (a chart rebuilding its curves) while the store grows.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "metrics/chunked_array.h"
#include "metrics/gauge_series.h"
#include "metrics/rank_average_throughput.h"
#include "metrics/step_breakdown.h"
#include "wire.h"

namespace ddpdesk {

// One rank's step messages in arrival order; all columns have size() entries.
struct StepSeries {
  Column step;           // x: optimizer step
  Column loss;           // this rank's mean loss over the window
  Column samples;        // global samples so far
  Column time;           // seconds since the rank started (worker clock)
  Column samplesPerSec;  // global samples/s reported with the step
  Column epoch;
  quint64 revision = 0;  // store revision in which the series last grew
  std::size_t size() const { return step.size(); }
};

// The run as a whole: one point per optimizer step (the first rank to report a step gives it).
struct GlobalSeries {
  Column step;
  Column loss;  // global loss: mean over every rank's samples of the window
  Column samples;
  Column time;
  Column samplesPerSec;
  Column epoch;
  quint64 revision = 0;
  std::size_t size() const { return step.size(); }
};

// Validation results, one point per (epoch, step) (duplicates from several ranks are merged).
struct EvalSeries {
  Column step;
  Column epoch;
  Column loss;
  Column accuracy;  // NaN for regression tasks
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
  double samplesPerSec = 0;  // global samples/s over the last log interval
  double time = 0;
  RankAverageThroughput training;  // the rank's own average training throughput over the run
  QString lastEvent;               // started, epoch, checkpoint, stopping, finished, stopped, ...
  QString error;                   // message of the last error the rank sent
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
  // Seconds spent evaluating: each evaluation from the reporting rank's last step to its result.
  double evalSeconds = 0;
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
    qint64 ignored = 0;        // lines of a message type this version does not know
    qint64 unknownFields = 0;  // fields it does not know, in the lines it read
    QString error;
  };
  // clear(), then ingests every valid line of a metrics.jsonl file; emits updated() once.
  LoadResult loadJsonl(const QString& path);
  // The same without blocking: the file is read and decoded on a worker thread while the store
  // keeps what it has; then, on this object's thread, its content is replaced (reset(), then
  // updated()) and loaded() is emitted, also when the file could not be read (the store is then
  // empty). Messages ingested meanwhile are applied after the file's. clear() or another load
  // supersedes a running one (whose result is dropped).
  void loadJsonlAsync(const QString& path);
  bool isLoading() const { return loading_ != nullptr; }

  // Emits updated() now if anything changed since the last emission (end of run, tests).
  void flush();
  // Minimum time between updated() signals (default 50 ms).
  void setNotifyInterval(int ms) { timer_.setInterval(ms); }

  // --- reading -------------------------------------------------------------------------------
  quint64 revision() const { return revision_; }
  int rankCount() const { return int(d_.ranks.size()); }
  const StepSeries& rankSeries(int rank) const;  // empty series for an unknown rank
  const RankInfo& rankInfo(int rank) const;
  const GlobalSeries& global() const { return d_.global; }
  const EvalSeries& evals() const { return d_.evals; }
  const std::vector<wire::Event>& events() const { return d_.events; }
  const std::vector<wire::Error>& errors() const { return d_.errors; }
  // Every rank's gauges (system metrics and any other), by name (gauge_series.h).
  const GaugeSet& gauges() const { return d_.gauges; }
  // Rank r's step breakdowns (step_breakdown.h); empty when its messages carry no time_ms.
  const BreakdownSeries& breakdown(int rank) const;
  // Ranks whose series grew after `revision` (ascending).
  std::vector<int> ranksChangedSince(quint64 revision) const;
  RunProgress progress() const;
  qint64 messageCount() const { return d_.messages; }

 Q_SIGNALS:
  // Something changed; at most one emission per notify interval. revision == revision().
  void updated(quint64 revision);
  // clear() ran: drop whatever was drawn.
  void reset();
  // loadJsonlAsync() finished.
  void loaded(const ddpdesk::MetricsStore::LoadResult& result);
  // A rank's loss arrived as NaN or an infinity (live messages only, not a loaded file): the
  // first time for that rank since the store was cleared. ddpdesk's worker stops its run there;
  // a Python script decides for itself, and the monitor says so (RunController's warning).
  void nonFiniteLoss(int rank, qint64 step);

 private:
  // Everything ingest() builds: what a load prepares on a worker thread and hands over whole.
  struct Data {
    int world = 0;
    qint64 messages = 0;
    std::vector<StepSeries> ranks;
    std::vector<BreakdownSeries> breakdowns;  // per rank, grown with ranks
    std::vector<RankInfo> infos;
    std::vector<int> sessions;  // per rank: hellos seen (each starts a session)
    int globalSession = 0;      // session that produced the last global point
    GlobalSeries global;
    EvalSeries evals;
    std::set<std::pair<int, std::int64_t>> evalKeys;  // (epoch, step) of every eval kept
    std::vector<wire::Event> events;
    std::vector<wire::Error> errors;
    GaugeSet gauges;
    qint64 totalSteps = 0;
    qint64 totalFrom = -1;  // the step the session whose total that is started from
    double evalSeconds = 0;
    QString lastCheckpoint;

    void setWorld(int w);
    StepSeries& series(int rank);
    RankInfo& info(int rank, quint64 revision);
    void apply(const wire::Message& m, quint64 revision);
  };
  // A load in progress: the messages ingested while it runs, applied after the file's.
  struct Load {
    std::vector<wire::Message> pending;
  };
  static LoadResult readJsonl(const QString& path, Data& into);
  void adopt(Data&& data);
  void touch();
  void watchLoss(const wire::Message& m);

  quint64 revision_ = 0;
  std::vector<bool> nonFiniteSeen_;  // per rank: nonFiniteLoss() emitted
  bool dirty_ = false;
  Data d_;
  std::shared_ptr<Load> loading_;  // the load in progress, if any
  QTimer timer_;
};

}  // namespace ddpdesk
