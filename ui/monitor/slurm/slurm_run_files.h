// The files a Slurm run keeps in its run directory besides the batch script (slurm_script.h):
//   slurm.json   the job ddpdesk submitted there: {"job_id", "submitted_at", "script",
//                "earlier_jobs": [...], and through a login node "login", "remote_dir"}; what
//                `--attach DIR` reads to follow the job itself, not only its ranks' files
//   metrics-before-<stamp>/, logs-before-<stamp>/
//                an earlier job's metrics/rank-N.jsonl and rank-N.log, moved aside when a new job
//                is submitted in the directory (a resume): they would otherwise be read again as
//                the new job's messages and fill its Log tab with the earlier job's output.
// Qt Core only.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

namespace ddpdesk {

struct SlurmRecord {
  QString jobId;
  QStringList earlierJobs;  // oldest first
  QString login;            // through a login node: user@host[:port]; else empty
  QString remoteDir;        // there: the run directory on the cluster
};

QString slurmRecordPath(const QString& runDir);  // <runDir>/slurm.json
// nullopt when the directory holds no slurm.json naming a job.
std::optional<SlurmRecord> readSlurmRecord(const QString& runDir);
// Writes slurm.json for `jobId`, the job it names now (if any) joining earlier_jobs.
bool writeSlurmRecord(const QString& runDir, const QString& jobId, const QString& login,
                      const QString& remoteDir, QString* error = nullptr);

// Where an earlier job's files went (names inside the run directory; empty: nothing moved).
struct EarlierJobFiles {
  QString metrics;  // metrics-before-<stamp>
  QString logs;     // logs-before-<stamp>
};
// Moves <runDir>/metrics and every rank-N.log aside (see above). False with *error (one line)
// when a move failed; what was moved by then is put back.
bool moveEarlierJobAside(const QString& runDir, const QString& stamp, EarlierJobFiles* moved,
                         QString* error = nullptr);
// Undoes moveEarlierJobAside (a refused submission leaves the directory as it was).
void putEarlierJobBack(const QString& runDir, const EarlierJobFiles& moved);

}  // namespace ddpdesk
