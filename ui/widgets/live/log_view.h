// The log view: every rank's stdout and stderr, each line tagged with its rank, filterable by
// rank; monitor warnings too. When a run fails, a banner above the log shows the reason and the
// failed rank's last lines. Lines are batched onto the screen by a timer, never one by one.
#pragma once

#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>
#include <deque>

class QComboBox;
class QLabel;
class QPlainTextEdit;

namespace ddpdesk {

// Bounded history of tagged lines; pure, so filtering is tested without widgets.
class LogBuffer {
 public:
  static constexpr int kMonitor = -1;  // the rank of the monitor's own lines
  static constexpr int kAll = -2;      // filter: every line

  struct Line {
    int rank;
    bool isStderr;
    QString text;
  };

  explicit LogBuffer(std::size_t capacity = 50000) : capacity_(capacity) {}
  void append(int rank, bool isStderr, const QString& text);
  void clear() { lines_.clear(); }
  std::size_t size() const { return lines_.size(); }
  const std::deque<Line>& lines() const { return lines_; }

  static bool matches(const Line& line, int filter) {
    return filter == kAll || line.rank == filter;
  }
  static QString format(const Line& line);  // "[rank 1] text", "[monitor] text"
  // The lines a filter shows, formatted, oldest first.
  QStringList filtered(int filter) const;

 private:
  std::size_t capacity_;
  std::deque<Line> lines_;
};

class LogView : public QWidget {
  Q_OBJECT
 public:
  explicit LogView(QWidget* parent = nullptr);

  void appendLine(int rank, bool isStderr, const QString& text);
  // Offers "rank 0" .. "rank world-1" in the filter.
  void setWorld(int world);
  void setFilter(int rank);  // LogBuffer::kAll, kMonitor or a rank
  int filter() const;
  void clear();

  // The banner: a title ("Run failed") and the reason (first line: what happened; then the
  // rank's last stderr lines, shown in a fixed-width font).
  void showFailure(const QString& title, const QString& reason);
  void clearFailure();
  bool failureShown() const;
  QString failureText() const;

  // Puts pending lines on screen now (the timer does it ten times a second).
  void flush();
  const LogBuffer& buffer() const { return buffer_; }
  QString visibleText() const;

 private:
  void refill();

  LogBuffer buffer_;
  std::deque<LogBuffer::Line> pending_;
  QComboBox* filter_;
  QLabel* banner_;
  QPlainTextEdit* text_;
  QTimer timer_;
};

}  // namespace ddpdesk
