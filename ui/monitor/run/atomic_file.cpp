#include "run/atomic_file.h"

#include <QFileInfo>
#include <QSaveFile>

namespace ddpdesk {

QString atomicWriteProblem(const QString& path) {
  // QSaveFile's own tests: the file's writability, then a temporary file beside it.
  const QFileInfo file(path);
  if (file.exists() && !file.isWritable()) return QStringLiteral("%1 is not writable").arg(path);
  const QFileInfo dir(file.absolutePath());
  if (dir.exists() && !dir.isWritable())
    return QStringLiteral("its directory %1 is not writable").arg(dir.filePath());
  return {};
}

bool writeFileAtomically(const QString& path, const QByteArray& data, QString* error) {
  QSaveFile f(path);
  // flush() before commit(): commit() closes the file and renames it over `path` even when that
  // last flush of the buffer failed (a full disk), which would leave an empty or cut-short file
  // where the previous one was. A failed flush leaves the temporary file to be removed instead.
  if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size() || !f.flush() || !f.commit()) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace ddpdesk
