#include "charts/csv_export.h"

#include <QBuffer>
#include <QSaveFile>
#include <cmath>

#include "metrics/metrics_store.h"
#include "metrics/step_breakdown.h"

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
  // RFC 4180: quoted, quotes doubled, where the text holds a comma, a quote or a line break.
  Writer& field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) {
      buf_.append(s.data(), qsizetype(s.size()));
      return *this;
    }
    buf_ += '"';
    for (char c : s) {
      if (c == '"') buf_ += '"';
      buf_ += c;
    }
    buf_ += '"';
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
    w.num(s.time[i]).comma().num(s.loss[i]).comma().num(s.samplesPerSec[i]).text(",,,,");
    w.endRow();
  }
}

void gauges(Writer& w, const GaugeSet& set) {
  for (int r = 0; r < set.rankCount(); ++r) {
    const QByteArray rank = QByteArray::number(r);
    for (const std::string& name : set.names()) {
      const GaugeSeries* g = set.find(r, name);
      if (!g) continue;
      for (std::size_t i = 0; i < g->size(); ++i) {
        w.text("gauge,").text(rank.constData()).comma().num(g->step[i]).text(",,");
        w.num(g->samples[i]).comma().num(g->time[i]).text(",,,,").field(g->name).comma();
        w.num(g->value[i]).comma().field(g->unit).endRow();
      }
    }
  }
}

void breakdowns(Writer& w, const MetricsStore& store) {
  for (int r = 0; r < store.rankCount(); ++r) {
    const QByteArray rank = QByteArray::number(r);
    const BreakdownSeries& b = store.breakdown(r);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const wire::StepTimes t = b.at(i);
      for (StepPart p : kStepParts) {
        if (p == StepPart::Comm && !t.comm_measured) continue;
        w.text("time_ms,").text(rank.constData()).comma().num(b.step[i]).text(",,,");
        w.num(b.time[i]).text(",,,,").text(stepPartName(p).toLatin1().constData()).comma();
        w.num(partMs(t, p)).text(",ms").endRow();
      }
      w.text("time_ms,").text(rank.constData()).comma().num(b.step[i]).text(",,,");
      w.num(b.time[i]).text(",,,,step,").num(t.step).text(",ms").endRow();
    }
  }
}

}  // namespace

QByteArray csvHeader() {
  return QByteArrayLiteral(
      "series,rank,step,epoch,samples,time,loss,samples_per_s,accuracy,name,value,unit");
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
    w.text(",,").num(e.accuracy[i]).text(",,,").endRow();
  }
  gauges(w, store.gauges());
  breakdowns(w, store);
  return w.flush();
}

bool writeMetricsCsv(const MetricsStore& store, const QString& path, QString* error) {
  QSaveFile f(path);
  // flush() first: commit() renames a file whose last flush failed (run/atomic_file.h).
  const bool ok =
      f.open(QIODevice::WriteOnly) && writeMetricsCsv(store, f) && f.flush() && f.commit();
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
