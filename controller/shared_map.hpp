#pragma once
// A sorted map from names to shared, immutable objects whose copies share storage.
//
// The operator publishes a new view of the cluster up to twenty times a second, and a view
// of a thousand nodes holds thousands of entries. As std::maps, every view copied every
// entry (key string included) and freed them again: at 300 nodes, a fifth of the operator's
// CPU. Here the entries live in chunks of at most `max_chunk`, each shared by every copy
// until one copy changes it: a copy costs a pointer per chunk, and a change copies one
// chunk of its map.
//
// A chunk, once made, is never changed: a change makes a new one (use_count() is no test
// that no other thread still reads it, without a fence ThreadSanitizer cannot follow).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpu_partitioner::controller {

template <class T>
class shared_map {
public:
  using key_type = std::string;
  using mapped_type = std::shared_ptr<const T>;
  using value_type = std::pair<std::string, mapped_type>;
  static constexpr std::size_t max_chunk = 64;

private:
  using chunk = std::vector<value_type>;
  using chunk_ptr = std::shared_ptr<const chunk>;

public:
  class const_iterator {
  public:
    using value_type = shared_map::value_type;
    using reference = const value_type&;
    using pointer = const value_type*;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;

    const_iterator() = default;
    reference operator*() const { return (*(*chunks_)[c_])[e_]; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      if (++e_ == (*chunks_)[c_]->size()) {
        ++c_;
        e_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      auto was = *this;
      ++*this;
      return was;
    }
    bool operator==(const const_iterator& o) const { return c_ == o.c_ && e_ == o.e_; }
    bool operator!=(const const_iterator& o) const { return !(*this == o); }

  private:
    friend class shared_map;
    const_iterator(const std::vector<chunk_ptr>* chunks, std::size_t c, std::size_t e)
        : chunks_(chunks), c_(c), e_(e) {}
    const std::vector<chunk_ptr>* chunks_ = nullptr;
    std::size_t c_ = 0;
    std::size_t e_ = 0;
  };
  using iterator = const_iterator;

  const_iterator begin() const { return {&chunks_, 0, 0}; }
  const_iterator end() const { return {&chunks_, chunks_.size(), 0}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// The first entry whose key is not below `key` (end() if none).
  const_iterator lower_bound(const std::string& key) const {
    const auto c = chunk_for(key);
    if (c == chunks_.size())
      return end();
    const auto& ch = *chunks_[c];
    auto it = std::lower_bound(ch.begin(), ch.end(), key, less_key);
    return {&chunks_, c, static_cast<std::size_t>(it - ch.begin())};
  }
  const_iterator find(const std::string& key) const {
    auto it = lower_bound(key);
    return it == end() || it->first != key ? end() : it;
  }
  std::size_t count(const std::string& key) const { return find(key) == end() ? 0 : 1; }
  const mapped_type& at(const std::string& key) const {
    auto it = find(key);
    if (it == end())
      throw std::out_of_range("shared_map::at: no " + key);
    return it->second;
  }

  /// Inserts or replaces.
  void set(const std::string& key, mapped_type value) { (*this)[key] = std::move(value); }

  /// The value under `key`, inserted empty if absent, to assign at once (the reference
  /// is good until the map next changes; maps that shared the chunk do not see it).
  mapped_type& operator[](const std::string& key) {
    if (chunks_.empty()) {
      auto first = std::make_shared<chunk>(1, value_type{key, nullptr});
      chunks_.push_back(first);
      size_ = 1;
      return (*first)[0].second;
    }
    auto c = chunk_for(key);
    if (c == chunks_.size())
      c = chunks_.size() - 1; // past every key: the last chunk takes it
    auto& ch = editable(c);
    auto it = std::lower_bound(ch.begin(), ch.end(), key, less_key);
    if (it != ch.end() && it->first == key)
      return it->second;
    const auto at = static_cast<std::size_t>(it - ch.begin());
    ch.insert(it, value_type{key, nullptr});
    ++size_;
    if (ch.size() <= max_chunk)
      return ch[at].second;
    // Split the full chunk in two halves.
    const std::size_t half = ch.size() / 2;
    auto tail = std::make_shared<chunk>(std::make_move_iterator(ch.begin() + half),
                                        std::make_move_iterator(ch.end()));
    ch.erase(ch.begin() + half, ch.end());
    chunks_.insert(chunks_.begin() + c + 1, tail);
    return at < half ? ch[at].second : (*tail)[at - half].second;
  }

  std::size_t erase(const std::string& key) {
    const auto it = find(key);
    if (it == end())
      return 0;
    auto& ch = editable(it.c_);
    ch.erase(ch.begin() + static_cast<std::ptrdiff_t>(it.e_));
    --size_;
    if (ch.empty())
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(it.c_));
    return 1;
  }

  void clear() {
    chunks_.clear();
    size_ = 0;
  }

private:
  static bool less_key(const value_type& v, const std::string& key) { return v.first < key; }

  // The first chunk whose last key is not below `key`; chunks_.size() if none.
  std::size_t chunk_for(const std::string& key) const {
    auto it = std::lower_bound(
        chunks_.begin(), chunks_.end(), key,
        [](const chunk_ptr& ch, const std::string& k) { return ch->back().first < k; });
    return static_cast<std::size_t>(it - chunks_.begin());
  }

  // A new copy of chunk `c`, in its place, to change before anyone else sees it.
  chunk& editable(std::size_t c) {
    auto copy = std::make_shared<chunk>(*chunks_[c]);
    chunks_[c] = copy;
    return *copy;
  }

  std::vector<chunk_ptr> chunks_;
  std::size_t size_ = 0;
};

} // namespace gpu_partitioner::controller
