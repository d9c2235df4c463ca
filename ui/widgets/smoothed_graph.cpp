#include "smoothed_graph.h"

#include <qcustomplot.h>
#include <algorithm>
#include <cmath>

namespace ddpdesk {

void Extent::add(double key, double value) {
  if (!std::isfinite(key)) return;
  keyMin = std::min(keyMin, key);
  keyMax = std::max(keyMax, key);
  if (!std::isfinite(value)) return;
  valueMin = std::min(valueMin, value);
  valueMax = std::max(valueMax, value);
  if (value > 0) positiveMin = std::min(positiveMin, value);
}

void Extent::unite(const Extent& o) {
  keyMin = std::min(keyMin, o.keyMin);
  keyMax = std::max(keyMax, o.keyMax);
  valueMin = std::min(valueMin, o.valueMin);
  valueMax = std::max(valueMax, o.valueMax);
  positiveMin = std::min(positiveMin, o.positiveMin);
}

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
  weight_ = style.smoothable ? smoothing : 0.0;
  ema_.setWeight(weight_);
  applyPens();
}

SmoothedGraph::~SmoothedGraph() {
  if (smooth_) plot_->removeGraph(smooth_);
  plot_->removeGraph(raw_);
}

void SmoothedGraph::applyPens() {
  QPen full(style_.color, style_.width);
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

void SmoothedGraph::append(const QVector<QCPGraphData>& points) {
  const bool smoothing = smooth_ && weight_ > 0;
  std::vector<double> keys(std::size_t(points.size())), values(keys.size()), smoothed;
  if (smoothing) smoothed.resize(keys.size());
  for (int i = 0; i < points.size(); ++i) {
    const QCPGraphData& p = points[i];
    extent_.add(p.key, p.value);
    keys[i] = p.key;
    values[i] = p.value;
    if (smoothing) smoothed[i] = ema_.next(p.value);
  }
  raw_series_.append(keys.data(), values.data(), keys.size());
  if (smoothing) smooth_series_.append(keys.data(), smoothed.data(), keys.size());
}

void SmoothedGraph::refresh(double lo, double hi, int pixels) {
  const bool smoothed = smooth_ && weight_ > 0;
  if (shown_.lo == lo && shown_.hi == hi && shown_.pixels == pixels &&
      shown_.size == raw_series_.size() && shown_.smoothed == smoothed)
    return;
  shown_ = {lo, hi, pixels, raw_series_.size(), smoothed};
  QVector<QCPGraphData> pts;
  raw_series_.points(lo, hi, pixels, &pts);
  // An envelope is already one stroke per pixel column; QCustomPlot's sampling of it would
  // stroke each column twice. Raw points still get QCustomPlot's sampling.
  raw_->setAdaptiveSampling(raw_series_.lastLevel() < 0);
  raw_->data()->set(pts, raw_series_.sorted());
  if (!smooth_) return;
  if (smoothed) {
    smooth_series_.points(lo, hi, pixels, &pts);
    smooth_->setAdaptiveSampling(smooth_series_.lastLevel() < 0);
    smooth_->data()->set(pts, smooth_series_.sorted());
  } else {
    smooth_->data()->clear();
  }
}

void SmoothedGraph::clear() {
  raw_->data()->clear();
  if (smooth_) smooth_->data()->clear();
  raw_series_.clear();
  smooth_series_.clear();
  ema_.reset();
  extent_ = Extent();
  shown_ = Shown();
}

void SmoothedGraph::setSmoothing(double weight) {
  if (!smooth_) return;
  weight_ = std::clamp(weight, 0.0, 0.999);
  ema_.setWeight(weight_);
  applyPens();
  smooth_series_.clear();
  shown_ = Shown();          // the next refresh hands the graphs the new curve
  if (weight_ <= 0) return;  // the raw graph is drawn in full colour instead
  // In slices, so the temporary copies stay small however long the series is.
  const std::size_t n = raw_series_.size();
  std::vector<double> keys, smoothed;
  for (std::size_t from = 0; from < n; from += ChunkedColumn::kChunk) {
    const std::size_t to = std::min(n, from + ChunkedColumn::kChunk);
    keys.clear();
    smoothed.clear();
    for (std::size_t i = from; i < to; ++i) {
      keys.push_back(raw_series_.key(i));
      smoothed.push_back(ema_.next(raw_series_.value(i)));
    }
    smooth_series_.append(keys.data(), smoothed.data(), keys.size());
  }
}

void SmoothedGraph::setVisible(bool visible) {
  visible_ = visible;
  raw_->setVisible(visible);
  if (smooth_) smooth_->setVisible(visible);
}

}  // namespace ddpdesk
