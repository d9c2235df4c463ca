// Resuming a Slurm run submitted through a login node from its directory on the cluster,
// `--resume ssh://[user@]host[:port]/path` (headless and the window's command line), when this
// machine has no record of it (another machine submitted it, or the record is gone). The
// directory's spec.json is read there over the person's own ssh and must be that of a Slurm run
// through a login node; the run starts from it (flags given as well change just those fields)
// and submits a new job through that host into that directory, whose ranks continue from its
// last checkpoint. This machine keeps a new record of the continued run.
#pragma once

#include <QString>
#include <string>
#include <vector>

#include "run_spec.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {

class SpecFlags;

struct LoginResumeSource {
  QString url;       // as given
  SshTarget target;  // its path made absolute on that host
  QString specText;  // spec.json there
  QString problem;   // one line: why the directory cannot be resumed from here
};

// Reads and checks the directory `url` names; waits for ssh's answer (a QCoreApplication must
// exist).
LoginResumeSource readLoginResumeNow(const QString& url);
// Why a spec.json (its text) is not that of a Slurm run through a login node; empty when it is.
QString loginResumeProblem(const QString& specText);
// After the flags: `spec` submits through the URL's host to its directory and resumes there.
// Returns the one line when the result cannot run that way, else empty.
QString applyLoginResume(const LoginResumeSource& source, RunSpec* spec);
// The spec from the command line (SpecFlags::build), the cluster's spec.json read first when
// --resume names an ssh:// URL. One line per problem.
std::vector<std::string> buildSpecFromCommandLine(SpecFlags& flags, RunSpec* out);

// What a login-node run's worker gets as --resume: its directory on the cluster `remoteDir` when
// the run continues its own local record `record` or a directory named by an ssh:// URL, else
// spec.resume as it is (shared by the controller and the window's script preview).
QString loginWorkerResume(const RunSpec& spec, const QString& record, const QString& remoteDir);

}  // namespace ddpdesk
