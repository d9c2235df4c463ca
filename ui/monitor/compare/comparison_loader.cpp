#include "compare/comparison_loader.h"

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

#include "compare/tensorboard_import.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {

struct ComparisonLoader::Pending {
  std::vector<ComparedRun> runs;
  int waiting = 0;
  QString error;  // the first entry that failed
};

ComparisonLoader::ComparisonLoader(QObject* parent) : QObject(parent) {}

ComparisonLoader::~ComparisonLoader() = default;

void ComparisonLoader::load(const QStringList& paths, const QString& tag) {
  auto p = std::make_shared<Pending>();
  pending_ = p;  // a load still reading is freed: its callbacks find nothing to report to
  for (const QString& path : paths) {
    QString error;
    std::optional<ComparedRun> run = openComparedRun(path, &error);
    if (!run) {
      pending_.reset();
      Q_EMIT failed(error);
      return;
    }
    p->runs.push_back(std::move(*run));
  }
  // The callbacks hold `p` weakly: a superseded load is freed with its stores at once.
  const std::weak_ptr<Pending> weak = p;
  for (std::size_t i = 0; i < p->runs.size(); ++i) {
    ComparedRun& run = p->runs[i];
    ++p->waiting;
    if (run.imported) {
      auto* watcher = new QFutureWatcher<TensorBoardLog>(this);
      const QString dir = run.path;
      connect(watcher, &QFutureWatcher<TensorBoardLog>::finished, this, [=] {
        watcher->deleteLater();
        const std::shared_ptr<Pending> p = weak.lock();
        if (!p) return;
        QString error;
        if (!importTensorBoard(p->runs[i], watcher->result(), tag, &error) && p->error.isEmpty())
          p->error = error;
        --p->waiting;
        finishIfDone(p);
      });
      watcher->setFuture(QtConcurrent::run([dir] { return loadTensorBoardLog(dir); }));
    } else {
      connect(run.store.get(), &MetricsStore::loaded, this, [=](const MetricsStore::LoadResult& r) {
        const std::shared_ptr<Pending> p = weak.lock();  // kept through this call
        if (!p) return;
        if (!r.ok && p->error.isEmpty())
          p->error = QStringLiteral("'%1' is not a run: metrics.jsonl cannot be read (%2)")
                         .arg(p->runs[i].path, r.error);
        --p->waiting;
        finishIfDone(p);
      });
      run.store->loadJsonlAsync(RunDirectory::metricsPath(run.path));
    }
  }
  finishIfDone(p);
}

void ComparisonLoader::finishIfDone(const std::shared_ptr<Pending>& p) {
  if (p != pending_ || p->waiting > 0) return;
  pending_.reset();
  for (ComparedRun& run : p->runs) run.store->disconnect(this);
  if (!p->error.isEmpty()) {
    // This may run inside one of these stores' loaded() signal: they go later, never here.
    for (ComparedRun& run : p->runs) run.store.release()->deleteLater();
    Q_EMIT failed(p->error);
    return;
  }
  // The receiver moves the runs out; the caller's `p` keeps the vector until then.
  Q_EMIT loaded(&p->runs);
}

}  // namespace ddpdesk
