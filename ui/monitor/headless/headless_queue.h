// `ddpdesk --headless --queue FILE` and `ddpdesk --headless --sweep FILE`: the queue in the
// terminal. A queue file is run entry by entry and kept current as it goes (so the same command
// after a crash continues it: the interrupted run resumes from its checkpoint, the rest follow);
// a sweep file is expanded, gets its sweep directory (sweep_directory.h) and runs as the queue
// in that directory. Needs a QCoreApplication.
#pragma once

#include <QString>
#include <optional>
#include <string>

// CLI11 stays out of this header, as out of spec_flags.h.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ddpdesk {

// Exit codes: 0 every entry finished, 1 some entry failed (or could not start), 2 bad input
// (one line naming the entry and field; nothing started or written; also a file that is not
// writable, or that another ddpdesk is running: RunQueue::claim), 128+signal when stopped
// with Ctrl+C (130) or SIGTERM (143): the running entry is then "stopped" and continues from its
// checkpoint at the next run of the queue. stopOnFailure, when given, overrides the file's.
int runQueueFile(const QString& path, std::optional<bool> stopOnFailure);
int runSweepFile(const QString& path, std::optional<bool> stopOnFailure);

// The flags: --queue FILE, --sweep FILE, --stop-on-failure.
class QueueOptions {
 public:
  explicit QueueOptions(CLI::App& app);
  QueueOptions(const QueueOptions&) = delete;  // the app writes into this object
  bool given() const;                          // --queue or --sweep (after parsing)
  // Whether `o` is one of these flags.
  bool owns(const CLI::Option* o) const {
    return o == queueOption_ || o == sweepOption_ || o == stopOption_;
  }
  // After parsing: 2 (its line printed) when --queue and --sweep come together or with run spec
  // flags (those belong in the files); -1 when fine.
  int check(const CLI::App& app) const;
  int run() const;

 private:
  std::string queue_, sweep_;
  CLI::Option* queueOption_;
  CLI::Option* sweepOption_;
  CLI::Option* stopOption_;
};

}  // namespace ddpdesk
