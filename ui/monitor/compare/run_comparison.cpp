#include "compare/run_comparison.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <QtNumeric>
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "compare/tensorboard_import.h"
#include "metrics/metrics_store.h"
#include "system_gauges.h"

namespace ddpdesk {
namespace {

QString number(double v) {
  return std::isfinite(v) ? QString::number(v, 'g', 6) : QString();
}

QString exact(double v) {
  return std::isfinite(v) ? QString::number(v, 'g', 17) : QString();
}

// A spec field's value as a cell.
QString fieldText(const nlohmann::json& v) {
  return QString::fromStdString(field_value_text(v));
}

QByteArray csvCell(const QString& text) {
  QByteArray b = text.toUtf8();
  if (!b.contains(',') && !b.contains('"') && !b.contains('\n') && !b.contains('\r')) return b;
  b.replace("\"", "\"\"");
  return '"' + b + '"';
}

double lastOf(const Column& c) {
  return c.size() ? c.back() : qQNaN();
}

}  // namespace

ComparedRun::ComparedRun() : store(std::make_unique<MetricsStore>()) {}
ComparedRun::~ComparedRun() = default;
ComparedRun::ComparedRun(ComparedRun&&) noexcept = default;
ComparedRun& ComparedRun::operator=(ComparedRun&&) noexcept = default;

namespace {

QString notARun(const QString& path, const QString& why) {
  return QStringLiteral("'%1' is not a run: %2").arg(path, why);
}

}  // namespace

std::optional<ComparedRun> openComparedRun(const QString& path, QString* error) {
  auto fail = [&](const QString& why) -> std::optional<ComparedRun> {
    if (error) *error = notARun(path, why);
    return std::nullopt;
  };
  const QFileInfo info(path);
  if (!info.exists()) return fail(QStringLiteral("no such directory"));
  if (!info.isDir()) return fail(QStringLiteral("not a directory"));
  ComparedRun run;
  run.path = info.absoluteFilePath();
  run.label = info.fileName();
  if (!QFileInfo::exists(RunDirectory::specPath(path))) {
    run.imported = true;  // a TensorBoard log, if it holds event files
    return run;
  }
  const std::optional<RunRecord> record = RunDirectory::readRecord(path);
  if (!record || !record->specValid)
    return fail(QStringLiteral("spec.json is not a valid run spec"));
  run.spec = record->spec;
  run.status = record->status;
  return run;
}

bool importTensorBoard(ComparedRun& run, const TensorBoardLog& log, const QString& tag,
                       QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = notARun(run.path, why);
    return false;
  };
  if (log.files == 0)
    return fail(
        QStringLiteral("no spec.json (a run directory) and no events.out.tfevents.* files "
                       "(a TensorBoard log)"));
  const QString name = tag.isEmpty() ? log.suggested() : tag;
  const TensorBoardSeries* series = log.find(name);
  if (!series) {
    if (tag.isEmpty()) return fail(QStringLiteral("the TensorBoard log has no scalar series"));
    return fail(QStringLiteral("the TensorBoard log has no series '%1' (it has: %2)")
                    .arg(tag, log.names().join(QStringLiteral(", "))));
  }
  run.label = QFileInfo(run.path).fileName() + QLatin1Char('/') + name;
  run.series = name;
  fillStore(*series, *run.store);
  // Each problem begins with its file's path under the log directory: named in full here.
  run.warnings.clear();
  for (const QString& problem : log.problems)
    run.warnings << QStringLiteral("%1 (the points before it are compared)")
                        .arg(QDir(log.root).filePath(problem));
  return true;
}

std::optional<ComparedRun> loadComparedRun(const QString& path, const QString& tag,
                                           QString* error) {
  std::optional<ComparedRun> run = openComparedRun(path, error);
  if (!run) return run;
  if (run->imported) {
    if (!importTensorBoard(*run, loadTensorBoardLog(path), tag, error)) return std::nullopt;
    return run;
  }
  const MetricsStore::LoadResult r = run->store->loadJsonl(RunDirectory::metricsPath(path));
  if (!r.ok) {
    if (error)
      *error = notARun(path, QStringLiteral("metrics.jsonl cannot be read (%1)").arg(r.error));
    return std::nullopt;
  }
  return run;
}

bool isIdentityField(const std::string& key) {
  return key == "run_dir" || key == "resume" || key == "metrics_file" || key == "name" ||
         key == "on_end";
}

namespace {

// The largest value of gauge `name` over every rank; NaN when no rank sent it.
double peakOf(const MetricsStore& store, const char* name) {
  double peak = qQNaN();
  const GaugeSet& gauges = store.gauges();
  for (int r = 0; r < gauges.rankCount(); ++r)
    if (const GaugeSeries* g = gauges.find(r, name); g && std::isfinite(g->max()))
      peak = std::isnan(peak) ? g->max() : std::max(peak, g->max());
  return peak;
}

QString mib(double bytes) {
  return std::isfinite(bytes) ? QString::number(bytes / (1024.0 * 1024.0), 'f', 0) : QString();
}

bool anyFinite(const std::vector<RunSummary>& rows, double RunSummary::*field) {
  return std::any_of(rows.begin(), rows.end(),
                     [field](const RunSummary& s) { return std::isfinite(s.*field); });
}

}  // namespace

RunSummary summarize(const ComparedRun& run) {
  RunSummary s;
  s.label = run.label;
  const MetricsStore& store = *run.store;
  const GlobalSeries& g = store.global();
  if (run.status) s.state = run.status->state;
  const Curve loss = extractCurve(store, CompareMetric::Loss, CompareX::Step);
  s.steps = loss.empty() ? 0 : qint64(loss.x.back());
  s.finalLoss = loss.empty() ? qQNaN() : loss.y.back();
  s.bestLoss = loss.empty() ? qQNaN() : *std::min_element(loss.y.begin(), loss.y.end());
  s.valLoss = lastOf(store.evals().loss);
  s.accuracy = lastOf(store.evals().accuracy);
  const Curve time = extractCurve(store, CompareMetric::Loss, CompareX::Time);
  s.wallTime = time.empty() ? qQNaN() : time.x.back();
  const double samples = lastOf(g.samples);
  s.samplesPerSec = !run.imported && s.wallTime > 0 && samples > 0 ? samples / s.wallTime : qQNaN();
  s.globalBatch = run.spec ? run.spec->effective_batch() : 0;
  s.peakRss = peakOf(store, gauges::kRssBytes);
  s.peakGpu = peakOf(store, gauges::kGpuPeakBytes);
  if (std::isnan(s.peakGpu)) s.peakGpu = peakOf(store, gauges::kGpuProcessMemoryBytes);
  return s;
}

namespace {

// The spec as it ran: a dataset size of 0 ("the task's default") as the size it stands for, so a
// run on the default and one on 12000 images list 60000 and 12000, not 0 and 12000.
nlohmann::json specAsRun(const RunSpec& spec) {
  RunSpec s = spec;
  s.dataset_size = s.resolved_dataset_size();
  return to_json(s);
}

}  // namespace

ComparisonTable buildTable(const std::vector<ComparedRun>& runs) {
  ComparisonTable t;
  std::vector<nlohmann::json> specs;
  for (const ComparedRun& r : runs)
    if (r.spec) specs.push_back(specAsRun(*r.spec));
  std::vector<std::string> keys;
  if (!specs.empty())
    for (const auto& item : specs.front().items()) {
      const std::string& key = item.key();
      if (isIdentityField(key)) continue;
      const bool differs = std::any_of(specs.begin(), specs.end(), [&](const nlohmann::json& j) {
        return !j.contains(key) || j.at(key) != item.value();
      });
      if (differs) keys.push_back(key);
    }
  for (const std::string& k : keys) t.fields << QString::fromStdString(k);
  for (const ComparedRun& r : runs) {
    RunSummary s = summarize(r);
    const nlohmann::json j = r.spec ? specAsRun(*r.spec) : nlohmann::json::object();
    for (const std::string& k : keys) s.fields << (j.contains(k) ? fieldText(j.at(k)) : QString());
    t.rows.push_back(std::move(s));
  }
  return t;
}

QStringList ComparisonTable::header() const {
  QStringList h{QStringLiteral("run")};
  h << fields;
  h << QStringLiteral("global batch") << QStringLiteral("state") << QStringLiteral("steps")
    << QStringLiteral("final loss") << QStringLiteral("best loss") << QStringLiteral("val loss")
    << QStringLiteral("accuracy") << QStringLiteral("samples/s") << QStringLiteral("wall time s");
  if (anyFinite(rows, &RunSummary::peakRss)) h << QStringLiteral("peak RSS MiB");
  if (anyFinite(rows, &RunSummary::peakGpu)) h << QStringLiteral("peak GPU MiB");
  return h;
}

QStringList ComparisonTable::cells(std::size_t r) const {
  const RunSummary& s = rows.at(r);
  QStringList c{s.label};
  c << s.fields;
  c << (s.globalBatch > 0 ? QString::number(s.globalBatch) : QString()) << s.state
    << QString::number(s.steps) << number(s.finalLoss) << number(s.bestLoss) << number(s.valLoss)
    << number(s.accuracy)
    << (std::isfinite(s.samplesPerSec) ? QString::number(s.samplesPerSec, 'f', 0) : QString())
    << (std::isfinite(s.wallTime) ? QString::number(s.wallTime, 'f', 2) : QString());
  if (anyFinite(rows, &RunSummary::peakRss)) c << mib(s.peakRss);
  if (anyFinite(rows, &RunSummary::peakGpu)) c << mib(s.peakGpu);
  return c;
}

QByteArray tableCsv(const std::vector<ComparedRun>& runs, CompareX axis, Matching matching) {
  const ComparisonTable t = buildTable(runs);
  QStringList header{QStringLiteral("run"), QStringLiteral("path")};
  for (const QString& f : t.fields) header << f;
  header << QStringLiteral("global_batch") << QStringLiteral("state") << QStringLiteral("steps")
         << QStringLiteral("final_loss") << QStringLiteral("best_loss")
         << QStringLiteral("val_loss") << QStringLiteral("accuracy")
         << QStringLiteral("samples_per_s") << QStringLiteral("wall_time_s")
         << QStringLiteral("peak_rss_bytes") << QStringLiteral("peak_gpu_bytes")
         << QStringLiteral("loss_max_diff") << QStringLiteral("loss_rms_diff")
         << QStringLiteral("diff_points");
  QByteArray out;
  auto line = [&out](const QStringList& cells) {
    for (int i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csvCell(cells[i]);
    }
    out += '\n';
  };
  line(header);
  Curve reference;
  if (!runs.empty()) reference = extractCurve(*runs.front().store, CompareMetric::Loss, axis);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunSummary& s = t.rows[i];
    QStringList c{s.label, runs[i].path};
    c << s.fields;
    c << (s.globalBatch > 0 ? QString::number(s.globalBatch) : QString()) << s.state
      << QString::number(s.steps) << exact(s.finalLoss) << exact(s.bestLoss) << exact(s.valLoss)
      << exact(s.accuracy) << exact(s.samplesPerSec) << exact(s.wallTime) << exact(s.peakRss)
      << exact(s.peakGpu);
    if (i == 0) {
      c << QString() << QString() << QString();
    } else {
      const CurveDiff d =
          diffCurves(reference, extractCurve(*runs[i].store, CompareMetric::Loss, axis), matching);
      c << exact(d.maxAbs) << exact(d.rms) << QString::number(d.points);
    }
    line(c);
  }
  return out;
}

bool writeTableCsv(const std::vector<ComparedRun>& runs, CompareX axis, Matching matching,
                   const QString& path, QString* error) {
  QSaveFile f(path);
  // flush() first: commit() renames a file whose last flush failed (atomic_file.h).
  if (!f.open(QIODevice::WriteOnly) || f.write(tableCsv(runs, axis, matching)) < 0 || !f.flush() ||
      !f.commit()) {
    if (error) *error = QStringLiteral("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

QString curveName(const ComparedRun& run, CompareMetric metric) {
  if (run.imported && metric == CompareMetric::Loss)
    return QStringLiteral("TensorBoard series '%1'").arg(run.series);
  return compareMetricName(metric);
}

QString describeDiff(const CurveDiff& d, CompareX axis) {
  if (d.points == 0) return QStringLiteral("no common %1 range").arg(compareXName(axis));
  const QString x = compareXName(axis);
  return QStringLiteral("max |difference| %1 at %2 %3, RMS %4 over %5 points (%2 %6 to %7)")
      .arg(QString::number(d.maxAbs, 'g', 3), x, QString::number(d.maxAt, 'g', 8),
           QString::number(d.rms, 'g', 3), QString::number(d.points),
           QString::number(d.xFrom, 'g', 8), QString::number(d.xTo, 'g', 8));
}

}  // namespace ddpdesk
