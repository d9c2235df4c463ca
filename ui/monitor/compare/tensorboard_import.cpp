#include "compare/tensorboard_import.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "event_file.h"
#include "metrics/metrics_store.h"

namespace ddpdesk {

QStringList TensorBoardLog::names() const {
  QStringList out;
  for (const TensorBoardSeries& s : series) out << s.name();
  return out;
}

const TensorBoardSeries* TensorBoardLog::find(const QString& name) const {
  for (const TensorBoardSeries& s : series)
    if (s.name() == name) return &s;
  return nullptr;
}

QString TensorBoardLog::suggested() const {
  const TensorBoardSeries* best = nullptr;
  for (const TensorBoardSeries& s : series) {
    if (!s.tag.contains(QLatin1String("loss"), Qt::CaseInsensitive)) continue;
    // Fewer directory levels first: a log's top-level loss over some rank's or sub-run's.
    if (!best || s.run.count(QLatin1Char('/')) + !s.run.isEmpty() <
                     best->run.count(QLatin1Char('/')) + !best->run.isEmpty())
      best = &s;
  }
  if (best) return best->name();
  return series.empty() ? QString() : series.front().name();
}

TensorBoardLog loadTensorBoardLog(const QString& dir) {
  TensorBoardLog log;
  log.root = QFileInfo(dir).absoluteFilePath();
  const QDir root(log.root);
  if (!root.exists()) {
    log.problems << QStringLiteral("%1: no such directory").arg(dir);
    return log;
  }
  QStringList paths;
  QDirIterator it(log.root, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString path = it.next();
    if (tb::is_event_file_name(it.fileName().toStdString())) paths << path;
  }
  // Names carry the creation time: sorted, a directory's files come in the order written.
  paths.sort();
  struct Point {
    qint64 step;
    double value, wall;
  };
  std::map<std::pair<QString, QString>, std::vector<Point>> points;  // (run, tag) -> in order
  for (const QString& path : paths) {
    const tb::EventFile f = tb::read_event_file(path.toStdString());
    ++log.files;
    const QString rel = root.relativeFilePath(path);
    if (!f.problem().empty())
      log.problems << rel + QStringLiteral(": ") + QString::fromStdString(f.problem());
    QString run = QFileInfo(rel).path();
    if (run == QLatin1String(".")) run.clear();
    for (const tb::ScalarPoint& p : f.scalars)
      points[{run, QString::fromStdString(p.tag)}].push_back({p.step, p.value, p.wall_time});
  }
  for (auto& [key, pts] : points) {
    TensorBoardSeries s;
    s.run = key.first;
    s.tag = key.second;
    // Stable: among points of one step, the one written last ends up last.
    std::stable_sort(pts.begin(), pts.end(),
                     [](const Point& a, const Point& b) { return a.step < b.step; });
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (i + 1 < pts.size() && pts[i + 1].step == pts[i].step) continue;
      s.step.push_back(pts[i].step);
      s.value.push_back(pts[i].value);
      s.wallTime.push_back(pts[i].wall);
    }
    log.series.push_back(std::move(s));
  }
  std::sort(
      log.series.begin(), log.series.end(),
      [](const TensorBoardSeries& a, const TensorBoardSeries& b) { return a.name() < b.name(); });
  if (paths.isEmpty())
    log.problems << QStringLiteral("no events.out.tfevents.* file under %1").arg(dir);
  else if (log.series.empty())
    log.problems << QStringLiteral("no scalars in the event files under %1").arg(dir);
  return log;
}

void fillStore(const TensorBoardSeries& series, MetricsStore& store) {
  store.clear();
  std::vector<wire::Message> messages;
  messages.reserve(series.size());
  const double wall0 = series.wallTime.empty() ? 0.0 : series.wallTime.front();
  for (std::size_t i = 0; i < series.size(); ++i) {
    wire::Step s;
    s.rank = 0;
    s.step = series.step[i];
    s.loss = series.value[i];
    s.global_loss = series.value[i];
    s.lr = std::nan("");
    s.samples_per_s = std::nan("");
    s.time = series.wallTime[i] - wall0;
    messages.push_back(s);
  }
  store.ingest(messages);
  store.flush();
}

}  // namespace ddpdesk
