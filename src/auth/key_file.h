// key_file.h: reads the shared secret peers prove they hold (the option
// auth.key_file, or HIXL_AUTH_KEY_FILE). The file's bytes are the key, raw,
// less one trailing newline; it must be a regular file of 16 to 4096 bytes
// that neither group nor others may access (mode & 077 == 0, as ssh asks of
// a private key). The key is never logged, nor put in a reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hixl/hixl_types.h"

namespace hixl::auth {

constexpr size_t kMinKeyBytes = 16;
constexpr size_t kMaxKeyBytes = 4096;

// SUCCESS with the key in *key, or PARAM_INVALID with the reason (naming the
// path, never the contents) in *why.
Status ReadKeyFile(const std::string &path, std::vector<uint8_t> *key, std::string *why);

}  // namespace hixl::auth
