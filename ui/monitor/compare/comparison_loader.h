// ComparisonLoader: loads the runs of a comparison without blocking the thread it lives on (the
// GUI's). Run directories are read with MetricsStore::loadJsonlAsync, TensorBoard logs on a
// worker thread; once every entry is in, loaded() hands them over in the order asked, or failed()
// names the first that is not a run. A newer load() supersedes one still reading.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "compare/run_comparison.h"

namespace ddpdesk {

class ComparisonLoader : public QObject {
  Q_OBJECT
 public:
  explicit ComparisonLoader(QObject* parent = nullptr);
  ~ComparisonLoader() override;

  // `tag`: the series of TensorBoard logs among `paths` (empty: each log's suggested one).
  void load(const QStringList& paths, const QString& tag = {});
  bool busy() const { return pending_ != nullptr; }

 Q_SIGNALS:
  // Emitted with the loaded runs; the receiver takes them (std::move out of the vector).
  void loaded(std::vector<ddpdesk::ComparedRun>* runs);
  void failed(const QString& error);

 private:
  struct Pending;
  void finishIfDone(const std::shared_ptr<Pending>& p);

  std::shared_ptr<Pending> pending_;
};

}  // namespace ddpdesk
