#include "slurm/login_resume.h"

#include <QEventLoop>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include "run_layout.h"
#include "slurm/cluster_command.h"
#include "slurm/slurm_login_scripts.h"
#include "spec_flags.h"

namespace ddpdesk {

LoginResumeSource readLoginResumeNow(const QString& url) {
  LoginResumeSource source;
  source.url = url;
  QString error;
  const auto target = SshTarget::parse(url, &error);
  if (!target) {
    source.problem = error;
    return source;
  }
  source.target = *target;
  auto cannot = [&](const QString& why) {
    return QStringLiteral("cannot resume %1: %2").arg(url, why);
  };
  ClusterCommand command;
  command.setRemote(*target);
  ClusterCommand::Result result;
  bool done = false;
  QEventLoop wait;
  command.run(remoteReadSpecCommand(target->path), [&](const ClusterCommand::Result& r) {
    result = r;
    done = true;
    wait.quit();
  });
  if (!done) wait.exec();  // an ssh that could not start answers at once
  if (!result.ok()) {
    source.problem = cannot(result.problem());
    return source;
  }
  // The directory made absolute there, then spec.json.
  const QString out = QString::fromUtf8(result.out);
  const qsizetype eol = out.indexOf(QLatin1Char('\n'));
  source.target.path = out.left(eol).trimmed();
  source.specText = eol < 0 ? QString() : out.mid(eol + 1);
  if (const QString why = loginResumeProblem(source.specText); !why.isEmpty())
    source.problem = cannot(why);
  return source;
}

QString loginResumeProblem(const QString& specText) {
  const QJsonDocument doc = QJsonDocument::fromJson(specText.toUtf8());
  if (!doc.isObject()) return QStringLiteral("its spec.json is not a JSON object");
  const QJsonObject o = doc.object();
  const QString launcher = o.value(QStringLiteral("launcher")).toString(QStringLiteral("local"));
  if (launcher != QLatin1String("slurm"))
    return QStringLiteral(
               "it holds a run of launcher '%1', not a Slurm run submitted through a login node "
               "(resume it on that host: ddpdesk --resume DIR there)")
        .arg(launcher);
  if (o.value(QStringLiteral("slurm_login")).toString().isEmpty())
    return QStringLiteral(
        "it holds a Slurm run submitted on the cluster itself, not through a login node (resume "
        "it there: ddpdesk --resume DIR on the cluster)");
  return {};
}

QString applyLoginResume(const LoginResumeSource& source, RunSpec* spec) {
  if (!spec->is_slurm()) {
    return QStringLiteral(
               "invalid --launcher '%1' with --resume %2: a run directory on another host "
               "continues as a Slurm job through that host")
        .arg(QString::fromStdString(spec->launcher), source.url);
  }
  const SshTarget& t = source.target;
  QString login = t.destination();
  if (t.port > 0) login += QStringLiteral(":%1").arg(t.port);
  spec->slurm_login = login.toStdString();
  spec->slurm_remote_dir = t.path.toStdString();
  spec->resume = source.url.toStdString();
  const auto problems = validate(*spec);
  if (problems.empty()) return {};
  return QStringLiteral("cannot resume %1: %2")
      .arg(source.url, QString::fromStdString(format_error(problems.front(), Spelling::JsonKey)));
}

std::vector<std::string> buildSpecFromCommandLine(SpecFlags& flags, RunSpec* out) {
  const auto lines = [](const std::vector<FieldError>& errors) {
    std::vector<std::string> out;
    for (const FieldError& e : errors) out.push_back(format_error(e));
    return out;
  };
  const QString resume = QString::fromStdString(flags.resume_given());
  if (!SshTarget::looksLikeUrl(resume)) return lines(flags.build(*out));
  const LoginResumeSource source = readLoginResumeNow(resume);
  if (!source.problem.isEmpty()) return {source.problem.toStdString()};
  flags.set_resume_spec(source.specText.toStdString(), run_layout::spec_file(resume.toStdString()));
  RunSpec spec;
  if (const auto problems = flags.build(spec); !problems.empty()) return lines(problems);
  if (const QString p = applyLoginResume(source, &spec); !p.isEmpty()) return {p.toStdString()};
  *out = spec;
  return {};
}

QString loginWorkerResume(const RunSpec& spec, const QString& record, const QString& remoteDir) {
  const QString resume = QString::fromStdString(spec.resume);
  if (SshTarget::looksLikeUrl(resume)) return remoteDir;
  if (!resume.isEmpty() && QFileInfo(resume).absoluteFilePath() == record) return remoteDir;
  return resume;
}

}  // namespace ddpdesk
