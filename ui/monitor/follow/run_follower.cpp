#include "follow/run_follower.h"

#include <signal.h>
#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <cerrno>

#include "follow/metrics_tail.h"
#include "follow/rank_output_tails.h"
#include "run/run_directory.h"

namespace ddpdesk {

QString RunFollower::Rank::describe() const {
  if (lastWord == QLatin1String("finished")) return QStringLiteral("finished");
  if (lastWord == QLatin1String("stopped")) return QStringLiteral("stopped");
  if (lastWord == QLatin1String("error")) return QStringLiteral("failed: ") + error;
  if (gone) return QStringLiteral("exited without a last message (pid %1 is gone)").arg(info.pid);
  if (silent) return QStringLiteral("silent for %1 s").arg(heard.elapsed() / 1000);
  return hello ? QStringLiteral("running") : QStringLiteral("waiting");
}

RunFollower::RunFollower(QObject* parent) : QObject(parent) {
  timer_.setInterval(250);
  connect(&timer_, &QTimer::timeout, this, &RunFollower::pollNow);
}

RunFollower::~RunFollower() = default;

QString RunFollower::metricsDir(const QString& runDir) {
  return RunDirectory::rankMetricsDir(runDir);
}

QString RunFollower::rankFile(const QString& runDir, int rank) {
  return RunDirectory::rankMetricsPath(runDir, rank);
}

bool RunFollower::isThisHost(const std::string& host) {
  char here[256] = {0};
  ::gethostname(here, sizeof here - 1);
  return host == here;
}

void RunFollower::setPollInterval(int ms) {
  timer_.setInterval(ms);
}

bool RunFollower::follow(const QString& runDir, QString* error) {
  const QFileInfo info(runDir);
  if (!info.isDir()) {
    if (error) *error = QStringLiteral("invalid run directory '%1': not a directory").arg(runDir);
    return false;
  }
  stop();
  dir_ = info.absoluteFilePath();
  tails_.clear();
  outputs_ = std::make_unique<RankOutputTails>(dir_);
  system_ = std::make_unique<MetricsTail>(RunDirectory::systemMetricsPath(dir_));
  ranks_.clear();
  world_ = 0;
  ended_ = settling_ = false;
  counters_ = Counters();
  timer_.start();
  pollNow();
  return true;
}

void RunFollower::stop() {
  timer_.stop();
}

void RunFollower::discoverFiles() {
  static const QRegularExpression name(QStringLiteral("^rank-(\\d{1,7})\\.jsonl$"));
  const QStringList files =
      QDir(metricsDir(dir_)).entryList({QStringLiteral("rank-*.jsonl")}, QDir::Files);
  for (const QString& f : files) {
    const auto m = name.match(f);
    if (!m.hasMatch()) continue;
    const int rank = m.captured(1).toInt();
    if (tails_.count(rank)) continue;
    tails_[rank] = std::make_unique<MetricsTail>(rankFile(dir_, rank));
    ranks_[rank].rank = rank;
  }
}

void RunFollower::pollNow() {
  if (dir_.isEmpty() || (ended_ && !follow_after_end_)) return;
  outputs_->poll([this](int rank, const QString& line) { Q_EMIT outputLine(rank, line); });
  discoverFiles();
  for (auto& [rank, tail] : tails_) pollRank(rank, *tail);
  pollSystem();
  // Only after the files: a rank that wrote its last line and exited between the two is read
  // as ended by its line (and the settle time covers the other order).
  for (auto& [rank, r] : ranks_) {
    if (!r.hello || r.gone || !r.lastWord.isEmpty()) continue;
    if (probe_) {
      r.gone = probe_(r.info) == std::optional<bool>(false);
      continue;
    }
    if (!isThisHost(r.info.host)) continue;
    if (::kill(pid_t(r.info.pid), 0) != 0 && errno == ESRCH) r.gone = true;
  }
  for (auto& [rank, r] : ranks_) {
    if (r.ended() && !r.reported) Q_EMIT rankEnded(rank, r.describe());
    r.reported = r.ended();
    const bool silent = silent_ms_ > 0 && r.hello && !r.ended() && r.heard.isValid() &&
                        r.heard.elapsed() >= silent_ms_;
    if (silent && !r.silent) {
      r.silent = true;
      Q_EMIT rankSilent(rank, r.heard.elapsed() / 1000);
    } else if (!silent && r.silent) {
      r.silent = false;
      Q_EMIT rankHeardAgain(rank);
    }
  }
  checkEnd();
}

void RunFollower::pollRank(int rank, MetricsTail& tail) {
  std::vector<wire::Message> batch;
  QByteArray lines;
  int bad = 0;
  QString lastError;
  Rank& r = ranks_[rank];
  auto deliver = [&] {
    if (bad > 0) Q_EMIT malformedLines(rank, bad, lastError);
    if (!batch.empty()) Q_EMIT messagesReceived(batch, lines);
    batch.clear();
    lines.clear();
    bad = 0;
  };
  for (;;) {
    const MetricsTail::Poll p = tail.poll([&](std::string_view line) {
      wire::Decoded d = wire::decode(line);
      if (d.kind == wire::Decoded::Kind::Blank) return;
      r.heard.start();
      if (d.kind == wire::Decoded::Kind::Ignored) {
        ++counters_.ignored;
        return;
      }
      if (d.kind == wire::Decoded::Kind::Malformed || wire::rank_of(*d.message) != rank) {
        ++counters_.malformed;
        ++bad;
        lastError = d.message ? QStringLiteral("message for rank %1 in rank %2's file")
                                    .arg(wire::rank_of(*d.message))
                                    .arg(rank)
                              : QString::fromStdString(d.error);
        return;
      }
      ++counters_.messages;
      if (const auto* h = std::get_if<wire::Hello>(&*d.message)) {
        deliver();  // what came before this hello belongs to the rank's previous life
        const bool again = r.hello;
        r.hello = true;
        r.info = *h;
        r.lastWord.clear();
        r.error.clear();
        r.errorPeer = -1;
        r.gone = false;
        world_ = std::max(world_, h->world);
        if (again) settling_ = ended_ = false;
        Q_EMIT helloReceived(*h);
        return;
      }
      if (const auto* e = std::get_if<wire::Event>(&*d.message)) {
        if (e->event == "finished" || e->event == "stopped")
          r.lastWord = QString::fromStdString(e->event);
      } else if (const auto* er = std::get_if<wire::Error>(&*d.message)) {
        r.lastWord = QStringLiteral("error");
        r.error = QString::fromStdString(er->message);
        r.errorPeer = er->peer;
      }
      batch.push_back(std::move(*d.message));
      lines.append(line.data(), qsizetype(line.size())).append('\n');
    });
    if (p.restarted) {
      ++counters_.restarts;
      Q_EMIT rankRestarted(rank, p.restartReason);
    }
    deliver();
    if (!p.more) break;
  }
}

void RunFollower::pollSystem() {
  for (;;) {
    std::vector<wire::Message> batch;
    QByteArray lines;
    const MetricsTail::Poll p = system_->poll([&](std::string_view line) {
      wire::Decoded d = wire::decode(line);
      if (d.kind == wire::Decoded::Kind::Blank) return;
      if (d.kind == wire::Decoded::Kind::Ignored) {
        ++counters_.ignored;
        return;
      }
      // Counted, not reported: the file is the monitor's, no rank's to name.
      if (d.kind == wire::Decoded::Kind::Malformed ||
          !std::holds_alternative<wire::Gauge>(*d.message)) {
        ++counters_.malformed;
        return;
      }
      ++counters_.messages;
      batch.push_back(std::move(*d.message));
      lines.append(line.data(), qsizetype(line.size())).append('\n');
    });
    if (!batch.empty()) Q_EMIT messagesReceived(batch, lines);
    if (!p.more) break;
  }
}

QStringList RunFollower::outputTail(int rank) const {
  return outputs_ ? outputs_->lastLines(rank) : QStringList();
}

bool RunFollower::allEnded() const {
  if (world_ == 0) return false;
  for (int k = 0; k < world_; ++k) {
    auto it = ranks_.find(k);
    if (it == ranks_.end() || !it->second.ended()) return false;
  }
  return true;
}

void RunFollower::checkEnd() {
  if (!allEnded()) {
    settling_ = false;
    return;
  }
  if (!settling_) {
    settling_ = true;
    settle_.start();
  }
  if (ended_ || settle_.elapsed() < settle_ms_) return;
  ended_ = true;
  if (!follow_after_end_) timer_.stop();
  Q_EMIT runEnded();
}

int RunFollower::signalLocalRanks(int signo) const {
  int n = 0;
  for (const auto& [rank, r] : ranks_)
    if (r.hello && !r.ended() && isThisHost(r.info.host) && r.info.pid > 0 &&
        ::kill(pid_t(r.info.pid), signo) == 0)
      ++n;
  return n;
}

}  // namespace ddpdesk
