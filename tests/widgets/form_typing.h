// Typing into a run form field as a person does: select all, erase, then key by key (every
// keystroke revalidates the form). Shared by the run form's tests.
#pragma once

#include <QLineEdit>
#include <QtTest>

#include "form/run_spec_form.h"

namespace ddpdesk::test {

inline void typeInto(RunSpecForm& form, const QString& key, const QString& text) {
  auto* edit = qobject_cast<QLineEdit*>(form.editor(key));
  QVERIFY2(edit, qPrintable(key));
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  QTest::keyClicks(edit, text);
}

}  // namespace ddpdesk::test
