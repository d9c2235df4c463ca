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
  if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size() || !f.commit()) {
    if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace ddpdesk
