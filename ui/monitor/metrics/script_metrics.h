// ScriptMetrics: what the monitor measures itself for a Python-script run, whose ranks have no
// ddpdesk-worker telemetry. Everything becomes the rank's wire messages, the path a worker's
// take (charts, store, metrics.jsonl, history, comparison):
//  - system metrics of every running rank, by pid (SystemSampler, engine/system): CPU, resident
//    memory, threads; on --device cuda the GPU the rank uses by torchrun's convention (its
//    LOCAL_RANK), through NVML. Once a second. Where the run's monitor says so
//    (recordSystemMetrics), they are appended to metrics/system.jsonl too, in the wire format:
//    a run followed from its directory (RunFollower) has no pid to sample and reads them there.
//  - scalars from the TensorBoard event files the script writes (TensorBoardTail): the spec's
//    logdir, else any written under the working directory and the run directory since the run
//    began. A file under a folder named rank<N> (rank-1, rank_1, rank1) is rank N's, any other
//    rank 0's (scripts log from rank 0). Per rank, the first tag holding "loss" and no word of
//    an evaluation (val, valid, validation, eval, evaluation, test, dev) is its training loss;
//    loss tags with such a word are its evaluations; every other tag is a scalar of its own (a
//    gauge, charted per rank and name).
//  - printed losses (OutputLossReader, with the spec's loss_pattern), until the rank's event
//    files give a training loss: those are exact and carry the script's own steps.
// The run's curve is the mean over the ranks at each step (RankMean: a step's points wait for
// the ranks that report, at most RankMean::kWaitS), one for printed losses (every rank waited
// for) and one for event files' (a rank waited for once its files gave a loss). The points of the
// lines read in one pass
//    of the event loop go to the sink together (once the pass ends): a script printing
//    100,000 lines a second costs the run's record one write a read, not one a line.
// A rank that has connected through the client (isConnected) reports for itself: its event
// files and output are not read as metrics (its system metrics still are).
#pragma once

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metrics/output_loss.h"
#include "metrics/rank_mean.h"
#include "metrics/tensorboard_tail.h"
#include "run_spec.h"
#include "wire.h"

namespace ddpdesk {

class SystemSampler;

class ScriptMetrics : public QObject {
  Q_OBJECT
 public:
  using Sink = std::function<void(const std::vector<wire::Message>&)>;
  using IsConnected = std::function<bool(int rank)>;
  using StepOf = std::function<std::int64_t(int rank)>;  // the rank's last step in the store

  // `runDir`: the run's directory; the spec's paths are absolute (makeScriptPathsAbsolute).
  ScriptMetrics(const RunSpec& spec, const QString& runDir, IsConnected isConnected, StepOf stepOf,
                Sink sink, QObject* parent = nullptr);
  ~ScriptMetrics() override;

  // A rank's process started (its pid sampled from now on) or ended.
  void rankStarted(int rank, qint64 pid);
  void rankEnded(int rank);
  // One line a rank printed. Its loss point reaches the sink at the end of this event-loop
  // pass, or at the next poll() or finish().
  void line(int rank, const QString& text);
  // Samples the running ranks and reads the event files now (the timer's work; tests).
  void poll();
  // The run's ranks have all ended: what the event files gained last, then no more polling.
  void finish();
  // The run restarts (its ranks start again after finish()): polling resumes.
  void restart();

  // The sampled system metrics are appended to `path` too (metrics/system.jsonl of the run's
  // directory: the monitor that launched the ranks). False with *error when it cannot be opened.
  bool recordSystemMetrics(const QString& path, QString* error);

  void setInterval(int ms) { timer_.setInterval(ms); }
  const TensorBoardTail& tensorboard() const { return tail_; }
  // The training-loss tag rank `rank`'s event files gave (empty: none yet).
  std::string lossTag(int rank) const;

 private:
  struct Rank {
    OutputLossReader printed;
    std::unique_ptr<SystemSampler> sampler;
    std::string lossTag;  // from the event files; set: printed losses are no longer read
    bool ended = false;   // its process ended (steps no longer wait for its event files)
  };
  static bool isTrainingLoss(const Rank& r, const std::string& tag);
  int rankOfFile(const QString& path) const;
  void sendPrinted();
  void queueSend();  // sendPrinted() once this event-loop pass ends
  void readEventFiles(std::vector<wire::Message>& out);
  double sinceStart() const { return double(clock_.elapsed()) / 1000.0; }

  RunSpec spec_;
  IsConnected is_connected_;
  StepOf step_of_;
  Sink sink_;
  std::vector<Rank> ranks_;
  TensorBoardTail tail_;
  QElapsedTimer clock_;
  double started_epoch_s_;  // the run's start on the event files' clock
  QTimer timer_;
  RankMean event_mean_;                 // event files' loss points until their step is complete
  RankMean mean_;                       // printed points until their step is complete
  std::vector<wire::Message> printed_;  // loss points of lines not yet sent
  std::unique_ptr<QFile> system_file_;  // recordSystemMetrics()
  bool send_queued_ = false;
};

}  // namespace ddpdesk
