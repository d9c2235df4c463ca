// The `ddpdesk` command line both front ends parse (command_line.h).
#include "headless/command_line.h"

#include <QFileInfo>
#include <QString>
#include <iostream>

#include <CLI/CLI.hpp>

#include "run/monitor_settings.h"
#include "ssh/ssh_target.h"

namespace ddpdesk {
namespace {

int fail(const std::string& line) {
  std::cerr << "ddpdesk: " << line << "\n";
  return 2;
}

}  // namespace

CommandLine::CommandLine(const std::string& footer)
    : app_(std::make_unique<CLI::App>(
          "Launches LibTorch DDP training ranks on this machine and monitors them.", "ddpdesk")) {
  CLI::App& app = *app_;
  start_ = monitorSettings().autostart;
  headlessOption_ = app.add_flag("--headless", headless_, "run in the terminal, without a window");
  startOption_ = app.add_flag("--start", start_,
                              "the window: start the run at once (in the terminal it always does)");
  attachOption_ = app.add_option(
      "--attach", attach_,
      "follow the run in this directory (ranks started by hand, torchrun, srun or another "
      "ddpdesk, writing <dir>/metrics/rank-N.jsonl) instead of starting one; "
      "ssh://[user@]host[:port]/dir follows one on another host through ssh");
  queue_ = std::make_unique<QueueOptions>(app);
  flags_ = std::make_unique<SpecFlags>(app, /*with_nproc=*/true);
  app.footer(footer);
}

CommandLine::~CommandLine() = default;

int CommandLine::parse(int argc, char** argv) {
  if (const int rc = parse_cli(*app_, argc, argv); rc >= 0) return rc;
  return check();
}

bool CommandLine::attaching() const {
  return attachOption_->count() > 0;
}

bool CommandLine::specGiven() const {
  for (const CLI::Option* o : app_->get_options())
    if (o->count() > 0 && o != headlessOption_ && o != startOption_ && o != attachOption_ &&
        !queue_->owns(o))
      return true;
  return false;
}

int CommandLine::check() const {
  if (queue_->given()) {
    const int rc = queue_->check(*app_);
    if (rc >= 0) return rc;
  }
  if (!attaching()) return -1;
  // A followed run keeps the flags it was started with: --attach takes nothing else.
  for (const CLI::Option* o : app_->get_options())
    if (o != attachOption_ && o != headlessOption_ && o->count() > 0)
      return fail("invalid " + o->get_name() +
                  " with --attach: a followed run keeps the flags it was started with");
  if (attach_.empty()) return fail(format_error({"attach", "", "must be a run directory"}));
  const QString target = QString::fromStdString(attach_);
  if (SshTarget::looksLikeUrl(target)) {
    QString error;
    if (!SshTarget::parse(target, &error)) return fail(error.toStdString());
  } else if (!QFileInfo(target).isDir()) {
    return fail(format_error({"attach", attach_, "not a directory"}));
  }
  return -1;
}

}  // namespace ddpdesk
