// DesktopNotifications (desktop_notifications.h): the Notify call over D-Bus, the tray fallback.
#include "window/desktop_notifications.h"

#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QIcon>
#include <QSystemTrayIcon>
#include <QVariantMap>

namespace ddpdesk {
namespace {

const QString kService = QStringLiteral("org.freedesktop.Notifications");
const QString kPath = QStringLiteral("/org/freedesktop/Notifications");
// An answer from the desktop's service is immediate; a service that hangs must not keep a
// notification from its fallback for long.
constexpr int kCallTimeoutMs = 5000;

}  // namespace

DesktopNotifications::DesktopNotifications(QObject* parent)
    : DesktopNotifications(QDBusConnection::sessionBus(), parent) {}

DesktopNotifications::DesktopNotifications(const QDBusConnection& bus, QObject* parent)
    : QObject(parent), bus_(bus) {}

DesktopNotifications::~DesktopNotifications() = default;

void DesktopNotifications::notify(const QString& summary, const QString& body, bool critical) {
  if (!bus_.isConnected()) {
    fallBack(summary, body, critical,
             QStringLiteral("no D-Bus session bus (%1)").arg(bus_.lastError().message()));
    return;
  }
  QDBusMessage call =
      QDBusMessage::createMethodCall(kService, kPath, kService, QStringLiteral("Notify"));
  QVariantMap hints;
  // The freedesktop urgency byte: 1 normal, 2 critical.
  hints.insert(QStringLiteral("urgency"), QVariant::fromValue(uchar(critical ? 2 : 1)));
  hints.insert(QStringLiteral("desktop-entry"), QStringLiteral("ddpdesk"));
  // app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout (-1: the
  // desktop's default).
  call << QStringLiteral("ddpdesk") << uint(0) << QStringLiteral("ddpdesk") << summary << body
       << QStringList() << hints << int(-1);
  auto* watcher = new QDBusPendingCallWatcher(bus_.asyncCall(call, kCallTimeoutMs), this);
  connect(watcher, &QDBusPendingCallWatcher::finished, this,
          [this, summary, body, critical](QDBusPendingCallWatcher* w) {
            w->deleteLater();
            const QDBusPendingReply<uint> reply = *w;
            if (reply.isError())
              fallBack(summary, body, critical,
                       QStringLiteral("no notification service on the session bus (%1)")
                           .arg(reply.error().name()));
            else
              Q_EMIT shown(Route::DBus, summary, body);
          });
}

void DesktopNotifications::fallBack(const QString& summary, const QString& body, bool critical,
                                    const QString& why) {
  if (QSystemTrayIcon::isSystemTrayAvailable()) {
    if (!tray_) {
      tray_ = new QSystemTrayIcon(QIcon(QStringLiteral(":/icons/ddpdesk.png")), this);
      tray_->setToolTip(QStringLiteral("ddpdesk"));
      tray_->show();
    }
    tray_->showMessage(summary, body,
                       critical ? QSystemTrayIcon::Critical : QSystemTrayIcon::Information);
    Q_EMIT shown(Route::Tray, summary, body);
    return;
  }
  if (!saidUnavailable_) {
    saidUnavailable_ = true;
    Q_EMIT unavailable(QStringLiteral("desktop notifications are not shown: %1, and no system "
                                      "tray")
                           .arg(why));
  }
  Q_EMIT shown(Route::Nowhere, summary, body);
}

}  // namespace ddpdesk
