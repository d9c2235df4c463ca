#include "charts/time_chart.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <cmath>

#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

// One colour per part; comm (waiting on the others) in red, since it is the part to worry about.
QColor partColor(StepPart p) {
  switch (p) {
    case StepPart::Data:
      return {255, 127, 14};
    case StepPart::Forward:
      return {31, 119, 180};
    case StepPart::Backward:
      return {44, 160, 44};
    case StepPart::Comm:
      return {214, 39, 40};
    case StepPart::Optimizer:
      return {148, 103, 189};
    case StepPart::Other:
      return {188, 189, 34};
    case StepPart::Telemetry:
      return {127, 127, 127};
  }
  return Qt::black;
}

QSharedPointer<QCPAxisTickerText> textTicker(QCPAxis* axis) {
  return axis->ticker().dynamicCast<QCPAxisTickerText>();
}

}  // namespace

TimeChart::TimeChart(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* row = new QHBoxLayout();
  row->addWidget(new QLabel(QStringLiteral("<b>%1</b>").arg(tr("Time per step")), this));
  row->addStretch(1);
  mode_box_ = new QComboBox(this);
  mode_box_->setObjectName(QStringLiteral("timeMode"));
  mode_box_->addItem(tr("latest interval"), int(Mode::Latest));
  mode_box_->addItem(tr("run average"), int(Mode::Average));
  mode_box_->setToolTip(
      tr("Each rank's breakdown over the last log interval, or averaged over the whole run"));
  connect(mode_box_, &QComboBox::currentIndexChanged, this,
          [this] { setMode(Mode(mode_box_->currentData().toInt())); });
  row->addWidget(mode_box_);
  layout->addLayout(row);
  layout->addWidget(plot_, 1);

  note_ = new QLabel(plot_);
  note_->setObjectName(QStringLiteral("timeNote"));
  note_->setAlignment(Qt::AlignCenter);
  note_->setWordWrap(true);
  note_->setAttribute(Qt::WA_TransparentForMouseEvents);
  note_->setStyleSheet(QStringLiteral("color: #606060;"));
  plot_->installEventFilter(this);

  // Horizontal bars: ranks on the y axis (the bars' key), ms per step on the x axis, the parts
  // stacked left to right in the order a step runs through them.
  QCPBars* below = nullptr;
  for (StepPart p : kStepParts) {
    auto* b = new QCPBars(plot_->yAxis, plot_->xAxis);
    b->setName(stepPartName(p));
    b->setWidth(0.6);
    b->setPen(QPen(Qt::white, 1));  // a thin gap between parts
    b->setBrush(partColor(p));
    if (below) b->moveAbove(below);
    bars_[int(p)] = below = b;
  }
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
  plot_->yAxis->setRangeReversed(true);  // rank 0 at the top, like the rank table
  plot_->yAxis->grid()->setVisible(false);
  plot_->yAxis->setTickPen(Qt::NoPen);  // a zero-length tick still draws a dot
  plot_->yAxis->setSubTicks(false);
  // The right axis carries each bar's total: step time and sync efficiency (and a straggler).
  plot_->yAxis2->setVisible(true);
  plot_->yAxis2->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
  plot_->yAxis2->setRangeReversed(true);
  plot_->yAxis2->setTickPen(Qt::NoPen);
  plot_->yAxis2->setSubTicks(false);
  plot_->yAxis2->setBasePen(Qt::NoPen);
  plot_->xAxis->setLabel(tr("ms per optimizer step"));

  // The legend in a row above the plot, as the other charts have it.
  plot_->legend->setVisible(true);
  plot_->legend->setBorderPen(Qt::NoPen);
  // Three a row: six in one row would hold the chart (and the window) wider than a small screen.
  // The fill order set after the wrap lays out the entries already there again.
  plot_->legend->setWrap(3);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  QFont legendFont = font();
  legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
  plot_->legend->setFont(legendFont);
  plot_->legend->setIconSize(14, 8);
  plot_->legend->setRowSpacing(0);
  plot_->legend->setColumnSpacing(8);
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  plot_->plotLayout()->setRowSpacing(0);
  plot_->legend->setMargins(QMargins(4, 0, 4, 0));
  setLegendParts(false, true, true);

  connect(&watch_, &StragglerWatch::changed, this, [this] { dirty_ = true; });
  timer_.setInterval(200);
  connect(&timer_, &QTimer::timeout, this, &TimeChart::sync);
  timer_.start();
  redraw();
}

// Lists in the legend the parts the shown run measures: "other" only where a script's phases
// left time outside them, "comm" only where it was measured, "telemetry" only where it took
// time (a script's never does). In the order of the bars.
void TimeChart::setLegendParts(bool other, bool comm, bool telemetry) {
  const std::array<bool, 3> parts{other, comm, telemetry};
  if (legendParts_ == parts) return;
  legendParts_ = parts;
  plot_->legend->clearItems();
  for (StepPart p : kStepParts)
    if ((p != StepPart::Other || other) && (p != StepPart::Comm || comm) &&
        (p != StepPart::Telemetry || telemetry))
      bars_[int(p)]->addToLegend();
}

void TimeChart::setSources(const ChartSources& sources) {
  sources_ = sources;
  pickStore();  // the same run again keeps its straggler watch
  dirty_ = true;
}

void TimeChart::pickStore() {
  // Overlaid runs: the first one that has a breakdown (a run being read from disk may get one
  // later), else the first one.
  const MetricsStore* pick = nullptr;
  for (const ChartSource& s : sources_)
    if (s.store && !pick) pick = s.store;
  for (const ChartSource& s : sources_) {
    if (!s.store) continue;
    bool any = false;
    for (int r = 0; r < s.store->rankCount() && !any; ++r) any = !s.store->breakdown(r).empty();
    if (any) {
      pick = s.store;
      break;
    }
  }
  if (pick == store_) return;
  store_ = pick;
  watch_.setStore(store_);
  dirty_ = true;
}

void TimeChart::setMode(Mode mode) {
  if (mode == mode_) return;
  mode_ = mode;
  const int i = mode_box_->findData(int(mode));
  if (i >= 0 && i != mode_box_->currentIndex()) mode_box_->setCurrentIndex(i);
  dirty_ = true;
}

void TimeChart::setRedrawInterval(int ms, int phaseMs) {
  timer_.stop();
  timer_.setInterval(ms);
  if (phaseMs <= 0)
    timer_.start();
  else
    QTimer::singleShot(phaseMs, this, [this] { timer_.start(); });
}

void TimeChart::sync() {
  if (sources_.size() > 1) pickStore();
  const quint64 revision = store_ ? store_->revision() : 0;
  if (!dirty_ && revision == drawnRevision_) return;
  dirty_ = false;
  drawnRevision_ = revision;
  redraw();
}

void TimeChart::redraw() {
  for (QCPBars* b : bars_) b->data()->clear();
  auto left = textTicker(plot_->yAxis);
  auto right = textTicker(plot_->yAxis2);
  left->clear();
  right->clear();
  shown_.clear();
  labels_.clear();
  double maxMs = 0;
  bool other = false;
  bool comm = false;
  bool telemetry = false;
  const int ranks = store_ ? store_->rankCount() : 0;
  for (int r = 0; r < ranks; ++r) {
    const BreakdownSeries& series = store_->breakdown(r);
    const auto t = mode_ == Mode::Latest ? series.latest() : series.average();
    if (!t) continue;
    for (StepPart p : kStepParts) bars_[int(p)]->addData(r, partMs(*t, p));
    const double eff = syncEfficiency(*t);
    QString label = tr("%1 ms").arg(t->step, 0, 'f', 1);
    if (!std::isnan(eff)) label += tr(" · %1% sync").arg(std::lround(eff * 100));
    if (watch_.isFlagged(r)) label += tr(" · straggler");
    left->addTick(r, tr("rank %1").arg(r));
    right->addTick(r, label);
    shown_.push_back(r);
    labels_.push_back(label);
    maxMs = std::max(maxMs, t->step);
    other = other || t->other > 0;
    comm = comm || t->comm_measured;
    telemetry = telemetry || t->telemetry > 0;
  }
  if (shown_.empty())
    setLegendParts(false, true, true);
  else
    setLegendParts(other, comm, telemetry);
  if (shown_.empty()) {
    plot_->yAxis->setRange(-0.5, 0.5);
    plot_->xAxis->setRange(0, 1);
    bool anySteps = false;
    for (int r = 0; r < ranks; ++r) anySteps = anySteps || store_->rankSeries(r).size() > 0;
    note_->setText(!store_ ? tr("No run")
                   : !anySteps
                       ? tr("No steps yet")
                       : tr("No step breakdown: this run's ranks did not report one (a training "
                            "script reports one with ddpdesk.phase)"));
  } else {
    plot_->yAxis->setRange(shown_.front() - 0.5, shown_.back() + 0.5);
    plot_->xAxis->setRange(0, maxMs > 0 ? maxMs * 1.05 : 1);
    note_->clear();
  }
  plot_->yAxis2->setRange(plot_->yAxis->range());
  note_->setVisible(shown_.empty());
  placeNote();
  plot_->replot();
}

QString TimeChart::barLabel(int rank) const {
  for (std::size_t i = 0; i < shown_.size(); ++i)
    if (shown_[i] == rank) return labels_[i];
  return {};
}

QString TimeChart::note() const {
  return note_->isHidden() ? QString() : note_->text();
}

void TimeChart::placeNote() {
  note_->setGeometry(plot_->axisRect()->rect().adjusted(8, 8, -8, -8));
}

bool TimeChart::eventFilter(QObject* watched, QEvent* event) {
  if (watched == plot_ && event->type() == QEvent::Resize) placeNote();
  return QWidget::eventFilter(watched, event);
}

}  // namespace ddpdesk
