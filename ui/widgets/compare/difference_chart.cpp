#include "compare/difference_chart.h"

#include <qcustomplot.h>
#include <cmath>

#include "metrics/metrics_store.h"

namespace ddpdesk {

DifferenceChart::DifferenceChart(QWidget* parent)
    : SeriesChart(tr("Difference"), tr("difference"), parent),
      store_(std::make_unique<MetricsStore>()) {
  setSmoothing(0);
  // y = 0: the line both runs agree on.
  auto* zero = new QCPItemStraightLine(plot());
  zero->point1->setCoords(0, 0);
  zero->point2->setCoords(1, 0);
  zero->setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));
  setSources({{QString(), store_.get()}});
}

DifferenceChart::~DifferenceChart() {
  setSources({});  // the chart lets go of the store before it goes
}

XAxis DifferenceChart::chartAxis(CompareX axis) {
  switch (axis) {
    case CompareX::Step:
      return XAxis::Step;
    case CompareX::Samples:
      return XAxis::Samples;
    case CompareX::Time:
      return XAxis::WallTime;
  }
  return XAxis::Step;
}

void DifferenceChart::setDifference(const ddpdesk::Curve& delta, CompareX axis,
                                    const QString& name) {
  name_ = name;
  store_->clear();
  // Only the column of `axis` is read; the step column counts points where x is not a step, so
  // the store keeps every one (it keeps one point per step).
  std::vector<wire::Message> messages;
  messages.reserve(delta.size());
  for (std::size_t i = 0; i < delta.size(); ++i) {
    wire::Step s;
    s.step = axis == CompareX::Step ? std::llround(delta.x[i]) : std::int64_t(i + 1);
    s.samples = axis == CompareX::Samples ? std::llround(delta.x[i]) : 0;
    s.time = axis == CompareX::Time ? delta.x[i] : 0;
    s.loss = s.global_loss = delta.y[i];
    s.lr = s.samples_per_s = std::nan("");
    messages.push_back(s);
  }
  store_->ingest(messages);
  store_->flush();
  setXAxis(chartAxis(axis));
  resetView();
  sync();
}

std::size_t DifferenceChart::pointCount() const {
  return store_->global().size();
}

std::vector<CurveDef> DifferenceChart::layout() const {
  if (name_.isEmpty() || store_->global().size() == 0) return {};
  CurveDef d;
  d.id = QStringLiteral("difference:") + name_;  // another pair: a curve of its own
  d.name = name_;
  d.kind = CurveDef::Kind::Global;
  d.value = CurveDef::Value::Loss;
  d.style.color = QColor(142, 68, 173);
  d.style.width = 1.5;
  d.style.smoothable = false;
  return {d};
}

}  // namespace ddpdesk
