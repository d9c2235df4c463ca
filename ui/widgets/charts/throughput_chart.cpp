#include "charts/throughput_chart.h"

#include <qcustomplot.h>

#include <QLabel>
#include <cmath>

#include "charts/loss_chart.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

// Whether a store's ranks count the samples they train: a Python script charted from what it
// prints or writes to TensorBoard, or one whose client logs no samples=, does not.
bool countsSamples(const MetricsStore& store) {
  return store.global().size() == 0 || store.progress().samples > 0;
}

bool hasAccuracy(const MetricsStore& store) {
  for (double a : store.evals().accuracy)
    if (!std::isnan(a)) return true;
  return false;
}

}  // namespace

ThroughputChart::ThroughputChart(QWidget* parent)
    : SeriesChart(tr("Throughput"), tr("samples/s"), parent) {
  plot()->yAxis2->setLabel(tr("validation accuracy"));
  note_ = new QLabel(plot());
  note_->setObjectName(QStringLiteral("throughputNote"));
  note_->setStyleSheet(QStringLiteral("color: #808080;"));
  note_->setAttribute(Qt::WA_TransparentForMouseEvents);
  note_->move(60, 40);
  note_->hide();
}

bool ThroughputChart::showsNote() const {
  return !note_->isHidden();
}

QString ThroughputChart::noteText() const {
  return note_->text();
}

std::vector<CurveDef> ThroughputChart::layout() const {
  std::vector<CurveDef> out;
  bool uncounted = false;
  const ChartSources& src = sources();
  const bool overlay = runCount(src) > 1;
  for (int s = 0; s < int(src.size()); ++s) {
    if (!src[s].store || src[s].imported) continue;  // imported series: the loss chart's
    const QString prefix = QStringLiteral("s%1/").arg(s);
    // A flat zero would read as a stalled run: a run without sample counts has no curve here.
    if (countsSamples(*src[s].store))
      LossChart::appendRunCurves(out, src, s, CurveDef::Value::RankSamplesPerSec,
                                 CurveDef::Value::SamplesPerSec);
    else
      uncounted = true;
    if (hasAccuracy(*src[s].store)) {
      CurveDef a;
      a.id = prefix + QStringLiteral("accuracy");
      a.name = overlay ? src[s].label + QStringLiteral(" (acc.)") : accuracyCurveName();
      a.source = s;
      a.kind = CurveDef::Kind::Eval;
      a.value = CurveDef::Value::EvalAccuracy;
      // A line with markers: a few points per run, one per epoch.
      a.style.color = overlay ? paletteColor(s) : QColor(230, 50, 50);
      a.style.smoothable = false;
      a.style.scatter = true;
      a.rightAxis = true;
      out.push_back(a);
    }
  }
  // layout() runs whenever a store changed: the note follows what there is to draw.
  if (uncounted && out.empty()) {
    note_->setText(
        tr("No throughput: the ranks report no sample counts\n"
           "(a script's client can: ddpdesk.log(..., samples=...))"));
    note_->adjustSize();
  }
  note_->setVisible(uncounted && out.empty());
  return out;
}

}  // namespace ddpdesk
