// RunFollower: follows a run directory that ranks write into, wherever they run: every
// `metrics/rank-N.jsonl` (the worker writes it whenever it has a run directory) is polled with a
// MetricsTail, decoded with the one wire codec and handed out like the metrics socket's messages.
// Files may appear late, be replaced or truncated (a rank restarted) and end in half a line;
// every complete line is handed out exactly once.
//
// When a rank has ended: its last message says so ("finished" or "stopped" event, or an error),
// or, for a rank on this host, its pid (from its hello) is gone. A rank that writes again after
// that (a new hello: restarted) is running again. The run has ended once every rank of the world
// its hellos name has ended and the directory has stayed so for the settle time (late lines of
// a rank whose pid vanished just before its file was read, a restart right after a failure).
// A rank on another host that dies without a word is noticed only through a pid probe that can
// look there (setPidProbe: SshRunMirror's checks on the host it is connected to).
//
// The ranks' output files beside them (rank-N.log, RankOutputTails) are read in the same polls,
// first, so a failed rank's last lines are in before its ending is. So is metrics/system.jsonl,
// the system metrics a script run's monitor sampled for its ranks (ScriptMetrics): its gauges
// are handed out like the ranks' own; it says nothing about whether a rank runs or has ended.
#pragma once

#include <QByteArray>
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "wire.h"

namespace ddpdesk {

class MetricsTail;
class RankOutputTails;

class RunFollower : public QObject {
  Q_OBJECT
 public:
  struct Rank {
    int rank = 0;
    bool hello = false;     // its hello was read
    wire::Hello info;       // the latest hello (pid, host, world, device)
    QString lastWord;       // "finished", "stopped" or "error", from its file; empty while running
    QString error;          // its last error message
    int errorPeer = -1;     // the rank its error blames (the wire's `peer`: a peer it lost)
    bool gone = false;      // on this host, and its pid no longer exists
    bool reported = false;  // rankEnded() was emitted for the current ending
    QElapsedTimer heard;    // since its file last gave a line
    bool silent = false;    // running, and no line for the silent limit (rankSilent())
    bool ended() const { return !lastWord.isEmpty() || gone; }
    bool failed() const {
      return lastWord == QLatin1String("error") || (gone && lastWord.isEmpty());
    }
    // "finished", "stopped", "failed: ...", "exited without a ...", "silent for N s", "running"
    QString describe() const;
  };
  struct Counters {
    qint64 messages = 0;   // decoded lines handed out (hellos included)
    qint64 malformed = 0;  // lines the codec rejected, that named another rank, or (in
                           // metrics/system.jsonl) that were no gauge
    qint64 ignored = 0;    // lines of a message type this codec does not know
    qint64 restarts = 0;   // files read again from their start
  };

  explicit RunFollower(QObject* parent = nullptr);
  ~RunFollower() override;

  static QString metricsDir(const QString& runDir);          // <runDir>/metrics
  static QString rankFile(const QString& runDir, int rank);  // <runDir>/metrics/rank-N.jsonl

  // Starts polling `runDir` (which must be a directory; metrics/ may appear later). False with
  // *error (one line) otherwise.
  bool follow(const QString& runDir, QString* error = nullptr);
  void stop();
  // Where something else ends the run (a Slurm job, which Slurm may requeue after its ranks
  // ended): polling goes on after runEnded(), and a rank's new hello makes the run not ended
  // again (runEnded() is emitted again once all have ended once more).
  void setFollowAfterEnd(bool on) { follow_after_end_ = on; }
  // Default 250 ms; the settle time (default 1 s) is counted in polls of at least that long.
  void setPollInterval(int ms);
  void setSettleTime(int ms) { settle_ms_ = ms; }
  // A running rank whose file gives no line for this long is silent (0: never). Its pid may be
  // where nothing here can check it (another node): silence is what is left to notice.
  void setSilentLimit(int ms) { silent_ms_ = ms; }
  // Whether the process a hello names is alive: true/false, or nullopt when the probe cannot
  // tell. Replaces the default (kill(pid, 0) for ranks on this host).
  using PidProbe = std::function<std::optional<bool>(const wire::Hello&)>;
  void setPidProbe(PidProbe probe) { probe_ = std::move(probe); }

  // Reads every file now (also what the timer calls).
  void pollNow();

  int world() const { return world_; }  // from the hellos; 0 before the first
  const std::map<int, Rank>& ranks() const { return ranks_; }
  bool allEnded() const;  // every rank of the world has ended (not yet settled)
  bool hasEnded() const { return ended_; }
  Counters counters() const { return counters_; }
  // The last lines of the rank's rank-N.log (at most RankOutputTails::kKeptLines).
  QStringList outputTail(int rank) const;
  // Sends `signo` to every rank that runs on this host and is still alive; how many got it.
  int signalLocalRanks(int signo) const;
  static bool isThisHost(const std::string& host);

 Q_SIGNALS:
  void helloReceived(const ddpdesk::wire::Hello& hello);
  // Decoded messages of one file's poll, in order (hellos excluded), and their lines, each
  // ending in '\n'.
  void messagesReceived(const std::vector<ddpdesk::wire::Message>& messages,
                        const QByteArray& lines);
  void malformedLines(int rank, int count, const QString& lastError);
  void rankRestarted(int rank, const QString& why);
  // A line of the rank's rank-N.log (its stdout and stderr together).
  void outputLine(int rank, const QString& line);
  void rankEnded(int rank, const QString& how);
  // A running rank's file gave nothing for the silent limit / gave a line again.
  void rankSilent(int rank, qint64 seconds);
  void rankHeardAgain(int rank);
  // Every rank ended and the directory stayed so for the settle time; polling has stopped.
  void runEnded();

 private:
  void pollRank(int rank, MetricsTail& tail);
  void pollSystem();
  void discoverFiles();
  void checkEnd();

  QString dir_;
  QTimer timer_;
  int settle_ms_ = 1000;
  int silent_ms_ = 0;
  PidProbe probe_;
  std::map<int, std::unique_ptr<MetricsTail>> tails_;
  std::unique_ptr<RankOutputTails> outputs_;
  std::unique_ptr<MetricsTail> system_;  // metrics/system.jsonl
  std::map<int, Rank> ranks_;
  int world_ = 0;
  bool ended_ = false;
  bool follow_after_end_ = false;
  bool settling_ = false;
  QElapsedTimer settle_;
  Counters counters_;
};

}  // namespace ddpdesk
