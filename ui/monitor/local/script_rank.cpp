// A Python-script rank's command line and environment (script_rank.h).
#include "local/script_rank.h"

#include <QDir>
#include <QFileInfo>
#include <nlohmann/json.hpp>

namespace ddpdesk {
namespace {

// A placeholder's value, as the script reads it from its arguments.
QString placeholderValue(const std::string& name, const RunSpec& spec, const QString& runDir,
                         const QString& resume) {
  if (name == "batch_size") return QString::number(spec.batch_size);
  if (name == "accum_steps") return QString::number(spec.accum_steps);
  if (name == "epochs") return QString::number(spec.epochs);
  // JSON's shortest text that reads back as the same double (0.001, not 0.0010000000000000000208).
  if (name == "lr") return QString::fromStdString(nlohmann::json(spec.lr).dump());
  if (name == "seed") return QString::number(spec.seed);
  if (name == "precision") return QString::fromStdString(spec.precision);
  if (name == "nproc") return QString::number(spec.world_size());
  if (name == "run_dir") return runDir;
  if (name == "resume") return resume;
  return {};
}

QString fillPlaceholders(const QString& word, const RunSpec& spec, const QString& runDir,
                         const QString& resume) {
  QString out = word;
  for (const std::string& name : script_placeholders())
    out.replace(QLatin1Char('{') + QString::fromStdString(name) + QLatin1Char('}'),
                placeholderValue(name, spec, runDir, resume));
  return out;
}

}  // namespace

void makeScriptPathsAbsolute(RunSpec& spec) {
  const auto absolute = [](std::string& path) {
    if (!path.empty())
      path = QFileInfo(QString::fromStdString(path)).absoluteFilePath().toStdString();
  };
  absolute(spec.script);
  absolute(spec.workdir);
  absolute(spec.logdir);
  if (spec.python.find('/') != std::string::npos) absolute(spec.python);
}

QStringList splitShellWords(const QString& text, QString* error) {
  QStringList words;
  QString word;
  bool inWord = false;
  for (int i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    if (c == QLatin1Char('\'')) {
      const int end = text.indexOf(QLatin1Char('\''), i + 1);
      if (end < 0) {
        if (error) *error = QStringLiteral("an unclosed ' quote");
        return {};
      }
      word += text.mid(i + 1, end - i - 1);
      inWord = true;
      i = end;
    } else if (c == QLatin1Char('"')) {
      int j = i + 1;
      for (; j < text.size() && text[j] != QLatin1Char('"'); ++j) {
        if (text[j] == QLatin1Char('\\') && j + 1 < text.size() &&
            (text[j + 1] == QLatin1Char('"') || text[j + 1] == QLatin1Char('\\')))
          ++j;
        word += text[j];
      }
      if (j >= text.size()) {
        if (error) *error = QStringLiteral("an unclosed \" quote");
        return {};
      }
      inWord = true;
      i = j;
    } else if (c == QLatin1Char('\\') && i + 1 < text.size()) {
      word += text[++i];
      inWord = true;
    } else if (c.isSpace()) {
      if (inWord) words << word;
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words << word;
  return words;
}

ScriptRank scriptRank(const RunSpec& spec, const QString& runDir, const QString& resume) {
  ScriptRank r;
  QString why;
  const QStringList words = splitShellWords(QString::fromStdString(spec.script_args), &why);
  if (!why.isEmpty()) {
    r.error = QStringLiteral("invalid --script-args: ") + why;
    return r;
  }
  r.program = spec.python.empty() ? QStringLiteral("python3") : QString::fromStdString(spec.python);
  r.arguments << QString::fromStdString(spec.script);
  for (const QString& w : words) r.arguments << fillPlaceholders(w, spec, runDir, resume);
  r.workdir = spec.workdir.empty() ? runDir : QString::fromStdString(spec.workdir);
  return r;
}

std::vector<std::pair<QString, QString>> scriptRunVariables(const RunSpec& spec,
                                                            const QString& runDir,
                                                            const QString& resume,
                                                            const QString& runId) {
  std::vector<std::pair<QString, QString>> v;
  const auto set = [&v](const char* name, const QString& value) {
    v.emplace_back(QString::fromLatin1(name), value);
  };
  set("TORCHELASTIC_RUN_ID", runId);
  set("TORCHELASTIC_RESTART_COUNT", QStringLiteral("0"));
  set("TORCHELASTIC_MAX_RESTARTS", QString::number(spec.max_restarts));
  set("DDPDESK_BATCH_SIZE", QString::number(spec.batch_size));
  set("DDPDESK_ACCUM_STEPS", QString::number(spec.accum_steps));
  set("DDPDESK_EPOCHS", QString::number(spec.epochs));
  set("DDPDESK_LR", placeholderValue("lr", spec, runDir, resume));
  set("DDPDESK_SEED", QString::number(spec.seed));
  set("DDPDESK_PRECISION", QString::fromStdString(spec.precision));
  set("DDPDESK_RUN_DIR", runDir);
  if (!resume.isEmpty()) set("DDPDESK_RESUME", resume);
  set("PYTHONUNBUFFERED", QStringLiteral("1"));
  return v;
}

QProcessEnvironment scriptEnvironment(const RunSpec& spec, int rank, int world,
                                      const QString& runDir, const QString& resume,
                                      const QString& runId, const QString& clientDir,
                                      const QProcessEnvironment& inherited) {
  QProcessEnvironment env;
  const auto set = [&env](const char* name, const QString& value) {
    env.insert(QString::fromLatin1(name), value);
  };
  // One node, one role: what torchrun's agent sets beside the variables every rank gets.
  set("GROUP_RANK", QStringLiteral("0"));
  set("GROUP_WORLD_SIZE", QStringLiteral("1"));
  set("ROLE_RANK", QString::number(rank));
  set("ROLE_WORLD_SIZE", QString::number(world));
  set("ROLE_NAME", QStringLiteral("default"));
  for (const auto& [name, value] : scriptRunVariables(spec, runDir, resume, runId))
    env.insert(name, value);
  const QString path = inherited.value(QStringLiteral("PYTHONPATH"));
  set("PYTHONPATH", path.isEmpty() ? clientDir : clientDir + QLatin1Char(':') + path);
  return env;
}

QString pythonClientDir(const QString& program) {
  return QDir::cleanPath(QFileInfo(program).absolutePath() +
                         QStringLiteral("/../share/ddpdesk/python"));
}

}  // namespace ddpdesk
