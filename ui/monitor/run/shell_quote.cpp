#include "run/shell_quote.h"

#include <QRegularExpression>

namespace ddpdesk {

QString shellQuote(const QString& word) {
  static const QRegularExpression safe(QStringLiteral("^[A-Za-z0-9_./:=+@%,-]+$"));
  if (safe.match(word).hasMatch()) return word;
  QString q = word;
  q.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + q + QLatin1Char('\'');
}

}  // namespace ddpdesk
