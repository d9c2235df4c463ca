// DesktopNotifications: shows one desktop notification, the freedesktop way: a Notify call to
// org.freedesktop.Notifications on the D-Bus session bus (QtDBus, asynchronous: the window never
// waits for the desktop). With no session bus, or no notification service on it (the call's
// error), it falls back to the system tray icon's balloon (QSystemTrayIcon::showMessage) when the
// desktop has a tray, else shows nothing, said once through unavailable(). What to notify about
// and when is RunNotifier's (run_notifier.h).
#pragma once

#include <QDBusConnection>
#include <QObject>
#include <QString>

class QSystemTrayIcon;

namespace ddpdesk {

class DesktopNotifications : public QObject {
  Q_OBJECT
 public:
  // Where a notification went.
  enum class Route { DBus, Tray, Nowhere };
  Q_ENUM(Route)

  // `bus`: the session bus (the default), or a connection of the caller's.
  explicit DesktopNotifications(QObject* parent = nullptr);
  DesktopNotifications(const QDBusConnection& bus, QObject* parent = nullptr);
  ~DesktopNotifications() override;

  // Sends it and returns at once; shown() says where it went. `critical`: the desktop's urgent
  // kind (a failed run), which stays until dismissed where the desktop does so.
  void notify(const QString& summary, const QString& body, bool critical = false);

 Q_SIGNALS:
  void shown(ddpdesk::DesktopNotifications::Route route, const QString& summary,
             const QString& body);
  // No notification can be shown, and why (once per object).
  void unavailable(const QString& why);

 private:
  void fallBack(const QString& summary, const QString& body, bool critical, const QString& why);

  QDBusConnection bus_;
  QSystemTrayIcon* tray_ = nullptr;  // made on the first fallback with a tray
  bool saidUnavailable_ = false;
};

}  // namespace ddpdesk
