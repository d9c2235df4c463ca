// One Qt Test class per file, one executable per test folder: a file ends with
// DDPDESK_TEST_MAIN(Class) (or DDPDESK_TEST_GUILESS_MAIN / DDPDESK_TEST_APPLESS_MAIN, the same
// choice of application object as Qt's QTEST_* macros) instead of a main of its own, and the
// folder's runner (qt_test_runner.cpp) runs the class named on its command line. The folder then
// links once, while CTest keeps one entry per file (tests/CMakeLists.txt).
#pragma once

#include <QtTest/qtest.h>
#include <QObject>
#include <memory>

namespace ddpdesk::test {

// Which application object the runner creates before the test class.
enum class QtApp {
  None,     // QTEST_APPLESS_MAIN
  Default,  // QTEST_MAIN: QApplication where the executable links Qt Widgets, else QCoreApplication
  Core,     // QTEST_GUILESS_MAIN
};

struct QtTestCase {
  const char*
      file;  // the test's __FILE__: its stem ("test_chunked_array") names it on the command line
  const char* className;
  QtApp app;
  void (*initMain)();  // the class's static initMain(), if it has one (as QTEST_MAIN calls it)
  std::unique_ptr<QObject> (*make)();
};

// Adds a test to the runner's list; called from each test file's static initialisation.
bool registerQtTest(const QtTestCase& test);

}  // namespace ddpdesk::test

#define DDPDESK_QTEST_REGISTER_(TestObject, appKind)                                        \
  namespace {                                                                               \
  const bool ddpdesk_qtest_registered = ::ddpdesk::test::registerQtTest(                    \
      {__FILE__, #TestObject, appKind, [] { QTest::Internal::callInitMain<TestObject>(); }, \
       []() -> std::unique_ptr<QObject> { return std::make_unique<TestObject>(); }});       \
  }

#define DDPDESK_TEST_MAIN(TestObject) \
  DDPDESK_QTEST_REGISTER_(TestObject, ::ddpdesk::test::QtApp::Default)
#define DDPDESK_TEST_GUILESS_MAIN(TestObject) \
  DDPDESK_QTEST_REGISTER_(TestObject, ::ddpdesk::test::QtApp::Core)
#define DDPDESK_TEST_APPLESS_MAIN(TestObject) \
  DDPDESK_QTEST_REGISTER_(TestObject, ::ddpdesk::test::QtApp::None)
