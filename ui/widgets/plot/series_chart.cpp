#include "plot/series_chart.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <cmath>

#include "metrics/metrics_store.h"
#include "plot/elided_label.h"
#include "plot/event_marks.h"
#include "plot/series_chart_internal.h"

namespace ddpdesk {

using chart_detail::freeElsewhere;

namespace {

// Steps and samples are counts: ticks at 2.5 on such an axis name nothing. Below a tick step of
// one it stays one (the default ticker's choice otherwise).
class CountTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    return std::max(1.0, QCPAxisTicker::getTickStep(range));
  }
};

QSharedPointer<QCPAxisTicker> xTicker(XAxis axis) {
  if (axis == XAxis::WallTime) return QSharedPointer<QCPAxisTicker>(new QCPAxisTicker);
  return QSharedPointer<QCPAxisTicker>(new CountTicker);
}

}  // namespace

SeriesChart::SeriesChart(const QString& title, const QString& yLabel, QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  toolRow_ = new QHBoxLayout();
  title_ = new ElidedLabel(title, this);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  toolRow_->addWidget(title_);
  toolRow_->addStretch(1);
  logBox_ = new QCheckBox(tr("Log y"), this);
  logBox_->setToolTip(tr("Logarithmic y axis"));
  connect(logBox_, &QCheckBox::toggled, this, &SeriesChart::setLogY);
  toolRow_->addWidget(logBox_);
  auto* reset = new QPushButton(tr("Reset view"), this);
  reset->setToolTip(tr("Undo zoom and pan and follow the data again (or double-click the chart)"));
  connect(reset, &QPushButton::clicked, this, &SeriesChart::resetView);
  toolRow_->addWidget(reset);
  layout->addLayout(toolRow_);
  layout->addWidget(plot_, 1);
  loadingLabel_ = new QLabel(tr("Loading…"), plot_);
  loadingLabel_->setObjectName(QStringLiteral("loading"));
  loadingLabel_->setAlignment(Qt::AlignCenter);
  loadingLabel_->setAttribute(Qt::WA_TransparentForMouseEvents);
  loadingLabel_->setStyleSheet(QStringLiteral("color: #606060; font-size: 14pt;"));
  loadingLabel_->hide();
  plot_->installEventFilter(this);

  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Lines without antialiasing draw several times faster with millions of points.
  plot_->setNotAntialiasedElements(QCP::aePlottables);
  plot_->setPlottingHints(QCP::phCacheLabels | QCP::phFastPolylines);
  plot_->xAxis->setLabel(xAxisLabel(xAxis_));
  plot_->xAxis->setTicker(xTicker(xAxis_));
  plot_->yAxis->setLabel(yLabel);
  // The legend gets a row of its own above the plot: inside, it hid the newest points.
  plot_->legend->setVisible(true);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setWrap(10);
  QFont legendFont = font();
  legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
  plot_->legend->setFont(legendFont);
  plot_->legend->setIconSize(18, 8);
  plot_->legend->setRowSpacing(0);
  plot_->legend->setColumnSpacing(10);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->insertRow(0);
  // [stretch][legend]: the legend at its natural width, over the plot's right end.
  auto* legendRow = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(0, 0, legendRow);
  legendRow->addElement(0, 0, new QCPLayoutElement(plot_));
  legendRow->addElement(0, 1, plot_->legend);
  legendRow->setColumnStretchFactor(1, 0.001);
  legendRow->setMargins(QMargins(0, 0, 0, 0));
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  plot_->plotLayout()->setRowSpacing(0);
  plot_->legend->setMargins(QMargins(4, 0, 8, 0));

  connect(plot_, &QCustomPlot::legendClick, this,
          [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
            if (auto* pi = qobject_cast<QCPPlottableLegendItem*>(item))
              onLegendClick(pi->plottable());
          });
  connect(plot_, &QCustomPlot::mouseWheel, this, [this] { markInteraction(); });
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) markInteraction();
  });
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* e) {
    // A double-click on the legend is two toggles, not a reset.
    if (plot_->legend->selectTest(e->position(), false) < 0) resetView();
  });

  // The graphs get their points for the range about to be drawn, whatever triggered the
  // replot (a sync, a zoom, a pan, a resize): after the layout, so the plot's width is current.
  connect(plot_, &QCustomPlot::afterLayout, this, [this] {
    const QCPRange x = plot_->xAxis->range();
    const int pixels = std::max(1, plot_->axisRect()->width());
    for (auto& c : curves_) c->graph->refresh(x.lower, x.upper, pixels);
    if (marks_) marks_->align();
  });

  timer_.setInterval(66);
  connect(&timer_, &QTimer::timeout, this, &SeriesChart::syncUnlessPaused);
  timer_.start();
}

SeriesChart::~SeriesChart() {
  cancelRebuild();  // a running build finishes on its own; its result goes nowhere
  curves_.clear();  // graphs first, while the plot exists
}

bool SeriesChart::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Resize)
    loadingLabel_->setGeometry(plot_->rect());
  return QWidget::eventFilter(watched, event);
}

bool SeriesChart::isLoading() const {
  if (rebuilding_) return true;
  for (const ChartSource& s : sources_)
    if (s.store && s.store->isLoading()) return true;
  return false;
}

void SeriesChart::updateLoading() {
  const bool loading = isLoading();
  if (loading == loadingLabel_->isVisible()) return;
  loadingLabel_->setGeometry(plot_->rect());
  loadingLabel_->setVisible(loading);
  Q_EMIT loadingChanged(loading);
}

void SeriesChart::cancelRebuild() {
  if (!rebuilding_) return;
  cancelled_->store(true);
  ++generation_;
  rebuilding_ = false;
}

QColor SeriesChart::paletteColor(int i) {
  // Tableau 10: distinct on screen and in print.
  static const QColor colors[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                  {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                                  {188, 189, 34},  {23, 190, 207}};
  return colors[((i % 10) + 10) % 10];
}

void SeriesChart::setRedrawInterval(int ms, int phaseMs) {
  timer_.stop();
  timer_.setInterval(ms);
  if (phaseMs <= 0) {
    if (!paused_) timer_.start();
    return;
  }
  QTimer::singleShot(phaseMs, this, [this] {
    if (!paused_) timer_.start();
  });
}

void SeriesChart::setPaused(bool paused) {
  if (paused == paused_) return;
  paused_ = paused;
  if (paused) {
    timer_.stop();
    return;
  }
  timer_.start();
  sync();
}

void SeriesChart::syncUnlessPaused() {
  if (!paused_) sync();
}

QString SeriesChart::title() const {
  return title_->text();
}

void SeriesChart::setSources(const ChartSources& sources) {
  for (const ChartSource& s : sources_)
    if (s.store) disconnect(s.store, nullptr, this, nullptr);
  sources_ = sources;
  for (const ChartSource& s : sources_)
    if (s.store)
      connect(s.store, &MetricsStore::reset, this, [this] {
        cancelRebuild();  // its views show what was cleared
        needsRebuild_ = true;
      });
  cancelRebuild();
  std::vector<CurveData> old;
  for (auto& c : curves_) old.push_back(c->graph->take());
  freeElsewhere(std::move(old));
  curves_.clear();
  state_.assign(sources_.size(), SourceState());
  following_ = true;
  needsRebuild_ = true;
  syncUnlessPaused();
}

void SeriesChart::setXAxis(XAxis axis) {
  if (axis == xAxis_) return;
  xAxis_ = axis;
  plot_->xAxis->setLabel(xAxisLabel(axis));
  plot_->xAxis->setTicker(xTicker(axis));
  cancelRebuild();
  following_ = true;
  needsRebuild_ = true;
  syncUnlessPaused();
}

void SeriesChart::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.999);
  std::size_t points = 0;
  for (const auto& c : curves_) points += std::size_t(c->graph->size());
  // Smoothing millions of points again takes the GUI thread a second: that is a rebuild's work,
  // on the worker thread. A running build smooths with the old weight: it starts again too.
  const bool elsewhere = rebuilding_ || points > asyncThreshold_;
  for (auto& c : curves_) c->graph->setSmoothing(smoothing_, !elsewhere);
  if (elsewhere) {
    cancelRebuild();
    needsRebuild_ = true;
  }
  needsReplot_ = true;
  syncUnlessPaused();
}

void SeriesChart::setLogY(bool log) {
  if (log != logBox_->isChecked()) logBox_->setChecked(log);  // re-enters through toggled
  if (log == logY_) return;
  logY_ = log;
  if (log) {
    plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  } else {
    plot_->yAxis->setScaleType(QCPAxis::stLinear);
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  }
  needsReplot_ = true;
  following_ = true;
  syncUnlessPaused();
  Q_EMIT logYChanged(log);
}

void SeriesChart::addNewCurves() {
  const std::vector<CurveDef> defs = layout();
  // The right axis shows while a curve is on it: a run shown before (validation accuracy of an
  // overlaid run) must not leave its empty axis and range behind.
  bool anyRight = false;
  for (const CurveDef& d : defs) anyRight = anyRight || d.rightAxis;
  if (plot_->yAxis2->visible() != anyRight) {
    plot_->yAxis2->setVisible(anyRight);
    needsReplot_ = true;
  }
  std::size_t known = 0;
  for (const CurveDef& d : defs)
    for (const auto& c : curves_) known += c->def.id == d.id ? 1 : 0;
  if (known == defs.size() && curves_.size() == defs.size()) return;
  // A new curve that belongs before existing ones (a rank appearing after the global curve was
  // made) would otherwise end up out of order in the legend and in drawing order; recreating
  // them is cheap, because this happens at the start of a run, when there are few points. A
  // curve the layout no longer lists (an imported series on the samples axis) goes the same way.
  bool inOrder = curves_.size() <= defs.size();
  for (std::size_t k = 0; inOrder && k < curves_.size(); ++k)
    inOrder = curves_[k]->def.id == defs[k].id;
  if (!inOrder) {
    curves_.clear();
    needsRebuild_ = true;  // every curve again from the start (on a worker thread when big)
  }
  for (std::size_t k = curves_.size(); k < defs.size(); ++k) {
    const CurveDef& def = defs[k];
    auto c = std::make_unique<Curve>();
    c->def = def;
    c->mapper = KeyMapper(xAxis_);
    QCPAxis* valueAxis = def.rightAxis ? plot_->yAxis2 : plot_->yAxis;
    c->graph = std::make_unique<SmoothedGraph>(plot_, plot_->xAxis, valueAxis, def.name, def.style,
                                               smoothing_);
    curves_.push_back(std::move(c));
    if (hidden_.contains(def.name)) applyVisibility(*curves_.back(), false);
  }
  needsReplot_ = true;
}

void SeriesChart::applyVisibility(Curve& c, bool visible) {
  c.graph->setVisible(visible);
  if (auto* item = plot_->legend->itemWithPlottable(c.graph->legendPlottable()))
    item->setTextColor(visible ? Qt::black : QColor(160, 160, 160));
}

void SeriesChart::sync() {
  updateLoading();
  if (rebuilding_) return;  // the worker's curves come first; its result ends with a sync
  bool any = false;         // a store moved since the last sync
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const MetricsStore* store = sources_[i].store;
    any = any || (store && (!state_[i].seen || state_[i].revision != store->revision()));
  }
  if (any) addNewCurves();  // a reordered layout asks for a rebuild
  if (needsRebuild_) {
    rebuild();
    needsReplot_ = true;
    if (rebuilding_) {  // meanwhile: empty curves under "Loading…"
      plot_->replot(QCustomPlot::rpQueuedReplot);
      return;
    }
  }
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const MetricsStore* store = sources_[i].store;
    SourceState& st = state_[i];
    if (!store || (st.seen && st.revision == store->revision())) continue;
    st.seen = true;
    st.revision = store->revision();
    if (xAxis_ != XAxis::Step && drawsEvals(int(i))) updateGlobalKeys(int(i));
    for (auto& c : curves_)
      if (c->def.source == int(i)) feed(*c);
  }
  placeMarks();  // also after a rebuild: another x axis moves them
  if (!needsReplot_) return;
  needsReplot_ = false;
  if (following_) applyRanges();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

namespace {
// A restart mark's cause is cut to this many characters (the Log tab has it whole).
constexpr int kMarkCauseChars = 48;
}  // namespace

void SeriesChart::collectMarks(int source) {
  SourceState& st = state_[source];
  const ChartSource& src = sources_[source];
  const auto& events = src.store->events();
  if (events.size() < st.eventsSeen) {  // the store was cleared
    st.eventsSeen = 0;
    st.restarts.clear();
  }
  if (src.imported) return;
  for (; st.eventsSeen < events.size(); ++st.eventsSeen) {
    const wire::Event& e = events[st.eventsSeen];
    if (e.event == "restart")
      st.restarts.emplace_back(double(e.step), QString::fromStdString(e.detail));
  }
}

void SeriesChart::placeMarks() {
  if (!marks_) marks_ = std::make_unique<EventMarks>(plot_);
  std::vector<ChartMark> marks;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    if (!sources_[i].store) continue;
    collectMarks(int(i));
    const SourceState& st = state_[i];
    int n = 0;
    for (const auto& restart : st.restarts) {
      const double step = restart.first;
      ++n;
      // On the samples or time axis a mark needs the run's global keys, which charts drawing
      // its evaluations keep; the others mark restarts on the step axis only.
      double x = step;
      if (xAxis_ != XAxis::Step) {
        if (st.globalKeys.empty()) continue;
        x = keyForStep(sources_[i].store->global().step, st.globalKeys, step);
      }
      // A single run's mark says what failed under it; overlaid runs' name the run instead.
      QString cause = restart.second.section(QLatin1Char('\n'), 0, 0);
      if (cause.size() > kMarkCauseChars) cause = cause.left(kMarkCauseChars - 1) + QChar(0x2026);
      const QString label = runCount(sources_) > 1
                                ? tr("%1: restart %2").arg(sources_[i].label).arg(n)
                                : (cause.isEmpty() ? tr("restart %1").arg(n)
                                                   : tr("restart %1\n%2").arg(n).arg(cause));
      marks.push_back({x, label});
    }
  }
  if (marks_->show(marks)) needsReplot_ = true;
}

void SeriesChart::resetView() {
  following_ = true;
  needsReplot_ = true;
  syncUnlessPaused();
}

void SeriesChart::markInteraction() {
  following_ = false;
}

bool SeriesChart::savePng(const QString& path, int width, int height) {
  return plot_->savePng(path, width, height);
}

QStringList SeriesChart::curveNames() const {
  QStringList out;
  for (const auto& c : curves_) out << c->def.name;
  return out;
}

const SmoothedGraph* SeriesChart::curve(const QString& name) const {
  for (const auto& c : curves_)
    if (c->def.name == name) return c->graph.get();
  return nullptr;
}

void SeriesChart::setCurveVisible(const QString& name, bool visible) {
  if (visible)
    hidden_.remove(name);
  else
    hidden_.insert(name);
  for (auto& c : curves_)
    if (c->def.name == name) applyVisibility(*c, visible);
  needsReplot_ = true;
  syncUnlessPaused();
}

bool SeriesChart::isCurveVisible(const QString& name) const {
  const SmoothedGraph* g = curve(name);
  return g && g->isVisible();
}

void SeriesChart::onLegendClick(QCPAbstractPlottable* plottable) {
  for (auto& c : curves_)
    if (c->graph->legendPlottable() == plottable) {
      setCurveVisible(c->def.name, !c->graph->isVisible());
      return;
    }
}

}  // namespace ddpdesk
