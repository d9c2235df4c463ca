// PastRunLoader: opens runs from the history without blocking the window. Each run's metrics.jsonl
// is read on a worker thread (MetricsStore::loadJsonlAsync); once all are in, opened() gives the
// charts their sources, and problems() names the files that could not be read. The live run is
// read from memory (its file is still being written). The stores of the runs on show live here
// until a later open replaces them; a newer open() supersedes one still reading.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "plot/chart_sources.h"

namespace ddpdesk {

class MetricsStore;

class PastRunLoader : public QObject {
  Q_OBJECT
 public:
  explicit PastRunLoader(QObject* parent = nullptr);
  ~PastRunLoader() override;

  // `liveDir` and `liveStore`: the active run, if any (empty / null otherwise).
  void open(const QStringList& paths, const QString& liveDir, const MetricsStore* liveStore);
  // Drops an open still reading (the user went back to the live run).
  void cancel();
  bool busy() const { return !pending_.empty(); }

 Q_SIGNALS:
  // Reading started, for the runs with these labels.
  void opening(const QStringList& labels);
  // Every run was read. `sources` holds those that could be (none: the charts stay as they are;
  // the stores shown so far are kept). Slots switching the charts over must run before this
  // returns (direct connections): the stores shown so far are destroyed afterwards.
  void opened(const ddpdesk::ChartSources& sources);
  void problems(const QString& text);

 private:
  struct Pending;
  void finishIfDone();

  std::vector<std::unique_ptr<Pending>> pending_;
  std::vector<std::unique_ptr<MetricsStore>> shown_;
};

}  // namespace ddpdesk
