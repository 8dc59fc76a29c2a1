// codec.h: little-endian encoding with bounds checks on every read.
//
// Reader never reads past its buffer: a short or malformed input sets a sticky
// failure flag and every later read returns zeros, so decoders check ok() once
// at the end instead of after every field.
//
// Sections (protocol.md): `u16 id, u32 len, len bytes`, one after another to
// the end of what encloses them. A decoder takes the ids it knows and skips the
// others, so a field or a transport can be added without a version bump.
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
  void Bytes(const uint8_t *data, size_t n) { out_->insert(out_->end(), data, data + n); }
  void Bytes(const std::vector<uint8_t> &v) { out_->insert(out_->end(), v.begin(), v.end()); }
  // A section `id` holding what `fill(Writer &)` writes.
  template <class Fill>
  void Section(uint16_t id, Fill &&fill) {
    U16(id);
    const size_t at = out_->size();
    U32(0);
    fill(*this);
    const auto len = static_cast<uint32_t>(out_->size() - at - 4);
    for (int i = 0; i < 4; ++i) (*out_)[at + i] = static_cast<uint8_t>(len >> (8 * i));
  }
  // A u32 written later (a count known at the end): its offset, for Patch32.
  size_t Reserve32() {
    const size_t at = out_->size();
    U32(0);
    return at;
  }
  void Patch32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) (*out_)[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  size_t size() const { return out_->size(); }

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
  // `n` raw bytes (nullptr, and failed, when fewer are left).
  const uint8_t *Take(size_t n) {
    if (!ok_ || size_ - pos_ < n) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t *p = data_ + pos_;
    pos_ += n;
    return p;
  }
  // A Reader over the next `n` bytes, which this one skips.
  Reader Sub(size_t n) {
    const uint8_t *p = Take(n);
    Reader r(p, p == nullptr ? 0 : n);
    if (p == nullptr) r.Fail();
    return r;
  }
  // The next section: false at the end of the input, or when what is left is
  // not a whole section (then ok() is false too).
  bool NextSection(uint16_t *id, Reader *body) {
    if (!ok_ || pos_ == size_) return false;
    *id = U16();
    const uint32_t len = U32();
    *body = Sub(len);
    return ok_;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == size_; }
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
