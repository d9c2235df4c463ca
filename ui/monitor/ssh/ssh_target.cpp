#include "ssh/ssh_target.h"

#include <unistd.h>
#include <QUrl>

#include "run/monitor_settings.h"

namespace ddpdesk {

bool SshTarget::looksLikeUrl(const QString& text) {
  return text.startsWith(QLatin1String("ssh://"), Qt::CaseInsensitive);
}

std::optional<SshTarget> SshTarget::parse(const QString& text, QString* error) {
  auto fail = [&](const QString& why) -> std::optional<SshTarget> {
    if (error)
      *error = QStringLiteral(
                   "invalid remote run '%1': %2 (expected "
                   "ssh://[user@]host[:port]/path)")
                   .arg(text, why);
    return std::nullopt;
  };
  const QUrl url(text, QUrl::StrictMode);
  if (!looksLikeUrl(text) || !url.isValid()) return fail(QStringLiteral("not an ssh:// URL"));
  SshTarget t;
  t.user = url.userName();
  t.host = url.host();
  t.port = url.port(0);
  t.path = url.path();
  if (t.host.isEmpty()) return fail(QStringLiteral("no host"));
  if (!url.password().isEmpty())
    return fail(QStringLiteral("a password in the URL (use ssh keys or an agent)"));
  if (t.host.startsWith(QLatin1Char('-')) || t.user.startsWith(QLatin1Char('-')))
    return fail(QStringLiteral("a host or user starting with '-'"));
  if (t.path.isEmpty() || t.path == QLatin1String("/"))
    return fail(QStringLiteral("no run directory path"));
  if (t.path.startsWith(QLatin1String("/~/"))) t.path = t.path.mid(1);
  return t;
}

SshTarget SshTarget::fromLogin(const QString& login, const QString& path) {
  SshTarget t;
  QString rest = login;
  if (const int at = rest.indexOf(QLatin1Char('@')); at >= 0) {
    t.user = rest.left(at);
    rest = rest.mid(at + 1);
  }
  if (const int colon = rest.lastIndexOf(QLatin1Char(':')); colon >= 0) {
    t.port = rest.mid(colon + 1).toInt();
    rest = rest.left(colon);
  }
  t.host = rest;
  t.path = path;
  return t;
}

QString SshTarget::destination() const {
  return user.isEmpty() ? host : user + QLatin1Char('@') + host;
}

QString SshTarget::url() const {
  QString u = QStringLiteral("ssh://") + destination();
  if (port > 0) u += QStringLiteral(":%1").arg(port);
  return u + (path.startsWith(QLatin1Char('/')) ? path : QLatin1Char('/') + path);
}

QString SshTarget::shellQuote(const QString& word) {
  QString q = word;
  q.replace(QLatin1Char('\''), QLatin1String("'\\''"));
  return QLatin1Char('\'') + q + QLatin1Char('\'');
}

QStringList SshTarget::command(const QStringList& remoteArgv) const {
  QStringList cmd = monitorSettings().sshCommand;
  cmd << QStringLiteral("-o") << QStringLiteral("BatchMode=yes")          //
      << QStringLiteral("-o") << QStringLiteral("ConnectTimeout=10")      //
      << QStringLiteral("-o") << QStringLiteral("ServerAliveInterval=5")  //
      << QStringLiteral("-o") << QStringLiteral("ServerAliveCountMax=3")  //
      << QStringLiteral("-T");                                            // no terminal
  if (port > 0) cmd << QStringLiteral("-p") << QString::number(port);
  if (!user.isEmpty()) cmd << QStringLiteral("-l") << user;
  QStringList quoted;
  for (const QString& w : remoteArgv) quoted << shellQuote(w);
  cmd << QStringLiteral("--") << host << quoted.join(QLatin1Char(' '));
  return cmd;
}

void keepFromTerminalSignals(QProcess& process) {
  process.setChildProcessModifier([] { ::setpgid(0, 0); });
}

QString sshClientMissing(const QString& program, const QString& why) {
  return QStringLiteral(
             "cannot run the ssh client '%1': %2 (install openssh-client or set "
             "DDPDESK_SSH_COMMAND)")
      .arg(program, why);
}

}  // namespace ddpdesk
