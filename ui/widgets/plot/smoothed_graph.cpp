#include "plot/smoothed_graph.h"

#include <qcustomplot.h>
#include <algorithm>
#include <cmath>

namespace ddpdesk {

SmoothedGraph::SmoothedGraph(QCustomPlot* plot, QCPAxis* keyAxis, QCPAxis* valueAxis,
                             const QString& name, const CurveStyle& style, double smoothing)
    : plot_(plot), name_(name), style_(style) {
  raw_ = plot->addGraph(keyAxis, valueAxis);
  raw_->setName(name);
  raw_->setAdaptiveSampling(true);
  if (!style.line) raw_->setLineStyle(QCPGraph::lsNone);
  if (style.scatter)
    raw_->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, style.color.darker(150), style.color, 7));
  if (style.smoothable) {
    smooth_ = plot->addGraph(keyAxis, valueAxis);
    smooth_->setName(name);
    smooth_->setAdaptiveSampling(true);
    raw_->removeFromLegend();  // the smoothed graph carries the legend entry, in full colour
  }
  weight_ = style.smoothable ? std::clamp(smoothing, 0.0, 0.999) : 0.0;
  data_.setSmoothing(weight_);
  applyPens();
}

SmoothedGraph::~SmoothedGraph() {
  if (smooth_) plot_->removeGraph(smooth_);
  plot_->removeGraph(raw_);
}

void SmoothedGraph::applyPens() {
  QPen full(style_.color, style_.width, style_.pen);
  if (!smooth_) {
    raw_->setPen(style_.line ? full : QPen(Qt::NoPen));
    return;
  }
  smooth_->setPen(full);
  if (weight_ > 0) {
    // Faint enough to read the trend, visible enough to see the noise it hides. Mixed with the
    // white background rather than translucent: an opaque pen skips alpha blending, which made
    // up most of a redraw with a log axis (where noise spans many pixels per column).
    const QColor c = style_.color;
    const double a = 0.25;
    const QColor faint =
        QColor::fromRgbF(float(c.redF() * a + (1 - a)), float(c.greenF() * a + (1 - a)),
                         float(c.blueF() * a + (1 - a)));
    raw_->setPen(QPen(faint, 1.0));
  } else {
    raw_->setPen(full);
  }
}

QCPAbstractPlottable* SmoothedGraph::legendPlottable() const {
  return smooth_ ? static_cast<QCPAbstractPlottable*>(smooth_) : raw_;
}

void SmoothedGraph::append(const double* keys, const double* values, std::size_t n) {
  data_.append(keys, values, n);
}

void SmoothedGraph::extend(const ColumnView& x, const ColumnView& y, double scale, std::size_t to,
                           KeyMapper& mapper) {
  data_.extend(x, y, scale, to, mapper);
}

void SmoothedGraph::adopt(CurveData&& data) {
  data_ = std::move(data);
  if (data_.smoothing() != weight_) data_.setSmoothing(weight_);
  shown_ = Shown();
}

void SmoothedGraph::refresh(double lo, double hi, int pixels) {
  const bool smoothed = smooth_ && weight_ > 0;
  if (shown_.lo == lo && shown_.hi == hi && shown_.pixels == pixels &&
      shown_.size == data_.size() && shown_.smoothed == smoothed)
    return;
  shown_ = {lo, hi, pixels, data_.size(), smoothed};
  const LodSeries& rawSeries = data_.raw();
  const LodSeries& smoothSeries = data_.smoothed();
  QVector<QCPGraphData> pts;
  rawSeries.points(lo, hi, pixels, &pts);
  // An envelope is already one stroke per pixel column; QCustomPlot's sampling of it would
  // stroke each column twice. Raw points still get QCustomPlot's sampling.
  raw_->setAdaptiveSampling(rawSeries.lastLevel() < 0);
  raw_->data()->set(pts, rawSeries.sorted());
  if (!smooth_) return;
  if (smoothed) {
    smoothSeries.points(lo, hi, pixels, &pts);
    smooth_->setAdaptiveSampling(smoothSeries.lastLevel() < 0);
    smooth_->data()->set(pts, smoothSeries.sorted());
  } else {
    smooth_->data()->clear();
  }
}

void SmoothedGraph::clear() {
  raw_->data()->clear();
  if (smooth_) smooth_->data()->clear();
  data_.clear();
  shown_ = Shown();
}

CurveData SmoothedGraph::take() {
  CurveData out = std::move(data_);
  clear();
  return out;
}

void SmoothedGraph::setSmoothing(double weight, bool recompute) {
  if (!smooth_) return;
  weight_ = std::clamp(weight, 0.0, 0.999);
  applyPens();
  if (recompute) data_.setSmoothing(weight_);  // at 0 the raw graph is drawn in full colour
  shown_ = Shown();                            // the next refresh hands the graphs the new curve
}

void SmoothedGraph::setVisible(bool visible) {
  visible_ = visible;
  raw_->setVisible(visible);
  if (smooth_) smooth_->setVisible(visible);
}

}  // namespace ddpdesk
