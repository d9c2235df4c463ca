// What a tool said about why it failed, as one line: the last non-empty line of its output
// (ssh's "Connection refused", sbatch's complaint, the worker's error), trimmed; empty if none.
#pragma once

#include <QByteArray>
#include <QString>

QString lastLine(const QByteArray& output);
