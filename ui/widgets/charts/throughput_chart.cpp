#include "charts/throughput_chart.h"

#include <qcustomplot.h>
#include <cmath>

#include "charts/loss_chart.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

bool hasAccuracy(const MetricsStore& store) {
  for (double a : store.evals().accuracy)
    if (!std::isnan(a)) return true;
  return false;
}

}  // namespace

ThroughputChart::ThroughputChart(QWidget* parent)
    : SeriesChart(tr("Throughput"), tr("samples/s"), parent) {
  plot()->yAxis2->setLabel(tr("validation accuracy"));
}

std::vector<CurveDef> ThroughputChart::layout() const {
  std::vector<CurveDef> out;
  const ChartSources& src = sources();
  const bool overlay = runCount(src) > 1;
  for (int s = 0; s < int(src.size()); ++s) {
    if (!src[s].store || src[s].imported) continue;  // imported series: the loss chart's
    const QString prefix = QStringLiteral("s%1/").arg(s);
    LossChart::appendRunCurves(out, src, s, CurveDef::Value::RankSamplesPerSec,
                               CurveDef::Value::SamplesPerSec);
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
  return out;
}

}  // namespace ddpdesk
