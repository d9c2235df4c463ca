#include "charts/csv_export.h"

#include <QBuffer>
#include <QSaveFile>
#include <cmath>

#include "metrics/metrics_store.h"

namespace ddpdesk {
namespace {

constexpr int kChunkBytes = 1 << 20;

class Writer {
 public:
  explicit Writer(QIODevice& dev) : dev_(dev) { buf_.reserve(kChunkBytes + 4096); }
  Writer& text(const char* s) {
    buf_ += s;
    return *this;
  }
  Writer& num(double v) {
    if (!std::isnan(v)) buf_ += QByteArray::number(v, 'g', 17);
    return *this;
  }
  Writer& comma() {
    buf_ += ',';
    return *this;
  }
  void endRow() {
    buf_ += '\n';
    if (buf_.size() >= kChunkBytes) flush();
  }
  bool flush() {
    if (!buf_.isEmpty() && dev_.write(buf_) != buf_.size()) ok_ = false;
    buf_.clear();
    return ok_;
  }

 private:
  QIODevice& dev_;
  QByteArray buf_;
  bool ok_ = true;
};

template <typename Series>
void steps(Writer& w, const char* kind, const QByteArray& rank, const Series& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    w.text(kind).comma().text(rank.constData()).comma();
    w.num(s.step[i]).comma().num(s.epoch[i]).comma().num(s.samples[i]).comma();
    w.num(s.time[i]).comma().num(s.loss[i]).comma().num(s.samplesPerSec[i]).comma();
    w.endRow();
  }
}

}  // namespace

QByteArray csvHeader() {
  return QByteArrayLiteral("series,rank,step,epoch,samples,time,loss,samples_per_s,accuracy");
}

bool writeMetricsCsv(const MetricsStore& store, QIODevice& out) {
  Writer w(out);
  w.text(csvHeader().constData()).endRow();
  for (int r = 0; r < store.rankCount(); ++r)
    steps(w, "rank", QByteArray::number(r), store.rankSeries(r));
  steps(w, "global", QByteArray(), store.global());
  const EvalSeries& e = store.evals();
  for (std::size_t i = 0; i < e.size(); ++i) {
    w.text("eval,,").num(e.step[i]).comma().num(e.epoch[i]).text(",,,").num(e.loss[i]);
    w.text(",,").num(e.accuracy[i]).endRow();
  }
  return w.flush();
}

bool writeMetricsCsv(const MetricsStore& store, const QString& path, QString* error) {
  QSaveFile f(path);
  const bool ok = f.open(QIODevice::WriteOnly) && writeMetricsCsv(store, f) && f.commit();
  if (!ok && error) *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
  return ok;
}

QByteArray metricsToCsv(const MetricsStore& store) {
  QByteArray out;
  QBuffer buf(&out);
  buf.open(QIODevice::WriteOnly);
  writeMetricsCsv(store, buf);
  return out;
}

}  // namespace ddpdesk
