#include "compare/comparison_window.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include <qcustomplot.h>

#include "charts/loss_chart.h"
#include "charts/throughput_chart.h"
#include "compare/comparison_loader.h"
#include "compare/comparison_table_model.h"
#include "compare/difference_chart.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

QComboBox* combo(QWidget* parent, const QString& name, const QString& tip) {
  auto* box = new QComboBox(parent);
  box->setObjectName(name);
  box->setToolTip(tip);
  box->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // run names shown whole
  return box;
}

// Two runs a legend row (each run's curve and its validation or accuracy points side by side)
// where the chart is wide enough for four of the widest entry, else one run a row, else one entry:
// an entry narrower than its text is cut at its end, and run names (20261207-100108-cmp32)
// differ at their ends.
void fitLegendColumns(QCustomPlot& plot) {
  QCPLegend* legend = plot.legend;
  int widest = 0;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i))
      widest = std::max(widest, item->minimumOuterSizeHint().width());
  const int room = plot.width() - legend->margins().left() - legend->margins().right();
  int wrap = 4;
  while (wrap > 1 && wrap * widest + (wrap - 1) * legend->columnSpacing() > room) wrap /= 2;
  if (legend->wrap() == wrap) return;
  legend->setWrap(wrap);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
}

}  // namespace

ComparisonWindow::ComparisonWindow(QWidget* parent)
    : QWidget(parent), loader_(new ComparisonLoader(this)), model_(new ComparisonTableModel(this)) {
  setWindowTitle(tr("Compare runs — ddpdesk"));
  auto* v = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout();
  bar->addWidget(new QLabel(tr("x:"), this));
  xAxisBox_ = combo(this, QStringLiteral("compareX"),
                    tr("What the curves are aligned on, in the charts and the differences"));
  for (CompareX x : {CompareX::Step, CompareX::Samples, CompareX::Time})
    xAxisBox_->addItem(compareXLabel(x), int(x));
  bar->addWidget(xAxisBox_);
  bar->addWidget(new QLabel(tr("match:"), this));
  matchBox_ = combo(this, QStringLiteral("compareMatch"),
                    tr("Where the runs' x points differ: compare at the x of the run with fewer "
                       "points in the common range, interpolating the other linearly, or compare "
                       "shared x only"));
  matchBox_->addItem(tr("interpolate"), int(Matching::Interpolate));
  matchBox_->addItem(tr("same x only"), int(Matching::Exact));
  bar->addWidget(matchBox_);
  auto* tensorBoard = new QPushButton(tr("Add TensorBoard log…"), this);
  tensorBoard->setToolTip(
      tr("Compare with a run logged elsewhere (its loss series), x = step "
         "or wall time"));
  connect(tensorBoard, &QPushButton::clicked, this, &ComparisonWindow::addTensorBoardDialog);
  bar->addWidget(tensorBoard);
  auto* csv = new QPushButton(tr("Table CSV…"), this);
  csv->setObjectName(QStringLiteral("exportTable"));
  connect(csv, &QPushButton::clicked, this, &ComparisonWindow::exportTableDialog);
  bar->addWidget(csv);
  auto* png = new QPushButton(tr("Chart PNG…"), this);
  png->setToolTip(tr("Save the loss chart as a PNG image"));
  connect(png, &QPushButton::clicked, this, &ComparisonWindow::exportPngDialog);
  bar->addWidget(png);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("compareStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bar->addWidget(status_, 1);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* charts = new QSplitter(Qt::Horizontal, split);
  loss_ = new LossChart(charts);
  throughput_ = new ThroughputChart(charts);
  for (SeriesChart* c :
       {static_cast<SeriesChart*>(loss_), static_cast<SeriesChart*>(throughput_)}) {
    c->setSmoothing(0);  // a comparison shows the raw curves: smoothing would hide differences
    // Before each replot (the chart resized, curves added): as many legend columns as the widest
    // entry leaves room for.
    QCustomPlot* plot = c->plot();
    connect(plot, &QCustomPlot::beforeReplot, this, [plot] { fitLegendColumns(*plot); });
  }
  auto* diffPanel = new QWidget(split);
  auto* dv = new QVBoxLayout(diffPanel);
  dv->setContentsMargins(0, 0, 0, 0);
  auto* pick = new QHBoxLayout();
  pick->addWidget(new QLabel(tr("Difference:"), diffPanel));
  otherBox_ = combo(diffPanel, QStringLiteral("diffOther"), tr("The run whose curve is shown"));
  referenceBox_ =
      combo(diffPanel, QStringLiteral("diffReference"), tr("The run it is compared against"));
  metricBox_ = combo(diffPanel, QStringLiteral("diffMetric"), tr("Which curve to compare"));
  for (CompareMetric m : {CompareMetric::Loss, CompareMetric::EvalLoss, CompareMetric::EvalAccuracy,
                          CompareMetric::Throughput})
    metricBox_->addItem(compareMetricName(m), int(m));
  pick->addWidget(otherBox_);
  pick->addWidget(new QLabel(QStringLiteral("−"), diffPanel));
  pick->addWidget(referenceBox_);
  pick->addWidget(metricBox_);
  diffText_ = new QLabel(diffPanel);
  diffText_->setObjectName(QStringLiteral("diffText"));
  diffText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Wrapped: one long line held the run pickers at their narrowest, cutting the runs' names.
  diffText_->setWordWrap(true);
  pick->addWidget(diffText_, 1);
  dv->addLayout(pick);
  difference_ = new DifferenceChart(diffPanel);
  dv->addWidget(difference_, 1);
  table_ = new QTableView(split);
  table_->setModel(model_);
  table_->verticalHeader()->setVisible(false);
  table_->setAlternatingRowColors(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  // The overlaid curves first, then the difference; the table needs only a few rows.
  split->setSizes({450, 300, 150});
  v->addWidget(split, 1);

  auto changed = [this] { updateDifference(); };
  connect(referenceBox_, &QComboBox::currentIndexChanged, this, changed);
  connect(otherBox_, &QComboBox::currentIndexChanged, this, changed);
  connect(metricBox_, &QComboBox::currentIndexChanged, this, changed);
  connect(xAxisBox_, &QComboBox::currentIndexChanged, this,
          [this] { setXAxis(CompareX(xAxisBox_->currentData().toInt())); });
  connect(matchBox_, &QComboBox::currentIndexChanged, this,
          [this] { setMatching(Matching(matchBox_->currentData().toInt())); });
  connect(loader_, &ComparisonLoader::loaded, this, [this](std::vector<ComparedRun>* runs) {
    setRuns(std::move(*runs));
    // A TensorBoard log read only in part says so under the buttons (its file and why).
    QStringList warnings;
    for (const ComparedRun& r : runs_) warnings << r.warnings;
    status_->setText(warnings.join(QLatin1Char('\n')));
    Q_EMIT loaded();
  });
  connect(loader_, &ComparisonLoader::failed, this, [this](const QString& error) {
    status_->setText(error);
    Q_EMIT message(error);
  });
  resize(1300, 850);
}

ComparisonWindow::~ComparisonWindow() {
  // The charts let go of the stores before the runs (and their stores) go.
  loss_->setSources({});
  throughput_->setSources({});
}

bool ComparisonWindow::busy() const {
  return loader_->busy();
}

void ComparisonWindow::load(const QStringList& paths) {
  paths_ = paths;
  status_->setText(tr("Reading %n run(s)…", nullptr, int(paths.size())));
  loader_->load(paths);
}

void ComparisonWindow::setRuns(std::vector<ComparedRun> runs) {
  std::vector<ComparedRun> previous = std::move(runs_);
  runs_ = std::move(runs);
  paths_.clear();
  for (const ComparedRun& r : runs_) paths_ << r.path;
  refresh();  // the charts switch to the new stores before the previous ones go
}

void ComparisonWindow::setXAxis(CompareX axis) {
  axis_ = axis;
  xAxisBox_->setCurrentIndex(xAxisBox_->findData(int(axis)));
  loss_->setXAxis(DifferenceChart::chartAxis(axis));
  throughput_->setXAxis(DifferenceChart::chartAxis(axis));
  updateDifference();
}

void ComparisonWindow::setMatching(Matching matching) {
  matching_ = matching;
  matchBox_->setCurrentIndex(matchBox_->findData(int(matching)));
  updateDifference();
}

void ComparisonWindow::setDifference(int reference, int other, CompareMetric metric) {
  const QSignalBlocker a(referenceBox_), b(otherBox_), c(metricBox_);
  referenceBox_->setCurrentIndex(reference);
  otherBox_->setCurrentIndex(other);
  metricBox_->setCurrentIndex(metricBox_->findData(int(metric)));
  updateDifference();
}

void ComparisonWindow::refresh() {
  ChartSources sources;
  std::vector<QColor> colors;
  int imported = 0;
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    sources.push_back({runs_[i].label, runs_[i].store.get(), runs_[i].imported});
    // The colours LossChart gives runs (by position) and imported series (from the far end).
    colors.push_back(SeriesChart::paletteColor(runs_[i].imported ? 9 - imported++ : int(i)));
  }
  loss_->setSources(sources);
  throughput_->setSources(sources);
  model_->setTable(buildTable(runs_), std::move(colors));
  table_->resizeColumnsToContents();
  fillPairChoices();
  updateDifference();
}

void ComparisonWindow::fillPairChoices() {
  const QSignalBlocker a(referenceBox_), b(otherBox_);
  referenceBox_->clear();
  otherBox_->clear();
  for (const ComparedRun& r : runs_) {
    referenceBox_->addItem(r.label);
    otherBox_->addItem(r.label);
  }
  referenceBox_->setCurrentIndex(runs_.empty() ? -1 : 0);
  otherBox_->setCurrentIndex(runs_.size() > 1 ? 1 : -1);
}

void ComparisonWindow::updateDifference() {
  const int ref = referenceBox_->currentIndex(), other = otherBox_->currentIndex();
  const auto metric = CompareMetric(metricBox_->currentData().toInt());
  if (ref < 0 || other < 0 || ref >= int(runs_.size()) || other >= int(runs_.size()) ||
      ref == other) {
    diff_ = CurveDiff{};
    difference_->setDifference({}, axis_, {});
    diffText_->setText(tr("Choose two runs to see the difference of their curves."));
    return;
  }
  diff_ = diffCurves(extractCurve(*runs_[std::size_t(ref)].store, metric, axis_),
                     extractCurve(*runs_[std::size_t(other)].store, metric, axis_), matching_);
  const QString name =
      QStringLiteral("%1 − %2").arg(runs_[std::size_t(other)].label, runs_[std::size_t(ref)].label);
  difference_->setDifference(diff_.delta, axis_, name);
  diffText_->setText(differenceText());
}

QString ComparisonWindow::differenceText() const {
  return tr("%1: %2 (%3)")
      .arg(compareMetricName(CompareMetric(metricBox_->currentData().toInt())),
           describeDiff(diff_, axis_), matchingDescription(matching_));
}

bool ComparisonWindow::exportTableCsv(const QString& path, QString* error) {
  return writeTableCsv(runs_, axis_, matching_, path, error);
}

bool ComparisonWindow::exportChartPng(const QString& path) {
  // The chart's size on screen, but never a thumbnail (a window not shown yet, a narrow pane).
  const QSize size = loss_->plot()->size().expandedTo(QSize(800, 500));
  return loss_->savePng(path, size.width(), size.height());
}

void ComparisonWindow::addTensorBoardDialog() {
  const QString dir =
      chooseDir_ ? chooseDir_()
                 : QFileDialog::getExistingDirectory(this, tr("TensorBoard log directory"));
  if (dir.isEmpty()) return;
  load(paths_ + QStringList{dir});
}

void ComparisonWindow::exportTableDialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the table as CSV"), QStringLiteral("comparison.csv"), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportTableCsv(path, &error)) Q_EMIT message(error);
}

void ComparisonWindow::exportPngDialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the chart as PNG"), QStringLiteral("comparison.png"), tr("PNG (*.png)"));
  if (!path.isEmpty() && !exportChartPng(path)) Q_EMIT message(tr("cannot write '%1'").arg(path));
}

}  // namespace ddpdesk
