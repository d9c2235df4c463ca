// The command line split between ddpdesk and Qt: Qt must not see --name (it would take it as the
// X11 application name), ddpdesk must not see -geometry.
#include <QtTest>

#include "qt_test_main.h"
#include "run_spec.h"
#include "window/gui_args.h"

using namespace ddpdesk;

class TestGuiArgs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void splits() {
    const char* argv[] = {"ddpdesk", "-geometry", "800x600+0+0", "--name",   "run one", "--nproc=2",
                          "--start", "-style",    "fusion",      "--config", "a.json",  "--bogus"};
    const SplitArguments s = splitArguments(int(std::size(argv)), argv);
    QCOMPARE(s.ours, (std::vector<std::string>{"ddpdesk", "--name", "run one", "--nproc=2",
                                               "--start", "--config", "a.json"}));
    QCOMPARE(s.qt, (std::vector<std::string>{"ddpdesk", "-geometry", "800x600+0+0", "-style",
                                             "fusion", "--bogus"}));
  }

  void everySpecFlagIsOurs() {
    for (const FieldInfo& f : run_spec_fields()) {
      const std::string flag = field_label(f.key, Spelling::Flag);
      const char* argv[] = {"ddpdesk", flag.c_str(), "x"};
      const SplitArguments s = splitArguments(3, argv);
      QCOMPARE(s.ours.size(), std::size_t(3));
      QCOMPARE(s.qt.size(), std::size_t(1));
    }
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestGuiArgs)
#include "test_gui_args.moc"
