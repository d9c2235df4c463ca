// SshTarget: a place on another machine named by a URL, `ssh://[user@]host[:port]/path`, and the
// command line that reaches it through the person's own OpenSSH client
// (monitorSettings().sshCommand, "ssh" from PATH unless DDPDESK_SSH_COMMAND says otherwise). Their
// keys, agent and ~/.ssh/config apply as they have them; BatchMode makes ssh fail instead of asking
// for a password or a host key, so nothing ever waits for a prompt nobody sees. A path starting
// "/~/" is taken from the remote home directory.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <optional>

namespace ddpdesk {

struct SshTarget {
  QString user;  // empty: ssh's default (config or the local user name)
  QString host;
  int port = 0;  // 0: ssh's default (config or 22)
  QString path;  // on the remote host; "~/x" for the remote home

  static bool looksLikeUrl(const QString& text);  // starts with "ssh://"
  // Parses an ssh:// URL; nullopt with *error (one line naming the value) when it is not one.
  static std::optional<SshTarget> parse(const QString& url, QString* error = nullptr);
  // A login node as RunSpec::slurm_login names it, [user@]host[:port] (checked there), with
  // `path` on it.
  static SshTarget fromLogin(const QString& login, const QString& path);
  QString url() const;          // ssh://user@host:port/path, as given back to people
  QString destination() const;  // user@host, or host

  // Program and arguments that run `remoteArgv` on the host, each word quoted for the remote
  // POSIX shell, which ssh hands one joined string. Options: BatchMode, a connect timeout, and
  // keepalives so a vanished host is noticed within seconds.
  QStringList command(const QStringList& remoteArgv) const;
  static QString shellQuote(const QString& word);
};

// Puts the ssh `process` is about to start in a process group of its own, so a Ctrl+C typed at
// the terminal (SIGINT to the whole foreground group) reaches ddpdesk, which stops the run
// through it, and not the ssh connections that stop needs.
void keepFromTerminalSignals(QProcess& process);
// The one line for an ssh client that could not be started.
QString sshClientMissing(const QString& program, const QString& why);

}  // namespace ddpdesk
