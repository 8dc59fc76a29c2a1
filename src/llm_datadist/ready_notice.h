// ready_notice.h: the hixl notify that tells a peer its pushed KV is in
// place. hixl delivers a notify after the data of every transfer to the same
// remote that completed before it was sent, so the notice is data-ordered.
//
// name: "llm_datadist.kv_ready"; msg: "1;<src cluster>;<status>;<failed
// layers, comma-separated>;<tag>" (the tag last: it may hold any byte).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"
#include "llm_datadist/llm_datadist.h"

namespace llm_datadist {

// False when it does not fit hixl's 1024-byte notify message.
bool EncodeReadyNotice(uint64_t src_cluster, const std::string &tag, Status status,
                       const std::vector<int32_t> &failed_layers, hixl::NotifyDesc *out);
// False for a notify that is not a well-formed notice (from the network:
// every field is checked).
bool DecodeReadyNotice(const hixl::NotifyDesc &notify, KvReadyInfo *out);

}  // namespace llm_datadist
