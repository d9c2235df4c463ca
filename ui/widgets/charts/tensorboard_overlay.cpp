#include "charts/tensorboard_overlay.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QInputDialog>
#include <QtConcurrent>
#include <algorithm>

#include "charts/charts_panel.h"
#include "compare/tensorboard_import.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {

TensorBoardOverlay::TensorBoardOverlay(ChartsPanel* charts, QWidget* dialogParent)
    : QObject(dialogParent), charts_(charts), parent_(dialogParent) {
  chooseDir_ = [this] {
    return QFileDialog::getExistingDirectory(parent_, tr("Open TensorBoard log directory"));
  };
  chooseSeries_ = [this](const QStringList& names, const QString& suggested) {
    bool ok = false;
    const QString picked = QInputDialog::getItem(
        parent_, tr("Open TensorBoard log"), tr("Series to overlay on the loss chart:"), names,
        std::max<int>(0, int(names.indexOf(suggested))), false, &ok);
    return ok ? picked : QString();
  };
}

// Stores still shown by the charts go with them; the charts let go of them first.
TensorBoardOverlay::~TensorBoardOverlay() {
  if (!charts_ || stores_.empty()) return;
  ChartSources kept;
  for (const ChartSource& s : charts_->sources())
    if (!s.imported) kept.push_back(s);
  if (kept.size() != charts_->sources().size()) charts_->setSources(kept, charts_->showingLive());
}

void TensorBoardOverlay::openDialog() {
  const QString dir = chooseDir_ ? chooseDir_() : QString();
  if (!dir.isEmpty()) load(dir);
}

void TensorBoardOverlay::load(const QString& dir) {
  busy_ = true;
  const quint64 generation = ++generation_;
  Q_EMIT message(tr("Reading TensorBoard log %1…").arg(dir));
  auto* watcher = new QFutureWatcher<TensorBoardLog>(this);
  connect(watcher, &QFutureWatcher<TensorBoardLog>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;  // superseded
    busy_ = false;
    show(watcher->future().result());
  });
  watcher->setFuture(QtConcurrent::run([dir] { return loadTensorBoardLog(dir); }));
}

void TensorBoardOverlay::show(const TensorBoardLog& log) {
  const QString problems = log.problems.join(QStringLiteral("; "));
  if (log.series.empty() || !charts_) {
    Q_EMIT message(tr("Nothing to overlay from %1: %2").arg(log.root, problems));
    return;
  }
  const QString name = chooseSeries_ ? chooseSeries_(log.names(), log.suggested()) : QString();
  const TensorBoardSeries* series = log.find(name);
  if (!series) return;  // cancelled
  auto store = std::make_unique<MetricsStore>();
  fillStore(*series, *store);
  const QString label = QFileInfo(log.root).fileName() + QStringLiteral(": ") + series->name();
  ChartSources sources = charts_->sources();
  sources.push_back({label, store.get(), true});
  stores_.push_back(std::move(store));
  charts_->setSources(sources, charts_->showingLive());
  // The charts have let go of the stores they no longer show (history opens replace the sources).
  stores_.erase(std::remove_if(stores_.begin(), stores_.end(),
                               [&](const std::unique_ptr<MetricsStore>& s) {
                                 return std::none_of(
                                     sources.begin(), sources.end(),
                                     [&](const ChartSource& c) { return c.store == s.get(); });
                               }),
                stores_.end());
  Q_EMIT overlaid(label);
  Q_EMIT message(
      problems.isEmpty()
          ? tr("Overlaid %1 (%n point(s))", nullptr, int(series->size())).arg(label)
          : tr("Overlaid %1 (%n point(s)); %2", nullptr, int(series->size())).arg(label, problems));
}

}  // namespace ddpdesk
