// codec.h: little-endian encoding with bounds checks on every read.
//
// Reader never reads past its buffer: a short or malformed input sets a sticky
// failure flag and every later read returns zeros, so decoders check ok() once
// at the end instead of after every field.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hixl::wire {

class Writer {
 public:
  explicit Writer(std::vector<uint8_t> *out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  // u32 length, then the bytes.
  void Str(const std::string &s) {
    U32(static_cast<uint32_t>(s.size()));
    out_->insert(out_->end(), s.begin(), s.end());
  }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> *out_;
};

class Reader {
 public:
  Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  // A u32-length-prefixed string of at most max_len bytes.
  std::string Str(size_t max_len) {
    uint32_t n = U32();
    if (!ok_ || n > max_len || n > size_ - pos_) {
      ok_ = false;
      return std::string();
    }
    std::string s(reinterpret_cast<const char *>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? size_ - pos_ : 0; }
  void Fail() { ok_ = false; }
  // True when every byte was consumed and nothing failed.
  bool Done() const { return ok_ && pos_ == size_; }

 private:
  uint64_t Le(size_t n) {
    if (!ok_ || size_ - pos_ < n) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace hixl::wire
