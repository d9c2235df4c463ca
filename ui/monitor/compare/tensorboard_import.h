// Importing a TensorBoard log directory (written by PyTorch's SummaryWriter, TensorFlow, or
// ddpdesk's own --tensorboard): every events.out.tfevents.* file below it, recursively, read with
// ddpdesk_tensorboard. Each (directory, tag) becomes one series of (step, value, wall time), the
// way TensorBoard shows runs and tags.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

namespace ddpdesk {

class MetricsStore;

struct TensorBoardSeries {
  QString run;  // the files' directory relative to the log directory ("" for the directory itself)
  QString tag;
  // Ascending steps, one point per step: where a step was written more than once (a resumed run
  // going over steps again), the value written last counts, as TensorBoard shows it.
  std::vector<qint64> step;
  std::vector<double> value;
  std::vector<double> wallTime;  // seconds since the Unix epoch

  QString name() const { return run.isEmpty() ? tag : run + QLatin1Char('/') + tag; }
  std::size_t size() const { return step.size(); }
};

struct TensorBoardLog {
  QString root;
  int files = 0;                          // event files read
  std::vector<TensorBoardSeries> series;  // by name
  // One line per file that ended early, "<path under root>: <reason>": a half-written last
  // record (the scalars before it are kept), a corrupt record (likewise), an unreadable file;
  // or why nothing could be imported at all.
  QStringList problems;

  QStringList names() const;
  const TensorBoardSeries* find(const QString& name) const;
  // The series to show when nobody chose one: the first (by name) whose tag contains "loss",
  // preferring the log directory's own files; otherwise the first; empty when there is none.
  QString suggested() const;
};

// Reads every event file below `dir`. Blocking: big logs belong on a worker thread.
TensorBoardLog loadTensorBoardLog(const QString& dir);

// Replaces a store's content with one series, as the global curve of a one-rank run: x is the
// step; the training clock is the wall time since the series' first point. Charts show such a
// store as an imported source (ChartSource::imported).
void fillStore(const TensorBoardSeries& series, MetricsStore& store);

}  // namespace ddpdesk
