// Losses read from a rank's output lines (output_loss.h).
#include "metrics/output_loss.h"

#include <QtNumeric>
#include <cmath>

namespace ddpdesk {
namespace {

// A number as Python prints it, nan and inf included.
const QString kNumber =
    QStringLiteral(R"(([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)))");

// The training loss: not preceded by a letter, digit or '_' other than "train_" (so val_loss and
// eval_loss are not it), optionally quoted (a dict's key), then '=' or ':', optionally inside
// tensor(...).
const QRegularExpression& lossForm() {
  static const QRegularExpression re(
      QStringLiteral(R"((?:^|[^\w])['"]?(?:train_|training_)?loss['"]?\s*[=:]\s*(?:tensor\()?)") +
          kNumber,
      QRegularExpression::CaseInsensitiveOption);
  return re;
}

// The step: "step 12", "step=12", "'step': 12", "global_step: 12", "Step [12/100]".
const QRegularExpression& stepForm() {
  static const QRegularExpression re(
      QStringLiteral(R"((?:^|[^\w])['"]?(?:global_)?step['"]?\s*[=:]?\s*\[?\s*(\d+))"),
      QRegularExpression::CaseInsensitiveOption);
  return re;
}

// A tqdm bar's "n/total" just before its "[elapsed<remaining".
const QRegularExpression& tqdmForm() {
  static const QRegularExpression re(QStringLiteral(R"((\d+)/\d+\s*\[)"));
  return re;
}

double number(const QString& text) {
  const QString t = text.toLower();
  if (t.endsWith(QLatin1String("nan"))) return qQNaN();
  if (t.endsWith(QLatin1String("inf"))) return t.startsWith(QLatin1Char('-')) ? -qInf() : qInf();
  return t.toDouble();
}

bool sameLoss(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

OutputLossReader::OutputLossReader(const QString& pattern) {
  if (pattern.isEmpty()) return;
  custom_.setPattern(pattern);
  if (!custom_.isValid())
    error_ = QStringLiteral("is no regular expression: ") + custom_.errorString() +
             QStringLiteral(" at offset ") + QString::number(custom_.patternErrorOffset());
  else if (!custom_.namedCaptureGroups().contains(QStringLiteral("loss")))
    error_ = QStringLiteral("has no group named loss, e.g. loss=(?<loss>[0-9.eE+-]+)");
}

bool OutputLossReader::readSegment(QStringView text, OutputLoss* out) {
  QString lossText;
  QString stepText;
  if (custom_.pattern().isEmpty()) {
    const auto loss = lossForm().match(text);
    if (!loss.hasMatch()) return false;
    lossText = loss.captured(1);
    const auto step = stepForm().match(text);
    if (step.hasMatch()) {
      stepText = step.captured(1);
    } else if (const auto bar = tqdmForm().match(text); bar.hasMatch()) {
      const std::int64_t n = bar.captured(1).toLongLong();
      if (n < last_bar_) bar_base_ += last_bar_;
      last_bar_ = n;
      stepText = QString::number(bar_base_ + n);
    }
  } else {
    const auto m = custom_.match(text);
    if (!m.hasMatch() || m.captured(QStringLiteral("loss")).isEmpty()) return false;
    lossText = m.captured(QStringLiteral("loss"));
    if (custom_.namedCaptureGroups().contains(QStringLiteral("step")))
      stepText = m.captured(QStringLiteral("step"));
  }
  bool isNumber = false;
  const double value = lossText.toDouble(&isNumber);  // once: a flood of lines parses each
  if (isNumber) {
    out->loss = value;
  } else {
    const QString lower = lossText.toLower();
    if (!lower.endsWith(QLatin1String("nan")) && !lower.endsWith(QLatin1String("inf")))
      return false;
    out->loss = number(lossText);
  }
  bool stepOk = false;
  const qlonglong step = stepText.toLongLong(&stepOk);
  out->step = stepOk ? step : (have_last_ ? last_step_ + 1 : 1);
  return true;
}

std::vector<OutputLoss> OutputLossReader::read(QStringView line) {
  std::vector<OutputLoss> points;
  // A terminal shows only what follows the last '\r'; each redraw before it was shown once.
  for (QStringView segment : line.split(QLatin1Char('\r'))) {
    OutputLoss p;
    if (!readSegment(segment, &p)) continue;
    // A bar redrawn without progress (same step, same loss) is not a new point.
    if (have_last_ && p.step == last_step_ && sameLoss(p.loss, last_loss_)) continue;
    points.push_back(p);
    have_last_ = true;
    last_step_ = p.step;
    last_loss_ = p.loss;
  }
  return points;
}

}  // namespace ddpdesk
