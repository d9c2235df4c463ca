#include "charts/charts_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QVBoxLayout>

#include "charts/csv_export.h"
#include "charts/loss_chart.h"
#include "charts/scalars_panel.h"
#include "charts/system_chart.h"
#include "charts/throughput_chart.h"
#include "charts/time_chart.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {

ChartsPanel::ChartsPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout();
  showing_ = new QLabel(this);
  // The run's name can be long: it gets the room left on the row and is cut there (whole in its
  // tooltip), rather than holding the window wider than a small screen.
  showing_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  bar->addWidget(showing_, 1);
  backToLive_ = new QPushButton(tr("Back to live run"), this);
  backToLive_->setVisible(false);
  connect(backToLive_, &QPushButton::clicked, this, &ChartsPanel::backToLiveRequested);
  bar->addWidget(backToLive_);

  bar->addWidget(new QLabel(tr("x:"), this));
  xAxis_ = new QComboBox(this);
  xAxis_->setObjectName(QStringLiteral("xAxis"));
  xAxis_->addItem(tr("step"), int(XAxis::Step));
  xAxis_->addItem(tr("samples"), int(XAxis::Samples));
  xAxis_->addItem(tr("wall time"), int(XAxis::WallTime));
  xAxis_->setToolTip(tr("What the x axis of the charts counts"));
  bar->addWidget(xAxis_);

  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Smoothing:"), this));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("smoothing"));
  slider_->setRange(0, 99);
  slider_->setFixedWidth(140);
  slider_->setToolTip(
      tr("TensorBoard's debiased exponential moving average; the raw curve stays faint behind"));
  bar->addWidget(slider_);
  sliderValue_ = new QLabel(this);
  sliderValue_->setMinimumWidth(32);
  bar->addWidget(sliderValue_);

  auto* png = new QPushButton(tr("PNG…"), this);
  png->setToolTip(tr("Save the loss chart as a PNG image"));
  connect(png, &QPushButton::clicked, this, &ChartsPanel::exportPngDialog);
  bar->addWidget(png);
  csv_ = new QPushButton(tr("CSV…"), this);
  csv_->setToolTip(tr("Save every point of the shown run as CSV"));
  connect(csv_, &QPushButton::clicked, this, &ChartsPanel::exportCsvDialog);
  bar->addWidget(csv_);
  v->addLayout(bar);

  auto* split = split_ = new QSplitter(Qt::Vertical, this);
  loss_ = new LossChart(split);
  // Throughput and Time side by side: the bars need width less than height.
  auto* lower = new QSplitter(Qt::Horizontal, split);
  throughput_ = new ThroughputChart(lower);
  time_ = new TimeChart(lower);
  lower->addWidget(throughput_);
  lower->addWidget(time_);
  // What each rank costs its machine, beside them.
  system_ = new SystemChart(lower);
  lower->addWidget(system_);
  // An explicit minimum, so what the charts draw (a long right-axis label, a legend) cannot
  // hold the window wider than a small screen: squeezed, they draw narrower.
  for (QWidget* chart : {static_cast<QWidget*>(throughput_), static_cast<QWidget*>(time_),
                         static_cast<QWidget*>(system_)})
    chart->setMinimumWidth(180);
  lower->setStretchFactor(2, 3);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  split->addWidget(loss_);
  split->addWidget(lower);
  // The script's own scalars under them, on the same x axis: hidden while there are none.
  scalars_ = new ScalarsPanel(split);
  scalars_->setVisible(false);
  split->addWidget(scalars_);
  connect(scalars_, &ScalarsPanel::chartsChanged, this, &ChartsPanel::showScalars);
  // Half a period apart, so the two never redraw in the same pass of the event loop.
  loss_->setRedrawInterval(66);
  throughput_->setRedrawInterval(66, 33);
  time_->setRedrawInterval(200, 17);    // bars need fewer frames, and off both charts' beat
  system_->setRedrawInterval(250, 50);  // its points come about once a second
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  v->addWidget(split, 1);

  connect(xAxis_, &QComboBox::currentIndexChanged, this, [this] {
    const XAxis a = XAxis(xAxis_->currentData().toInt());
    loss_->setXAxis(a);
    throughput_->setXAxis(a);
    system_->setXAxis(a);
    scalars_->setXAxis(a);
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    const double w = v / 100.0;
    sliderValue_->setText(QString::number(w, 'f', 2));
    loss_->setSmoothing(w);
    throughput_->setSmoothing(w);
    scalars_->setSmoothing(w);
  });
  slider_->setValue(60);  // TensorBoard's default
  setSources({}, true);
}

void ChartsPanel::setSources(const ChartSources& sources, bool live) {
  live_ = live;
  opening_.clear();
  loss_->setSources(sources);
  throughput_->setSources(sources);
  system_->setSources(sources);
  time_->setSources(sources);
  scalars_->setSources(sources);
  backToLive_->setVisible(!live);
  csv_->setEnabled(runCount(sources) == 1);
  updateShowing();
}

void ChartsPanel::setOpening(const QStringList& labels) {
  opening_ = labels;
  updateShowing();
}

void ChartsPanel::updateShowing() {
  if (!opening_.isEmpty()) {
    showing_->setText(tr("Opening: <b>%1</b>…").arg(opening_.join(", ").toHtmlEscaped()));
    return;
  }
  QStringList labels;
  for (const ChartSource& s : sources()) labels << s.label;
  if (live_)
    showing_->setText(labels.empty()
                          ? tr("No run yet")
                          : tr("Live run: <b>%1</b>").arg(labels.join(", ").toHtmlEscaped()));
  else
    showing_->setText(tr("Viewing: <b>%1</b>").arg(labels.join(", ").toHtmlEscaped()));
  showing_->setToolTip(showing_->text());
}

void ChartsPanel::showScalars(int charts) {
  if ((charts > 0) == !scalars_->isHidden()) return;
  QList<int> sizes = split_->sizes();
  if (charts == 0) {
    // Gone (the next run starts, a run without scalars is shown): its height is kept for its
    // return, in case the user set it.
    if (sizes.value(2) > 0) scalarsHeight_ = sizes.value(2);
    scalars_->setVisible(false);
    return;
  }
  // Appearing (a script's first scalar, a run with scalars opened): as high as it was last, else
  // a row of small charts' worth, taken from the loss chart and the lower row in proportion.
  // (A hidden area can still hold its height until the splitter's next layout.)
  const int total = sizes.value(0) + sizes.value(1) + sizes.value(2);
  scalars_->setVisible(true);
  if (total > 0) {
    const int area = std::min(
        scalarsHeight_ > 0 ? scalarsHeight_ : std::max(total * 2 / 7, std::min(180, total / 2)),
        total * 2 / 3);
    split_->setSizes({(total - area) * 3 / 5, (total - area) * 2 / 5, area});
  }
}

const ChartSources& ChartsPanel::sources() const {
  return loss_->sources();
}

void ChartsPanel::setXAxis(XAxis axis) {
  const int i = xAxis_->findData(int(axis));
  if (i >= 0) xAxis_->setCurrentIndex(i);
}

XAxis ChartsPanel::xAxis() const {
  return XAxis(xAxis_->currentData().toInt());
}

void ChartsPanel::setSmoothing(double weight) {
  slider_->setValue(qBound(0, int(weight * 100 + 0.5), 99));
}

double ChartsPanel::smoothing() const {
  return slider_->value() / 100.0;
}

void ChartsPanel::exportPngDialog() {
  QString path = QFileDialog::getSaveFileName(this, tr("Export chart"), QStringLiteral("loss.png"),
                                              tr("PNG image (*.png)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1String(".png"))) path += QStringLiteral(".png");
  Q_EMIT message(loss_->savePng(path) ? tr("Saved %1").arg(path)
                                      : tr("Could not write %1").arg(path));
}

void ChartsPanel::exportCsvDialog() {
  if (runCount(sources()) != 1) return;
  const MetricsStore* run = nullptr;
  for (const ChartSource& s : sources())
    if (!s.imported) run = s.store;
  if (!run) return;
  QString path = QFileDialog::getSaveFileName(this, tr("Export data"),
                                              QStringLiteral("metrics.csv"), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  Q_EMIT message(writeMetricsCsv(*run, path, &error) ? tr("Saved %1").arg(path) : error);
}

}  // namespace ddpdesk
