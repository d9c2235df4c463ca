#include "charts/scalar_chart.h"

#include <qcustomplot.h>
#include <algorithm>

#include "metrics/metrics_store.h"

namespace ddpdesk {

ScalarChart::ScalarChart(const std::string& gauge, QWidget* parent)
    : SeriesChart(displayName(gauge), QString(), parent), gauge_(gauge) {}

QString ScalarChart::displayName(const std::string& gauge) {
  QString out = QString::fromUtf8(gauge.data(), qsizetype(gauge.size()));
  for (QChar& c : out) {
    const QChar::Category cat = c.category();
    if (cat == QChar::Other_Control || cat == QChar::Other_Format || cat == QChar::Separator_Line ||
        cat == QChar::Separator_Paragraph)
      c = QChar::ReplacementCharacter;
  }
  return out;
}

QString ScalarChart::curveName(int rank) {
  return QStringLiteral("rank %1").arg(rank);
}

std::vector<CurveDef> ScalarChart::layout() const {
  std::vector<CurveDef> out;
  const ChartSources& src = sources();
  const bool overlay = runCount(src) > 1;  // an imported series (no gauges) is not a run
  std::string unit;
  for (int s = 0; s < int(src.size()); ++s) {
    if (!src[s].store || src[s].imported) continue;
    const GaugeSet& gauges = src[s].store->gauges();
    for (int r = 0; r < gauges.rankCount(); ++r) {
      const GaugeSeries* g = gauges.find(r, gauge_);
      if (!g) continue;
      if (unit.empty()) unit = g->unit;
      CurveDef d;
      d.id = QStringLiteral("s%1/%2").arg(s).arg(r);
      d.name = overlay ? src[s].label + QLatin1Char(' ') + curveName(r) : curveName(r);
      d.source = s;
      d.kind = CurveDef::Kind::Gauge;
      d.rank = r;
      d.gauge = gauge_;
      d.style.color = paletteColor(overlay ? s : r);
      d.style.width = 1.0;
      out.push_back(d);
    }
  }
  // The unit the script gave, if any (the title already names the quantity).
  const QString label = displayName(unit);
  if (plot()->yAxis->label() != label) plot()->yAxis->setLabel(label);
  // A small chart: the legend wraps after 4 entries rather than running past its width.
  int curves = int(out.size());
  const int wrap = std::clamp(curves, 1, 4);
  if (plot()->legend->wrap() != wrap) {
    plot()->legend->setWrap(wrap);
    plot()->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  }
  return out;
}

}  // namespace ddpdesk
