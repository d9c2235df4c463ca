// TensorBoardTail: the scalars a running program writes to TensorBoard event files, read as they
// are written. Each poll() looks for event files (events.out.tfevents.*) below the roots it was
// given, at most a few folders deep, skipping hidden folders and files last written before the
// tail began (an earlier run's logs in the same folder are not this run's), and reads what each
// file gained since the last poll: complete records only, so a record the writer is still
// writing waits for the next poll; a corrupt record ends that file, said once in problems().
// Plain file reading with ddpdesk_tensorboard's decoder: no timers, no threads (the owner polls).
#pragma once

#include <QDateTime>
#include <QHash>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpdesk {

struct TailedScalar {
  QString file;  // the event file's absolute path
  std::string tag;
  std::int64_t step = 0;
  double wallTime = 0;  // seconds since the Unix epoch, as the writer stamped it
  double value = 0;
};

class TensorBoardTail {
 public:
  // `notBefore`: files last modified earlier are left alone (invalid: read every file).
  // `maxReadBytes`: what one poll reads of a file at most, beyond one whole record (files with
  // images or histograms grow by megabytes; the rest comes with the next polls).
  explicit TensorBoardTail(QStringList roots, QDateTime notBefore = QDateTime(), int maxDepth = 4,
                           qint64 maxReadBytes = 8 << 20);

  // The scalars written since the last poll, file by file in the order each was written.
  std::vector<TailedScalar> poll();

  int files() const { return int(files_.size()); }  // event files being read
  // One line per file that cannot be read on: "<path>: <reason>".
  const QStringList& problems() const { return problems_; }

 private:
  struct File {
    qint64 offset = 0;  // where the next unread record starts
    bool dead = false;  // corrupt or unreadable: not read again
  };
  void find(const QString& dir, int depth, int* visited);
  void read(const QString& path, File& f, std::vector<TailedScalar>& out);

  QStringList roots_;
  QDateTime not_before_;
  int max_depth_;
  qint64 max_read_;
  QHash<QString, File> files_;
  QStringList order_;  // files_ in the order found
  QStringList problems_;
};

}  // namespace ddpdesk
