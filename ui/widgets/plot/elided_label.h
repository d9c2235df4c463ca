// A one-line label that never asks for more width than a few characters: squeezed, it shows its
// text cut in the middle ("train/gr…/layer3"), whole in its tooltip. A chart's title is this, so
// a long name (a training script's scalar, up to 128 characters) cannot hold a chart wider than
// its place. Plain text only: drawn as given, never read as HTML, on one line.
#pragma once

#include <QWidget>

namespace ddpdesk {

class ElidedLabel : public QWidget {
 public:
  explicit ElidedLabel(const QString& text = QString(), QWidget* parent = nullptr);

  void setText(const QString& text);
  QString text() const { return text_; }
  // What is drawn at the label's present width.
  QString shownText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void updateToolTip();

  QString text_;
};

}  // namespace ddpdesk
