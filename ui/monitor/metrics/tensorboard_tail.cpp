#include "metrics/tensorboard_tail.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>

#include "event.h"
#include "event_file.h"
#include "tfrecord.h"

namespace ddpdesk {
namespace {

// Folders visited per poll at most: a working directory may be a big project tree.
constexpr int kMaxTailFolders = 2000;

}  // namespace

TensorBoardTail::TensorBoardTail(QStringList roots, QDateTime notBefore, int maxDepth,
                                 qint64 maxReadBytes)
    : roots_(std::move(roots)),
      not_before_(std::move(notBefore)),
      max_depth_(maxDepth),
      max_read_(maxReadBytes) {
  roots_.removeAll(QString());
  for (QString& r : roots_) r = QFileInfo(r).absoluteFilePath();
  roots_.removeDuplicates();
}

void TensorBoardTail::find(const QString& dir, int depth, int* visited) {
  if (++*visited > kMaxTailFolders) return;
  const QFileInfoList entries =
      QDir(dir).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  for (const QFileInfo& e : entries) {
    if (e.isDir()) {
      // Links to folders could loop; hidden folders are caches and version control.
      if (depth < max_depth_ && !e.isSymLink() && !e.fileName().startsWith(QLatin1Char('.')))
        find(e.filePath(), depth + 1, visited);
      continue;
    }
    if (!tb::is_event_file_name(e.fileName().toStdString())) continue;
    const QString path = e.absoluteFilePath();
    if (files_.contains(path)) continue;
    if (not_before_.isValid() && e.lastModified() < not_before_) continue;
    files_.insert(path, File());
    order_.append(path);
  }
}

void TensorBoardTail::read(const QString& path, File& f, std::vector<TailedScalar>& out) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    f.dead = true;
    problems_.append(path + QStringLiteral(": ") + file.errorString());
    return;
  }
  if (file.size() <= f.offset || !file.seek(f.offset)) return;
  // At most max_read_ bytes, or the next record whole when it is longer (its length leads it).
  qint64 want = max_read_;
  const QByteArray head = file.peek(8);
  if (head.size() == 8) {
    quint64 length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | quint8(head[i]);
    if (length < quint64(file.size()))
      want = std::max(want, qint64(length) + qint64(tb::kRecordOverhead));
  }
  const QByteArray bytes = file.read(want);
  const qint64 base = f.offset;
  tb::RecordReader reader(std::string_view(bytes.constData(), std::size_t(bytes.size())));
  std::string_view data;
  tb::Event event;
  for (;;) {
    const tb::RecordReader::Status s = reader.next(&data);
    if (s == tb::RecordReader::Status::End || s == tb::RecordReader::Status::Truncated) break;
    if (s == tb::RecordReader::Status::Corrupt) {
      f.dead = true;
      problems_.append(path + QStringLiteral(": ") + QString::fromStdString(reader.reason()));
      break;
    }
    if (const std::string e = tb::decode_event(data, &event); !e.empty()) {
      f.dead = true;
      problems_.append(path + QStringLiteral(": ") + QString::fromStdString(e));
      break;
    }
    f.offset = base + qint64(reader.offset());
    for (tb::Scalar& s : event.scalars)
      out.push_back({path, std::move(s.tag), event.step, event.wall_time, s.value});
  }
}

std::vector<TailedScalar> TensorBoardTail::poll() {
  int visited = 0;
  for (const QString& root : roots_)
    if (QFileInfo(root).isDir()) find(root, 0, &visited);
  std::vector<TailedScalar> out;
  for (const QString& path : order_) {
    File& f = files_[path];
    if (!f.dead) read(path, f, out);
  }
  return out;
}

}  // namespace ddpdesk
