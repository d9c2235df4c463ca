#include "slurm/slurm_login_scripts.h"

#include "slurm/slurm_script.h"

namespace ddpdesk {
namespace {

QStringList shell(const QString& name, const QString& script, const QStringList& args) {
  // /bin/sh by its path: the remote PATH may be what is wrong, and the message should say so.
  return QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), script, name} + args;
}

// $dir made absolute: "~/x" and relative paths are taken from the home directory there.
const QString kAbsoluteDir = QStringLiteral(R"SH(case $dir in
  "~") dir=$HOME ;;
  "~/"*) dir=$HOME/${dir#"~/"} ;;
  /*) ;;
  *) dir=$HOME/$dir ;;
esac
)SH");

}  // namespace

QStringList remoteResolveCommand(const QString& dir) {
  return shell(QStringLiteral("ddpdesk-resolve"), QStringLiteral(R"SH(dir=$1
command -v sbatch >/dev/null 2>&1 ||
  { echo "sbatch: not found on the login node (PATH $PATH)" >&2; exit 127; }
)SH") + kAbsoluteDir + QStringLiteral(R"SH(printf '%s\n' "$dir"
)SH"),
               {dir});
}

QStringList remoteWriteCommand(const QString& dir, const QString& stamp, const QString& spec) {
  return shell(QStringLiteral("ddpdesk-write"), QStringLiteral(R"SH(dir=$1; stamp=$2; spec=$3
created=0; aside=-; logs=-
[ -e "$dir" ] || created=1
undo() {
  if [ "$created" = 1 ]; then rm -rf -- "$dir"; else
    rm -f -- "$dir/spec.json.tmp" "$dir/job.sbatch.tmp"
    [ "$aside" = - ] || mv -- "$dir/$aside" "$dir/metrics"
    [ "$logs" = - ] || { mv -- "$dir/$logs"/rank-*.log "$dir/" 2>/dev/null; rmdir -- "$dir/$logs"; }
  fi
  exit 1
}
mkdir -p -- "$dir" || undo
cd -- "$dir" || undo
# An earlier job's stop must not stop this one's ranks as they start.
rm -f -- stop-requested || undo
if [ -d metrics ]; then aside=metrics-before-$stamp; mv metrics "$aside" || { aside=-; undo; }; fi
for f in rank-*.log; do
  n=${f#rank-}; n=${n%.log}
  case $n in '' | *[!0-9]*) continue ;; esac
  [ -f "$f" ] || continue
  if [ "$logs" = - ]; then logs=logs-before-$stamp; mkdir "$logs" || { logs=-; undo; }; fi
  mv -- "$f" "$logs/" || undo
done
printf '%s' "$spec" > spec.json.tmp && mv -f spec.json.tmp spec.json || undo
cat > job.sbatch.tmp && mv -f job.sbatch.tmp job.sbatch || undo
echo "$created $aside $logs"
)SH"),
               {dir, stamp, spec});
}

QStringList remoteUndoCommand(const QString& dir, bool created, const QString& aside,
                              const QString& logs) {
  return shell(
      QStringLiteral("ddpdesk-undo"), QStringLiteral(R"SH(dir=$1; created=$2; aside=$3; logs=$4
if [ "$created" = 1 ]; then rm -rf -- "$dir"; exit; fi
rm -f -- "$dir/job.sbatch"
[ -z "$aside" ] || [ "$aside" = - ] || mv -- "$dir/$aside" "$dir/metrics"
[ -z "$logs" ] || [ "$logs" = - ] || { mv -- "$dir/$logs"/rank-*.log "$dir/"; rmdir -- "$dir/$logs"; }
)SH"),
      {dir, created ? QStringLiteral("1") : QStringLiteral("0"),
       aside.isEmpty() ? QStringLiteral("-") : aside, logs.isEmpty() ? QStringLiteral("-") : logs});
}

QStringList remoteStopCommand(const QString& dir) {
  return shell(QStringLiteral("ddpdesk-stop"), QStringLiteral(": > \"$1\""),
               {slurmStopFilePath(dir)});
}

QStringList remoteReadSpecCommand(const QString& dir) {
  return shell(QStringLiteral("ddpdesk-read-spec"),
               QStringLiteral("dir=$1\n") + kAbsoluteDir + QStringLiteral(R"SH(
[ -d "$dir" ] || { echo "no such directory there" >&2; exit 3; }
[ -f "$dir/spec.json" ] || { echo "no spec.json there: not a ddpdesk run directory" >&2; exit 4; }
printf '%s\n' "$dir"
cat -- "$dir/spec.json"
)SH"),
               {dir});
}

}  // namespace ddpdesk
