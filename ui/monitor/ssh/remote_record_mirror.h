// RemoteRecordMirror: turns the remote follow loop's records (remote_follow_script.h), fed in
// whatever chunks ssh delivers them, into a local mirror of the remote run directory: spec.json,
// status.json, metrics/rank-N.jsonl, metrics/system.jsonl and the ranks' output rank-N.log,
// holding exactly the bytes of each remote file read so far. A file read
// again from its start remotely is replaced by a new empty file here (a new inode), so the
// RunFollower that follows the mirror sees it restart just as it would see the remote file
// restart; every other byte is appended once, at the offset the remote side named (a record
// that does not continue the mirror is an error, never a silent gap or repeat).
//
// Remote pid checks ("A" records) and status.json ("U") take effect at the end of their poll
// ("T"): by then the bytes that poll read are in the mirror, so a rank that is gone, or a run
// that has ended, has its last lines there too.
// Qt Core only; no I/O besides the mirror's files.
#pragma once

#include <QString>
#include <QStringList>
#include <functional>
#include <map>
#include <optional>

#include "metrics/line_buffer.h"

namespace ddpdesk {

class RemoteRecordMirror {
 public:
  explicit RemoteRecordMirror(QString mirrorDir);  // the directory must exist

  // Applies every complete record in `data`; false with *error (one line) on a record that is
  // malformed or does not continue the mirror. Unknown record kinds are skipped.
  bool feed(const char* data, std::size_t n, QString* error);

  // Called before a mirror file is replaced (let the follower read what it still holds) and
  // after each complete remote poll.
  void setBeforeReset(std::function<void()> f) { before_reset_ = std::move(f); }
  void setOnPoll(std::function<void()> f) { on_poll_ = std::move(f); }

  // A new connection to the remote loop: what the last one left unfinished (a record cut in the
  // middle, pid checks of an unfinished poll) is dropped; the mirror's files stay as they are.
  void newConnection();
  // What the mirror holds, for the remote loop of a new connection to go on from
  // (remote_follow_script.h): per rank file "rank:inode:bytes:base64 of the first
  // min(bytes,128) bytes".
  QStringList resumeState() const;

  bool hasHello() const { return hello_; }  // of the current connection
  const QString& remoteHost() const { return host_; }
  qint64 polls() const { return polls_; }
  qint64 resets() const { return resets_; }
  // Whether `pid`, named by rank's hello, was alive at the last complete poll; nullopt when no
  // check of that pid has come yet.
  std::optional<bool> alive(int rank, qint64 pid) const;
  qint64 mirroredBytes(int rank) const;  // -1 before the rank's file appeared
  // Why the remote file was last read again from its start ("truncated", "rewritten", ...):
  // the mirror only ever replaces its copy, so its follower can only say "replaced".
  QString resetReason(int rank) const;

 private:
  bool apply(std::string_view record, QString* error);
  // A file's key in the records: "N" (metrics/rank-N.jsonl), "LN" (rank-N.log) or "M"
  // (metrics/system.jsonl); its path in the mirror, empty when the key is none of them.
  QString pathOf(const QByteArray& key) const;
  bool reset(const QByteArray& key, const QString& why, QString* error);
  bool append(const QByteArray& key, qint64 offset, const QByteArray& bytes, QString* error);

  QString dir_;
  LineBuffer lines_;
  bool hello_ = false;
  bool failed_ = false;
  QString host_;
  qint64 polls_ = 0;
  qint64 resets_ = 0;
  // By file key.
  std::map<QByteArray, qint64> sizes_;
  std::map<QByteArray, QString> reset_reasons_;
  std::map<QByteArray, QByteArray> inodes_;  // of the remote file, as its last "R" named it
  struct Check {
    qint64 pid = 0;
    bool alive = false;
  };
  std::map<int, Check> pending_, checked_;
  std::optional<QByteArray> pending_status_;  // status.json of the unfinished poll
  std::function<void()> before_reset_, on_poll_;
};

}  // namespace ddpdesk
