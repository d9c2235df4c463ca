// Chunked columns: index and iterate like a vector across chunk boundaries, never move what is
// stored, and give views that stay valid and unchanged while the column grows or is cleared,
// also when read on another thread.
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "metrics/chunked_array.h"
#include "qt_test_main.h"

using namespace ddpdesk;

class TestChunkedArray : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void behavesLikeAVector() {
    Column c;
    QVERIFY(c.empty());
    const std::size_t n = 3 * Column::kChunk + 17;
    for (std::size_t i = 0; i < n; ++i) c.push_back(double(i));
    QCOMPARE(c.size(), n);
    QCOMPARE(c.front(), 0.0);
    QCOMPARE(c.back(), double(n - 1));
    QCOMPARE(c[Column::kChunk - 1], double(Column::kChunk - 1));
    QCOMPARE(c[Column::kChunk], double(Column::kChunk));
    QCOMPARE(std::size_t(std::distance(c.begin(), c.end())), n);
    // Random access for the standard algorithms (the charts search steps with upper_bound).
    const auto it = std::upper_bound(c.begin(), c.end(), double(2 * Column::kChunk) + 0.5);
    QCOMPARE(std::size_t(it - c.begin()), 2 * Column::kChunk + 1);
    QCOMPARE(std::set<double>(c.begin(), c.end()).size(), n);
    c[5] = -1;
    QCOMPARE(c[5], -1.0);
    c.clear();
    QVERIFY(c.empty());
  }

  void appendingNeverMovesAnElement() {
    Column c;
    c.push_back(1.0);
    const double* first = &c[0];
    for (std::size_t i = 0; i < 5 * Column::kChunk; ++i) c.push_back(2.0);
    QCOMPARE(&c[0], first);
  }

  void resizeGrowsWithAFillAndShrinks() {
    Chunked<int> c;
    c.resize(Chunked<int>::kChunk + 3, 7);
    QCOMPARE(c.size(), Chunked<int>::kChunk + 3);
    QCOMPARE(c.back(), 7);
    c.resize(2, 0);
    QCOMPARE(c.size(), std::size_t(2));
    c.push_back(9);
    QCOMPARE(c[2], 9);
  }

  void viewIsAFrozenPrefix() {
    Column c;
    for (int i = 0; i < 100; ++i) c.push_back(i);
    const ColumnView v = c.view();
    for (std::size_t i = 0; i < 2 * Column::kChunk; ++i) c.push_back(-1);
    QCOMPARE(v.size(), std::size_t(100));
    QCOMPARE(v.back(), 99.0);
    const ColumnView p = c.prefix(Column::kChunk + 1);
    QCOMPARE(p.size(), Column::kChunk + 1);
    QCOMPARE(p[50], 50.0);
    c.clear();  // the view keeps its chunks
    QCOMPARE(v[42], 42.0);
    QCOMPARE(p.back(), -1.0);
  }

  // A reader thread sums a view while this thread appends a few chunks' worth: it sees exactly
  // the values the view had when taken (run it under TSan to check for races).
  void viewReadsWhileTheColumnGrows() {
    Column c;
    const std::size_t n = Column::kChunk + 1000;
    for (std::size_t i = 0; i < n; ++i) c.push_back(1.0);
    const ColumnView v = c.view();
    std::atomic<bool> started{false};
    double sum = 0;
    std::thread reader([&] {
      started = true;
      for (int round = 0; round < 20; ++round)
        for (std::size_t i = 0; i < v.size(); ++i) sum += v[i];
    });
    while (!started) std::this_thread::yield();
    for (std::size_t i = 0; i < 4 * Column::kChunk; ++i) c.push_back(1000.0);
    reader.join();
    QCOMPARE(sum, 20.0 * double(n));
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestChunkedArray)
#include "test_chunked_array.moc"
