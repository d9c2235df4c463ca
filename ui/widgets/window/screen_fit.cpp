#include "window/screen_fit.h"

#include <QGuiApplication>
#include <QScreen>
#include <QWidget>

namespace ddpdesk {

void fitToScreen(QWidget* window) {
  const QScreen* screen = window->screen() ? window->screen() : QGuiApplication::primaryScreen();
  if (!screen) return;
  // Room for a title bar and borders, which the window's own size does not include.
  const QRect free = screen->availableGeometry().adjusted(0, 0, -16, -40);
  const QSize size = window->size().boundedTo(free.size()).expandedTo(window->minimumSizeHint());
  window->resize(size);
  QRect frame(window->pos(), size);
  if (!free.contains(frame)) {
    frame.moveTopLeft(free.topLeft());
    window->move(frame.topLeft());
  }
}

}  // namespace ddpdesk
