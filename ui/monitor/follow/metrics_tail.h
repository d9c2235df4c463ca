// MetricsTail: follows one rank's metrics file (metrics/rank-N.jsonl) by polling, the way a
// reader on another machine must: inotify does not see writes made by other NFS clients, and
// re-opening the file on every poll makes an NFS client revalidate its cached size
// (close-to-open consistency). Each poll hands out the complete lines appended since the last
// one, exactly once: a partial last line waits for its end, a file that appears late is read
// from its start, and a file that was replaced (another inode), truncated (shorter than what
// was read) or rewritten in place (its first bytes changed) is read again from its start as a
// new file, dropping the old one's unfinished line. Qt Core only; no thread of its own.
#pragma once

#include <sys/types.h>
#include <QString>
#include <functional>
#include <string>
#include <string_view>

#include "metrics/line_buffer.h"

namespace ddpdesk {

class MetricsTail {
 public:
  struct Poll {
    bool exists = false;     // the file is there now
    bool restarted = false;  // read again from its start (see restartReason)
    QString restartReason;   // "replaced", "truncated", "rewritten"
    qint64 bytes = 0;        // bytes read by this poll
    bool more = false;       // the poll stopped at its byte limit: poll again soon
  };

  explicit MetricsTail(QString path, qint64 maxBytesPerPoll = 8 << 20);

  // Reads what was appended since the last poll; on_line gets every complete line without its
  // '\n' (a line longer than the wire format allows comes out in pieces, which do not decode).
  Poll poll(const std::function<void(std::string_view)>& on_line);

  const QString& path() const { return path_; }
  qint64 offset() const { return offset_; }  // bytes of the current file consumed so far

 private:
  void restart();
  // Why the file is no longer the one read so far, judged by its first bytes now; empty if it
  // still is. Fewer of them than were read: truncated after fstat() gave its size.
  QString prefixChange(int fd) const;

  QString path_;
  qint64 max_bytes_;
  bool known_ = false;  // dev_/ino_ describe the file being read
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  qint64 offset_ = 0;
  std::string prefix_;  // the file's first bytes as read: a rewrite in place changes them
  LineBuffer lines_;
};

}  // namespace ddpdesk
