// Chunked<T>: a growing array in fixed-size chunks, and ChunkedView<T>: a frozen prefix of one.
//
// Appending never moves what is stored. A contiguous vector doubling its capacity copies
// everything and touches twice the memory at once, and every column of a run (6 per rank) reaches
// the same size at the same moment: at millions of points that froze the window for a quarter of
// a second. Chunks are shared, so a view costs a few pointers, not a copy of the data: a worker
// thread can read a view (to rebuild a chart, say) while the owner keeps appending on its own
// thread, because appending writes only past the view's end and never frees or moves a chunk a
// view holds. Overwriting an element below a view's size (operator[] on the Chunked) would race
// with such a reader; the metrics store only appends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace ddpdesk {

namespace chunk_memory {
// `bytes` of zeroed memory for one chunk. With `populate`, every page of it is mapped in one
// call (MAP_POPULATE) instead of one page fault per 4 KiB on first write: on a virtual machine a
// page fault costs microseconds, and a column past its first chunk fills the next one anyway.
// Populating is best effort (the kernel maps what it can); a failed mapping throws bad_alloc.
std::shared_ptr<unsigned char[]> allocate(std::size_t bytes, bool populate);
}  // namespace chunk_memory

template <typename T>
class ChunkedView {
 public:
  static constexpr std::size_t kChunkBytes = 512 * 1024;
  static constexpr std::size_t kChunk = kChunkBytes / sizeof(T);

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    const_iterator() = default;
    const_iterator(const ChunkedView* v, std::size_t i) : v_(v), i_(i) {}
    reference operator*() const { return (*v_)[i_]; }
    pointer operator->() const { return &(*v_)[i_]; }
    reference operator[](difference_type n) const {
      return (*v_)[std::size_t(difference_type(i_) + n)];
    }
    const_iterator& operator++() { return ++i_, *this; }
    const_iterator operator++(int) { return const_iterator(v_, i_++); }
    const_iterator& operator--() { return --i_, *this; }
    const_iterator operator--(int) { return const_iterator(v_, i_--); }
    const_iterator& operator+=(difference_type n) {
      return i_ = std::size_t(difference_type(i_) + n), *this;
    }
    const_iterator& operator-=(difference_type n) { return *this += -n; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return difference_type(a.i_) - difference_type(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.i_ == b.i_;
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) {
      return a.i_ != b.i_;
    }
    friend bool operator<(const const_iterator& a, const const_iterator& b) { return a.i_ < b.i_; }
    friend bool operator>(const const_iterator& a, const const_iterator& b) { return a.i_ > b.i_; }
    friend bool operator<=(const const_iterator& a, const const_iterator& b) {
      return a.i_ <= b.i_;
    }
    friend bool operator>=(const const_iterator& a, const const_iterator& b) {
      return a.i_ >= b.i_;
    }

   private:
    const ChunkedView* v_ = nullptr;
    std::size_t i_ = 0;
  };

  const T& operator[](std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size_ - 1]; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }
  // The first n elements (n <= size()) as a view of their own.
  ChunkedView prefix(std::size_t n) const {
    ChunkedView v;
    n = std::min(n, size_);
    v.chunks_.assign(chunks_.begin(), chunks_.begin() + std::ptrdiff_t((n + kChunk - 1) / kChunk));
    v.size_ = n;
    return v;
  }

 protected:
  std::vector<std::shared_ptr<T[]>> chunks_;
  std::size_t size_ = 0;
};

template <typename T>
class Chunked : public ChunkedView<T> {
  using Base = ChunkedView<T>;

 public:
  using Base::kChunk;

  Chunked() = default;
  // Move-only: a copy would share chunks that both sides then write to.
  Chunked(Chunked&&) noexcept = default;
  Chunked& operator=(Chunked&&) noexcept = default;
  Chunked(const Chunked&) = delete;
  Chunked& operator=(const Chunked&) = delete;

  void push_back(const T& v) {
    if (this->size_ / kChunk == this->chunks_.size()) addChunk();
    this->chunks_[this->size_ / kChunk][this->size_ % kChunk] = v;
    ++this->size_;
  }
  // Grows with `fill`, or forgets the elements past n (their chunks stay allocated).
  void resize(std::size_t n, const T& fill) {
    while (this->size_ < n) push_back(fill);
    this->size_ = std::min(this->size_, n);
  }
  using Base::operator[];
  T& operator[](std::size_t i) { return this->chunks_[i / kChunk][i % kChunk]; }
  void clear() {
    this->chunks_.clear();
    this->size_ = 0;
  }
  // What is stored now, for reading anywhere while this keeps growing.
  ChunkedView<T> view() const { return *this; }

 private:
  // Chunks are raw memory: T is a plain value (a number, a pair of indices), zero is a valid one
  // until it is written, and nothing needs destroying.
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  void addChunk() {
    // The first chunk of a column is mapped lazily (a run of many short columns touches only
    // what it writes); a column that filled one chunk will fill the next.
    const bool populate = !this->chunks_.empty();
    std::shared_ptr<unsigned char[]> raw = chunk_memory::allocate(Base::kChunkBytes, populate);
    this->chunks_.emplace_back(raw, reinterpret_cast<T*>(raw.get()));
  }
};

// A metrics column: every value of one field of one series, in arrival order.
using Column = Chunked<double>;
using ColumnView = ChunkedView<double>;

}  // namespace ddpdesk
