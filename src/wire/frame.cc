#include "wire/frame.h"

#include <vector>

#include "wire/codec.h"

namespace hixl::wire {

const char *MsgTypeName(MsgType type) {
  switch (type) {
    case MsgType::kHello: return "HELLO";
    case MsgType::kHelloAck: return "HELLO_ACK";
    case MsgType::kWriteReq: return "WRITE_REQ";
    case MsgType::kWriteAck: return "WRITE_ACK";
    case MsgType::kReadReq: return "READ_REQ";
    case MsgType::kReadResp: return "READ_RESP";
    case MsgType::kNotifyReq: return "NOTIFY_REQ";
    case MsgType::kNotifyAck: return "NOTIFY_ACK";
    case MsgType::kRegionsReq: return "REGIONS_REQ";
    case MsgType::kRegionsResp: return "REGIONS_RESP";
    case MsgType::kPing: return "PING";
    case MsgType::kPong: return "PONG";
    case MsgType::kBye: return "BYE";
    case MsgType::kRevoke: return "REVOKE";
    case MsgType::kRevokeAck: return "REVOKE_ACK";
    case MsgType::kUsing: return "USING";
    case MsgType::kAuthChallenge: return "AUTH_CHALLENGE";
    case MsgType::kAuth: return "AUTH";
  }
  return "UNKNOWN";
}

bool IsRequest(MsgType type) {
  switch (type) {
    case MsgType::kHello:
    case MsgType::kWriteReq:
    case MsgType::kReadReq:
    case MsgType::kNotifyReq:
    case MsgType::kRegionsReq:
    case MsgType::kPing:
    case MsgType::kBye:
    case MsgType::kRevokeAck:
    case MsgType::kUsing:
    case MsgType::kAuth:
      return true;
    default:
      return false;
  }
}

bool ExpectsReply(MsgType request) {
  return request != MsgType::kBye && request != MsgType::kRevokeAck && request != MsgType::kUsing;
}

MsgType ReplyOf(MsgType request) {
  switch (request) {
    case MsgType::kHello: return MsgType::kHelloAck;  // or AUTH_CHALLENGE (a target with a key)
    case MsgType::kAuth: return MsgType::kHelloAck;
    case MsgType::kWriteReq: return MsgType::kWriteAck;
    case MsgType::kReadReq: return MsgType::kReadResp;
    case MsgType::kNotifyReq: return MsgType::kNotifyAck;
    case MsgType::kRegionsReq: return MsgType::kRegionsResp;
    case MsgType::kPing: return MsgType::kPong;
    default: return request;
  }
}

void EncodeHeader(const FrameHeader &h, uint8_t out[kHeaderSize]) {
  std::vector<uint8_t> buf;
  buf.reserve(kHeaderSize);
  Writer w(&buf);
  w.U32(kMagic);
  w.U8(h.version);
  w.U8(static_cast<uint8_t>(h.type));
  w.U16(0);
  w.U32(h.status);
  w.U32(h.body_len);
  w.U64(h.req_id);
  w.U64(h.payload_len);
  for (size_t i = 0; i < kHeaderSize; ++i) out[i] = buf[i];
}

HeaderError DecodeHeader(const uint8_t in[kHeaderSize], FrameHeader *out) {
  Reader r(in, kHeaderSize);
  if (r.U32() != kMagic) return HeaderError::kBadMagic;
  out->version = r.U8();
  uint8_t type = r.U8();
  uint16_t flags = r.U16();
  out->status = r.U32();
  out->body_len = r.U32();
  out->req_id = r.U64();
  out->payload_len = r.U64();
  if (out->version != kVersion) return HeaderError::kBadVersion;
  if (type < static_cast<uint8_t>(MsgType::kHello) || type > kMaxMsgType) {
    return HeaderError::kBadType;
  }
  out->type = static_cast<MsgType>(type);
  if (flags != 0) return HeaderError::kBadFlags;
  if (out->body_len > kMaxBody) return HeaderError::kBodyTooLong;
  if (out->payload_len > kMaxPayload) return HeaderError::kPayloadTooLong;
  return HeaderError::kOk;
}

const char *HeaderErrorName(HeaderError e) {
  switch (e) {
    case HeaderError::kOk: return "ok";
    case HeaderError::kBadMagic: return "bad magic";
    case HeaderError::kBadVersion: return "unsupported protocol version";
    case HeaderError::kBadType: return "unknown message type";
    case HeaderError::kBadFlags: return "reserved flags set";
    case HeaderError::kBodyTooLong: return "body too long";
    case HeaderError::kPayloadTooLong: return "payload too long";
  }
  return "?";
}

}  // namespace hixl::wire
