#include "history/past_run_loader.h"

#include <QDir>
#include <QFileInfo>

#include "metrics/metrics_store.h"
#include "run/run_directory.h"

namespace ddpdesk {

struct PastRunLoader::Pending {
  QString label;
  const MetricsStore* live = nullptr;  // the active run's store: nothing to read
  std::unique_ptr<MetricsStore> store;
  bool done = false;
  MetricsStore::LoadResult result;
};

PastRunLoader::PastRunLoader(QObject* parent) : QObject(parent) {}

PastRunLoader::~PastRunLoader() = default;

void PastRunLoader::cancel() {
  pending_.clear();
}

void PastRunLoader::open(const QStringList& paths, const QString& liveDir,
                         const MetricsStore* liveStore) {
  pending_.clear();  // a load still running ends into a destroyed store's watcher: dropped
  QStringList labels;
  for (const QString& path : paths) {
    auto p = std::make_unique<Pending>();
    p->label = QFileInfo(path).fileName();
    labels << p->label;
    if (liveStore && !liveDir.isEmpty() &&
        QDir(path).absolutePath() == QDir(liveDir).absolutePath()) {
      p->live = liveStore;
      p->done = true;
    } else {
      p->store = std::make_unique<MetricsStore>();
      Pending* raw = p.get();
      connect(p->store.get(), &MetricsStore::loaded, this,
              [this, raw](const MetricsStore::LoadResult& r) {
                raw->result = r;
                raw->done = true;
                finishIfDone();
              });
      p->store->loadJsonlAsync(RunDirectory::metricsPath(path));
    }
    pending_.push_back(std::move(p));
  }
  Q_EMIT opening(labels);
  finishIfDone();  // only live or no runs: done at once
}

void PastRunLoader::finishIfDone() {
  if (pending_.empty()) return;
  for (const auto& p : pending_)
    if (!p->done) return;
  ChartSources sources;
  std::vector<std::unique_ptr<MetricsStore>> stores;
  QStringList problems;
  for (auto& p : pending_) {
    if (p->live) {
      sources.push_back({p->label, p->live});
    } else if (!p->result.ok) {
      problems << p->result.error;
    } else {
      sources.push_back({p->label, p->store.get()});
      stores.push_back(std::move(p->store));
    }
  }
  // This runs inside a store's loaded() signal: stores are deleted later, never here.
  auto dispose = [](std::unique_ptr<MetricsStore> s) {
    if (s) s.release()->deleteLater();
  };
  std::vector<std::unique_ptr<Pending>> finished = std::move(pending_);
  for (auto& p : finished) dispose(std::move(p->store));  // the ones that failed
  if (!problems.isEmpty()) Q_EMIT this->problems(problems.join(QStringLiteral("; ")));
  if (sources.empty()) {
    Q_EMIT opened(sources);
    return;
  }
  std::vector<std::unique_ptr<MetricsStore>> previous = std::move(shown_);
  shown_ = std::move(stores);
  Q_EMIT opened(sources);
  for (auto& s : previous) dispose(std::move(s));  // the charts have let go of them
}

}  // namespace ddpdesk
