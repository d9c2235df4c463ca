// The main of a folder's Qt Test executable: `ddpdesk_monitor_tests test_chunked_array [Qt Test
// options]` runs the class that tests/monitor/metrics/test_chunked_array.cpp registered, with the
// application object its DDPDESK_TEST_*MAIN macro asks for, as its own executable did with
// QTEST_*MAIN.
#include <QtTest/qtest.h>
#include <QCoreApplication>
#include <QString>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#if defined(QT_WIDGETS_LIB)
#include <QApplication>
#elif defined(QT_GUI_LIB)
#include <QGuiApplication>
#endif

#include "qt_test_main.h"

namespace ddpdesk::test {
namespace {

std::vector<QtTestCase>& registry() {
  static std::vector<QtTestCase> tests;  // filled during static initialisation, before main
  return tests;
}

std::string stemOf(const char* path) {
  std::string name(path);
  const auto slash = name.find_last_of('/');
  if (slash != std::string::npos) name.erase(0, slash + 1);
  const auto dot = name.rfind('.');
  if (dot != std::string::npos) name.erase(dot);
  return name;
}

void listTests(std::FILE* out) {
  for (const auto& t : registry()) std::fprintf(out, "  %s\n", stemOf(t.file).c_str());
}

std::unique_ptr<QCoreApplication> makeApp(QtApp kind, int& argc, char** argv) {
  switch (kind) {
    case QtApp::None:
      return nullptr;
    case QtApp::Default:
#if defined(QT_WIDGETS_LIB)
      return std::make_unique<QApplication>(argc, argv);
#elif defined(QT_GUI_LIB)
      return std::make_unique<QGuiApplication>(argc, argv);
#else
      return std::make_unique<QCoreApplication>(argc, argv);
#endif
    case QtApp::Core:
      return std::make_unique<QCoreApplication>(argc, argv);
  }
  return nullptr;
}

}  // namespace

bool registerQtTest(const QtTestCase& test) {
  registry().push_back(test);
  return true;
}

}  // namespace ddpdesk::test

int main(int argc, char* argv[]) {
  using namespace ddpdesk::test;
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s TEST [Qt Test options]; TEST is one of:\n", argv[0]);
    listTests(stderr);
    return 2;
  }
  const QtTestCase* test = nullptr;
  for (const auto& t : registry()) {
    if (stemOf(t.file) == argv[1] || std::strcmp(t.className, argv[1]) == 0) test = &t;
  }
  if (test == nullptr) {
    std::fprintf(stderr, "%s: no test named '%s'; TEST is one of:\n", argv[0], argv[1]);
    listTests(stderr);
    return 2;
  }
  // Qt Test sees the command line its own executable would have had: the test name removed.
  std::vector<char*> args{argv[0]};
  args.insert(args.end(), argv + 2, argv + argc);
  int qtArgc = static_cast<int>(args.size());
  args.push_back(nullptr);

  test->initMain();
  const auto app = makeApp(test->app, qtArgc, args.data());
  if (app) app->setAttribute(Qt::AA_Use96Dpi, true);
  // The name the file's own executable had: settings and data paths derived from it stay put.
  QCoreApplication::setApplicationName(QString::fromStdString(stemOf(test->file)));
  const auto testObject = test->make();
  QTest::setMainSourcePath(test->file);
  return QTest::qExec(testObject.get(), qtArgc, args.data());
}
