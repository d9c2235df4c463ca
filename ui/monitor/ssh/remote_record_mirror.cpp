#include "ssh/remote_record_mirror.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "follow/rank_output_tails.h"
#include "follow/run_follower.h"
#include "run/atomic_file.h"
#include "run/run_directory.h"

namespace ddpdesk {
namespace {

// A "D" record holds at most 4 MiB of data as base64, plus its header.
constexpr std::size_t kMaxRecord = (4u << 20) / 3 * 4 + 64 + 4096;

bool toRank(const QByteArray& word, int* rank) {
  bool ok = false;
  *rank = word.toInt(&ok);
  return ok && *rank >= 0 && *rank < 10000000;
}

}  // namespace

RemoteRecordMirror::RemoteRecordMirror(QString mirrorDir)
    : dir_(std::move(mirrorDir)), lines_(kMaxRecord, LineBuffer::Overflow::Reject) {
  QDir().mkpath(RunFollower::metricsDir(dir_));
}

bool RemoteRecordMirror::feed(const char* data, std::size_t n, QString* error) {
  if (failed_) return false;
  const bool fit = lines_.feed(data, n, [&](std::string_view record) {
    if (!failed_ && !apply(record, error)) failed_ = true;
  });
  if (!fit && !failed_) {
    failed_ = true;
    if (error) *error = QStringLiteral("a record longer than %1 bytes").arg(kMaxRecord);
  }
  return !failed_;
}

bool RemoteRecordMirror::apply(std::string_view record, QString* error) {
  const QList<QByteArray> w =
      QByteArray::fromRawData(record.data(), qsizetype(record.size())).split(' ');
  auto bad = [&] {
    if (error)
      *error = QStringLiteral("malformed record '%1'")
                   .arg(QString::fromLatin1(record.substr(0, 60).data(),
                                            qsizetype(std::min<std::size_t>(record.size(), 60))));
    return false;
  };
  const QByteArray kind = w.value(0);
  int rank = 0;
  if (kind == "H") {
    if (w.size() < 3) return bad();
    hello_ = true;
    host_ = QString::fromLocal8Bit(w[2]);
    return true;
  }
  if (kind == "S") {
    const auto spec =
        QByteArray::fromBase64Encoding(w.value(1), QByteArray::AbortOnBase64DecodingErrors);
    if (w.size() != 2 || !spec) return bad();
    return writeFileAtomically(RunDirectory::specPath(dir_), *spec, error);
  }
  if (kind == "U") {
    const auto status =
        QByteArray::fromBase64Encoding(w.value(1), QByteArray::AbortOnBase64DecodingErrors);
    if (w.size() != 2 || !status) return bad();
    pending_status_ = *status;
    return true;
  }
  if (kind == "A") {
    bool pidOk = false;
    const qint64 pid = w.value(2).toLongLong(&pidOk);
    if (w.size() != 4 || !toRank(w[1], &rank) || !pidOk || (w[3] != "0" && w[3] != "1"))
      return bad();
    pending_[rank] = Check{pid, w[3] == "1"};
    return true;
  }
  if (kind == "R") {
    if (w.size() < 2 || pathOf(w[1]).isEmpty()) return bad();
    inodes_[w[1]] = w.value(3);
    return reset(w[1], QString::fromLatin1(w.value(2)), error);
  }
  if (kind == "D") {
    bool offOk = false;
    const qint64 offset = w.value(2).toLongLong(&offOk);
    const auto bytes =
        QByteArray::fromBase64Encoding(w.value(3), QByteArray::AbortOnBase64DecodingErrors);
    if (w.size() != 4 || pathOf(w[1]).isEmpty() || !offOk || !bytes) return bad();
    return append(w[1], offset, *bytes, error);
  }
  if (kind == "T") {
    for (const auto& [r, c] : pending_) checked_[r] = c;
    pending_.clear();
    if (pending_status_ &&
        !writeFileAtomically(RunDirectory::statusPath(dir_), *pending_status_, error))
      return false;
    pending_status_.reset();
    ++polls_;
    if (on_poll_) on_poll_();
    return true;
  }
  return true;  // a newer loop's record: nothing this side knows to do with it
}

QString RemoteRecordMirror::pathOf(const QByteArray& key) const {
  int rank = 0;
  if (key == "M") return RunDirectory::systemMetricsPath(dir_);
  if (key.startsWith('L'))
    return toRank(key.mid(1), &rank) ? RankOutputTails::outputFile(dir_, rank) : QString();
  return toRank(key, &rank) ? RunFollower::rankFile(dir_, rank) : QString();
}

bool RemoteRecordMirror::reset(const QByteArray& key, const QString& why, QString* error) {
  if (sizes_.count(key) && before_reset_) before_reset_();
  if (sizes_.count(key)) ++resets_;
  if (!writeFileAtomically(pathOf(key), QByteArray(), error)) return false;
  sizes_[key] = 0;
  reset_reasons_[key] = why;
  return true;
}

bool RemoteRecordMirror::append(const QByteArray& key, qint64 offset, const QByteArray& bytes,
                                QString* error) {
  const auto it = sizes_.find(key);
  if (it == sizes_.end() || it->second != offset) {
    if (error)
      *error = QStringLiteral("%1's bytes from offset %2 do not continue the %3 bytes read")
                   .arg(QFileInfo(pathOf(key)).fileName())
                   .arg(offset)
                   .arg(it == sizes_.end() ? 0 : it->second);
    return false;
  }
  QFile f(pathOf(key));
  if (!f.open(QIODevice::WriteOnly | QIODevice::Append) || f.write(bytes) != bytes.size()) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(f.fileName(), f.errorString());
    return false;
  }
  it->second += bytes.size();
  return true;
}

void RemoteRecordMirror::newConnection() {
  lines_.clear();
  pending_.clear();
  pending_status_.reset();
  hello_ = false;
}

QStringList RemoteRecordMirror::resumeState() const {
  QStringList out;
  for (const auto& [key, size] : sizes_) {
    QFile f(pathOf(key));
    const QByteArray head = f.open(QIODevice::ReadOnly) ? f.read(std::min<qint64>(size, 128)) : "";
    const auto inode = inodes_.find(key);
    out << QStringLiteral("%1:%2:%3:%4")
               .arg(QString::fromLatin1(key))
               .arg(QString::fromLatin1(inode == inodes_.end() ? QByteArray() : inode->second))
               .arg(size)
               .arg(QString::fromLatin1(head.toBase64()));
  }
  return out;
}

std::optional<bool> RemoteRecordMirror::alive(int rank, qint64 pid) const {
  const auto it = checked_.find(rank);
  if (it == checked_.end() || it->second.pid != pid) return std::nullopt;
  return it->second.alive;
}

QString RemoteRecordMirror::resetReason(int rank) const {
  const auto it = reset_reasons_.find(QByteArray::number(rank));
  return it == reset_reasons_.end() ? QString() : it->second;
}

qint64 RemoteRecordMirror::mirroredBytes(int rank) const {
  const auto it = sizes_.find(QByteArray::number(rank));
  return it == sizes_.end() ? -1 : it->second;
}

}  // namespace ddpdesk
