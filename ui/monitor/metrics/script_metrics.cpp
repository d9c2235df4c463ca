#include "metrics/script_metrics.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>
#include <cctype>
#include <set>

#include "run/jsonl_append.h"
#include "system_sampler.h"

namespace ddpdesk {
namespace {

constexpr int kScriptPollMs = 1000;
// Event files written this long before the run began are an earlier run's (file times are
// whole seconds on some file systems).
constexpr int kFileClockSlackS = 2;

std::string lowerTag(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Whether a tag (lower case) names an evaluation: one of its words ("eval/loss", "val_loss",
// "Loss/validation") says so. Words are split at anything not a letter or digit.
bool isEvalTag(const std::string& tag) {
  static const std::set<std::string> words = {"val",  "valid",      "validation", "eval",
                                              "test", "evaluation", "dev"};
  std::string word;
  for (std::size_t i = 0; i <= tag.size(); ++i) {
    if (i < tag.size() && std::isalnum(static_cast<unsigned char>(tag[i]))) {
      word += tag[i];
      continue;
    }
    if (words.count(word)) return true;
    word.clear();
  }
  return false;
}

bool isLossTag(const std::string& tag) {
  return tag.find("loss") != std::string::npos;
}

QStringList eventFileRoots(const RunSpec& spec, const QString& runDir) {
  if (!spec.logdir.empty()) return {QString::fromStdString(spec.logdir)};
  QStringList roots{runDir};
  if (!spec.workdir.empty()) roots << QString::fromStdString(spec.workdir);
  return roots;
}

}  // namespace

ScriptMetrics::ScriptMetrics(const RunSpec& spec, const QString& runDir, IsConnected isConnected,
                             StepOf stepOf, Sink sink, QObject* parent)
    : QObject(parent),
      spec_(spec),
      is_connected_(std::move(isConnected)),
      step_of_(std::move(stepOf)),
      sink_(std::move(sink)),
      tail_(eventFileRoots(spec, runDir), QDateTime::currentDateTime().addSecs(-kFileClockSlackS)),
      started_epoch_s_(double(QDateTime::currentMSecsSinceEpoch()) / 1000.0),
      event_mean_(spec.world_size(), RankMean::kWaitS, RankMean::WaitFor::Reporters),
      mean_(spec.world_size()) {
  clock_.start();
  const QString pattern = QString::fromStdString(spec.loss_pattern);
  for (int r = 0; r < spec.world_size(); ++r)
    ranks_.push_back(Rank{OutputLossReader(pattern), {}, {}, false});
  timer_.setInterval(kScriptPollMs);
  connect(&timer_, &QTimer::timeout, this, &ScriptMetrics::poll);
  timer_.start();
}

ScriptMetrics::~ScriptMetrics() = default;

std::string ScriptMetrics::lossTag(int rank) const {
  return rank >= 0 && rank < int(ranks_.size()) ? ranks_[std::size_t(rank)].lossTag : "";
}

void ScriptMetrics::rankStarted(int rank, qint64 pid) {
  if (rank < 0 || rank >= int(ranks_.size()) || pid <= 0) return;
  SystemSampler::Options o;
  o.process = std::to_string(pid);
  // The device a torchrun script picks: cuda:LOCAL_RANK (every local rank is on this machine).
  if (spec_.device == "cuda") o.gpu_index = rank;
  ranks_[std::size_t(rank)].sampler = std::make_unique<SystemSampler>(o);
  ranks_[std::size_t(rank)].ended = false;
}

void ScriptMetrics::rankEnded(int rank) {
  if (rank < 0 || rank >= int(ranks_.size())) return;
  ranks_[std::size_t(rank)].sampler.reset();
  ranks_[std::size_t(rank)].ended = true;
  mean_.drop(rank, printed_);  // its last lines were read before its end
  queueSend();
}

void ScriptMetrics::line(int rank, const QString& text) {
  if (rank < 0 || rank >= int(ranks_.size())) return;
  Rank& r = ranks_[std::size_t(rank)];
  // The client or the event files give this rank's loss: its printed ones do not count.
  if (is_connected_(rank) || !r.lossTag.empty()) {
    mean_.drop(rank, printed_);
    queueSend();
    return;
  }
  const double now = sinceStart();
  for (const OutputLoss& p : r.printed.read(text)) {
    wire::Step s;
    s.rank = rank;
    s.step = p.step;
    s.loss = p.loss;
    s.time = now;
    mean_.add(s, now, printed_);  // global_loss: the step's mean, once it is complete
  }
  queueSend();
}

void ScriptMetrics::queueSend() {
  if (printed_.empty() || send_queued_) return;
  send_queued_ = true;
  QMetaObject::invokeMethod(this, &ScriptMetrics::sendPrinted, Qt::QueuedConnection);
}

void ScriptMetrics::sendPrinted() {
  send_queued_ = false;
  if (printed_.empty()) return;
  std::vector<wire::Message> out;
  out.swap(printed_);
  sink_(out);
}

int ScriptMetrics::rankOfFile(const QString& path) const {
  static const QRegularExpression folder(QStringLiteral("(?:^|/)rank[-_]?(\\d+)(?:/|$)"),
                                         QRegularExpression::CaseInsensitiveOption);
  const QString dir = path.left(path.lastIndexOf(QLatin1Char('/')));
  int rank = 0;
  QRegularExpressionMatchIterator it = folder.globalMatch(dir);
  while (it.hasNext()) rank = it.next().captured(1).toInt();  // the innermost folder counts
  return rank < int(ranks_.size()) ? rank : 0;
}

// The rank's training loss: its first tag holding "loss" and no word of an evaluation.
bool ScriptMetrics::isTrainingLoss(const Rank& r, const std::string& tag) {
  const std::string lower = lowerTag(tag);
  return isLossTag(lower) && !isEvalTag(lower) && (r.lossTag.empty() || r.lossTag == tag);
}

void ScriptMetrics::readEventFiles(std::vector<wire::Message>& out) {
  // Steps stop waiting for a rank that reports through the client now or has ended (what its
  // files gained before its end still counts, below).
  for (int rank = 0; rank < int(ranks_.size()); ++rank)
    if (is_connected_(rank) || ranks_[std::size_t(rank)].ended) event_mean_.drop(rank, out);
  std::vector<TailedScalar> scalars = tail_.poll();
  // Every rank whose loss this read holds is waited for before any point goes in.
  for (const TailedScalar& p : scalars) {
    const int rank = rankOfFile(p.file);
    if (!is_connected_(rank) && isTrainingLoss(ranks_[std::size_t(rank)], p.tag))
      event_mean_.expect(rank);
  }
  for (TailedScalar& p : scalars) {
    const int rank = rankOfFile(p.file);
    if (is_connected_(rank)) continue;
    Rank& r = ranks_[std::size_t(rank)];
    const std::string tag = lowerTag(p.tag);
    const double time = std::max(0.0, p.wallTime - started_epoch_s_);
    if (isTrainingLoss(r, p.tag)) {
      r.lossTag = p.tag;
      wire::Step s;
      s.rank = rank;
      s.step = p.step;
      s.loss = p.value;
      s.time = time;
      event_mean_.add(s, sinceStart(), out);  // global_loss: the step's mean, once complete
    } else if (isLossTag(tag) && isEvalTag(tag)) {
      wire::Eval e;
      e.rank = rank;
      e.step = p.step;
      e.loss = p.value;
      e.time = time;
      out.push_back(e);
    } else {
      wire::Gauge g;
      g.rank = rank;
      g.name = p.tag.substr(0, wire::kMaxGaugeName);
      g.value = p.value;
      g.time = time;
      g.step = p.step;
      out.push_back(g);
    }
  }
}

bool ScriptMetrics::recordSystemMetrics(const QString& path, QString* error) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  auto file = std::make_unique<QFile>(path);
  // A restarted or resumed run appends; a monitor killed mid-line left half of one
  // (jsonl_append.h).
  if (!openJsonlForAppend(*file, {}, error)) return false;
  system_file_ = std::move(file);
  return true;
}

void ScriptMetrics::poll() {
  for (int rank = 0; rank < int(ranks_.size()); ++rank)
    if (is_connected_(rank) || !ranks_[std::size_t(rank)].lossTag.empty())
      mean_.drop(rank, printed_);
  mean_.expire(sinceStart(), printed_);
  sendPrinted();  // first: the gauges below carry the rank's last step
  std::vector<wire::Message> out;
  const double now = sinceStart();
  for (int rank = 0; rank < int(ranks_.size()); ++rank) {
    SystemSampler* sampler = ranks_[std::size_t(rank)].sampler.get();
    if (!sampler) continue;
    const std::int64_t step = step_of_(rank);
    for (const SystemSampler::Value& v : sampler->sample(now)) {
      wire::Gauge g;
      g.rank = rank;
      g.name = v.name;
      g.value = v.value;
      g.unit = v.unit;
      g.time = now;
      g.step = step;
      out.push_back(g);
    }
  }
  if (system_file_ && !out.empty()) {  // the samples (the event files' come below)
    QByteArray lines;
    for (const wire::Message& m : out) lines += QByteArray::fromStdString(wire::encode(m)) + '\n';
    system_file_->write(lines);
    system_file_->flush();
  }
  readEventFiles(out);
  event_mean_.expire(now, out);
  if (!out.empty()) sink_(out);
}

void ScriptMetrics::finish() {
  mean_.flush(printed_);
  sendPrinted();
  timer_.stop();
  for (Rank& r : ranks_) r.sampler.reset();
  std::vector<wire::Message> out;
  readEventFiles(out);
  event_mean_.flush(out);
  if (!out.empty()) sink_(out);
}

void ScriptMetrics::restart() {
  mean_.reset();
  event_mean_.reset();
  timer_.start();
}

}  // namespace ddpdesk
