#include "charts/loss_chart.h"

#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

CurveStyle globalStyle(const QColor& color) {
  CurveStyle s;
  s.color = color;
  s.width = 2.0;
  return s;
}

CurveStyle evalStyle(const QColor& color) {
  CurveStyle s;
  s.color = color;
  s.smoothable = false;
  s.line = false;
  s.scatter = true;
  return s;
}

}  // namespace

LossChart::LossChart(QWidget* parent) : SeriesChart(tr("Loss"), tr("loss"), parent) {}

void LossChart::appendRunCurves(std::vector<CurveDef>& out, const ChartSources& src, int s,
                                CurveDef::Value rank_value, CurveDef::Value global_value) {
  const bool overlay = runCount(src) > 1;
  const QString prefix = QStringLiteral("s%1/").arg(s);
  if (!overlay) {
    for (int r = 0; r < src[s].store->rankCount(); ++r) {
      CurveDef d;
      d.id = prefix + QStringLiteral("rank%1").arg(r);
      d.name = rankCurveName(r);
      d.source = s;
      d.kind = CurveDef::Kind::Rank;
      d.rank = r;
      d.value = rank_value;
      d.style.color = paletteColor(r);
      d.style.width = 1.0;  // 1 px: the raster engine's fast path for lines
      out.push_back(d);
    }
  }
  CurveDef g;
  g.id = prefix + QStringLiteral("global");
  g.name = overlay ? src[s].label : globalCurveName();
  g.source = s;
  g.kind = CurveDef::Kind::Global;
  g.value = global_value;
  g.style = globalStyle(overlay ? paletteColor(s) : QColor(20, 20, 20));
  out.push_back(g);
}

std::vector<CurveDef> LossChart::layout() const {
  std::vector<CurveDef> out;
  const ChartSources& src = sources();
  const bool overlay = runCount(src) > 1;
  int imported = 0;
  for (int s = 0; s < int(src.size()); ++s) {
    if (!src[s].store) continue;
    const QString prefix = QStringLiteral("s%1/").arg(s);
    if (src[s].imported) {
      // An imported series has steps and wall times but no sample counts.
      if (xAxis() == XAxis::Samples) continue;
      CurveDef d;
      d.id = prefix + QStringLiteral("imported");
      d.name = src[s].label;
      d.source = s;
      d.kind = CurveDef::Kind::Global;
      d.value = CurveDef::Value::Loss;
      // Colours from the palette's far end: the runs' and ranks' come from its start.
      d.style = globalStyle(paletteColor(9 - imported++));
      out.push_back(d);
      continue;
    }
    appendRunCurves(out, src, s, CurveDef::Value::Loss, CurveDef::Value::Loss);
    CurveDef e;
    e.id = prefix + QStringLiteral("eval");
    e.name = overlay ? src[s].label + QStringLiteral(" (val.)") : evalCurveName();
    e.source = s;
    e.kind = CurveDef::Kind::Eval;
    e.value = CurveDef::Value::EvalLoss;
    e.style = evalStyle(overlay ? paletteColor(s) : QColor(230, 50, 50));
    if (!src[s].store->evals().step.empty()) out.push_back(e);
  }
  return out;
}

}  // namespace ddpdesk
