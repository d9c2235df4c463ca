#include "charts/scalars_panel.h"

#include <QGridLayout>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>

#include "charts/scalar_chart.h"
#include "metrics/metrics_store.h"
#include "system_gauges.h"

namespace ddpdesk {
namespace {

constexpr int kScalarMinWidth = 320;
constexpr int kScalarMinHeight = 160;
constexpr int kScalarRedrawMs = 200;

}  // namespace

ScalarsPanel::ScalarsPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  scroll_ = new QScrollArea(this);
  scroll_->setObjectName(QStringLiteral("scalarsScroll"));
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setWidgetResizable(true);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the columns fit the width
  host_ = new QWidget(scroll_);
  grid_ = new QGridLayout(host_);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setSpacing(6);
  scroll_->setWidget(host_);
  v->addWidget(scroll_);
  scroll_->viewport()->installEventFilter(this);
  connect(scroll_->verticalScrollBar(), &QScrollBar::valueChanged, this,
          &ScalarsPanel::updatePaused);

  timer_.setInterval(250);
  connect(&timer_, &QTimer::timeout, this, &ScalarsPanel::sync);
  timer_.start();
}

void ScalarsPanel::setSources(const ChartSources& sources) {
  sources_ = sources;
  for (ScalarChart* c : charts_) c->setSources(sources_);
  sync();
}

void ScalarsPanel::setXAxis(XAxis axis) {
  xAxis_ = axis;
  for (ScalarChart* c : charts_) c->setXAxis(axis);
}

void ScalarsPanel::setSmoothing(double weight) {
  smoothing_ = weight;
  for (ScalarChart* c : charts_) c->setSmoothing(weight);
}

std::vector<std::string> ScalarsPanel::scalarNames() const {
  std::vector<std::string> out;
  for (const ChartSource& s : sources_) {
    if (!s.store || s.imported) continue;
    for (const std::string& name : s.store->gauges().names())
      if (!gauges::isSystemGauge(name) && std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
  }
  return out;
}

ScalarChart* ScalarsPanel::chart(std::string_view gauge) const {
  for (ScalarChart* c : charts_)
    if (c->gauge() == gauge) return c;
  return nullptr;
}

void ScalarsPanel::sync() {
  const std::vector<std::string> names = scalarNames();
  bool same = names.size() == charts_.size();
  for (std::size_t i = 0; same && i < names.size(); ++i) same = charts_[i]->gauge() == names[i];
  if (same) {
    fit();
    return;
  }
  std::vector<ScalarChart*> next;
  for (const std::string& name : names) {
    ScalarChart* c = chart(name);
    if (!c) {
      c = new ScalarChart(name, host_);
      // Paused until it is found on screen (updatePaused): a run opened from the history with
      // thirty scalars builds the curves of those in sight first.
      c->setPaused(true);
      c->setMinimumSize(180, kScalarMinHeight);
      c->setRedrawInterval(kScalarRedrawMs, 20 + int(next.size()) * 37 % kScalarRedrawMs);
      c->setXAxis(xAxis_);
      c->setSmoothing(smoothing_);
      c->setSources(sources_);
      c->plot()->installEventFilter(this);
    }
    next.push_back(c);
  }
  for (ScalarChart* c : charts_)
    if (std::find(next.begin(), next.end(), c) == next.end()) delete c;
  charts_ = std::move(next);
  reflow();
  Q_EMIT chartsChanged(int(charts_.size()));
}

int ScalarsPanel::fittingColumns() const {
  const int width = scroll_->viewport()->width();
  return std::clamp(width / kScalarMinWidth, 1, std::max(1, chartCount()));
}

void ScalarsPanel::fit() {
  if (fittingColumns() != columns_)
    reflow();
  else
    updatePaused();
}

void ScalarsPanel::reflow() {
  columns_ = fittingColumns();
  for (ScalarChart* c : charts_) grid_->removeWidget(c);
  for (int i = 0; i < int(charts_.size()); ++i)
    grid_->addWidget(charts_[i], i / columns_, i % columns_);
  for (int col = 0; col < grid_->columnCount(); ++col)
    grid_->setColumnStretch(col, col < columns_ ? 1 : 0);
  grid_->activate();
  updatePaused();
}

void ScalarsPanel::updatePaused() {
  // What of the grid the viewport shows, in the grid's coordinates.
  const QRect shown(-host_->pos(), scroll_->viewport()->size());
  const bool visible = isVisible() && !shown.isEmpty();
  for (ScalarChart* c : charts_) c->setPaused(!visible || !shown.intersects(c->geometry()));
}

bool ScalarsPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == scroll_->viewport()) {
    // After the scroll area has fitted the grid to its new size: then the charts' places are
    // known.
    if (event->type() == QEvent::Resize)
      QMetaObject::invokeMethod(this, &ScalarsPanel::fit, Qt::QueuedConnection);
    return false;
  }
  // A wheel over a chart scrolls the grid while it can scroll; Ctrl+wheel zooms the chart.
  if (event->type() == QEvent::Wheel) {
    auto* wheel = static_cast<QWheelEvent*>(event);
    QScrollBar* bar = scroll_->verticalScrollBar();
    if (!(wheel->modifiers() & Qt::ControlModifier) && bar->maximum() > 0) {
      QCoreApplication::sendEvent(bar, wheel);
      return true;
    }
  }
  return false;
}

}  // namespace ddpdesk
