// frame.h: the frame every stream carries.
//
//   header (32 bytes, little-endian)
//     u32 magic 'HIXL'  u8 version  u8 type  u16 flags(0)
//     u32 status        u32 body_len
//     u64 req_id        u64 payload_len
//   body     body_len bytes: the message (segment list, handshake, ...)
//   payload  payload_len bytes of user data (WRITE requests, READ replies)
//
// magic and version keep their place in every version of the protocol, so a
// peer can always tell an old or new peer from garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hixl::wire {

constexpr uint32_t kMagic = 0x4C584948;  // "HIXL" in little-endian byte order
// 3: HELLO, HELLO_ACK and region tables in sections (extensible without a
// new version), paged region tables, USING. 2: NO_DIRECT, half-closed streams.
constexpr uint8_t kVersion = 3;
constexpr size_t kHeaderSize = 32;

// Limits. A frame beyond them is a protocol error and closes its stream.
constexpr uint32_t kMaxBody = 4u << 20;
constexpr uint32_t kMaxHelloBody = 64u << 10;  // room for transports' offers (a UCX worker address)
constexpr uint32_t kMaxSegmentsPerFrame = 65536;
constexpr uint64_t kMaxPayload = 1ull << 30;
constexpr size_t kMaxEngineName = 256;
constexpr size_t kMaxNotifyField = 1024;
constexpr uint32_t kMaxRegions = 65536;

enum class MsgType : uint8_t {
  kHello = 1,        // initiator -> target, first frame of every stream
  kHelloAck = 2,
  kWriteReq = 3,     // body: segments; payload: the data
  kWriteAck = 4,
  kReadReq = 5,      // body: segments
  kReadResp = 6,     // payload: the data (absent when status != 0)
  kNotifyReq = 7,
  kNotifyAck = 8,
  kRegionsReq = 9,   // asks for the target's region table
  kRegionsResp = 10,
  kPing = 11,
  kPong = 12,
  kBye = 13,         // initiator is closing the link; no reply
  kRevoke = 14,      // target -> initiator, unasked: forget a region (body: region)
  kRevokeAck = 15,   // initiator -> target: done forgetting it; no reply
  kUsing = 16,       // initiator -> target, stream 0: the transport it chose for the link's data; no reply
  kAuthChallenge = 17,  // target -> initiator, answering a HELLO with an auth section: nonce_t, mac_t
  kAuth = 18,        // initiator -> target, after AUTH_CHALLENGE: mac_i; answered by HELLO_ACK
};
constexpr uint8_t kMaxMsgType = 18;

const char *MsgTypeName(MsgType type);
// True for the types an initiator may send (a target accepts only these).
bool IsRequest(MsgType type);
// The reply type of a request (for those without reply: the request's type).
MsgType ReplyOf(MsgType request);
// False for the requests that get no reply (kBye, kRevokeAck, kUsing).
bool ExpectsReply(MsgType request);

struct FrameHeader {
  uint8_t version = kVersion;
  MsgType type = MsgType::kPing;
  uint32_t status = 0;
  uint32_t body_len = 0;
  uint64_t req_id = 0;
  uint64_t payload_len = 0;
};

void EncodeHeader(const FrameHeader &h, uint8_t out[kHeaderSize]);

enum class HeaderError { kOk, kBadMagic, kBadVersion, kBadType, kBadFlags, kBodyTooLong, kPayloadTooLong };
// Decodes and checks everything the header alone can tell. On kBadVersion
// `out->version` holds the peer's version (so a target can say which it speaks).
HeaderError DecodeHeader(const uint8_t in[kHeaderSize], FrameHeader *out);
const char *HeaderErrorName(HeaderError e);

}  // namespace hixl::wire
