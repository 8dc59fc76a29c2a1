// Unit tests for src/auth: the key file's rules, the libcrypto loader
// (against an RFC 4231 test vector), the proofs (each input bound, the two
// roles apart, one flipped bit refused), and the auth.key_file option.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "auth/authenticator.h"
#include "auth/key_file.h"
#include "auth/libcrypto.h"
#include "engine/options.h"

namespace hixl::auth {
namespace {

// A file with `bytes` and `mode`, removed with the object.
class TempFile {
 public:
  TempFile(const std::string &bytes, mode_t mode) {
    char tmpl[] = "/tmp/hixl_auth_test_XXXXXX";
    const int fd = mkstemp(tmpl);
    path_ = tmpl;
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    EXPECT_EQ(fchmod(fd, mode), 0);
    close(fd);
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

const std::string kKey = "0123456789abcdef-a-test-key";

std::vector<uint8_t> Bytes(const std::string &s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(AuthKeyFile, ReadsRawBytesLessOneTrailingNewline) {
  for (const std::string &tail : {std::string(), std::string("\n"), std::string("\r\n")}) {
    TempFile f(kKey + tail, 0600);
    std::vector<uint8_t> key;
    std::string why;
    ASSERT_EQ(ReadKeyFile(f.path(), &key, &why), SUCCESS) << why;
    EXPECT_EQ(key, Bytes(kKey));
  }
  // Only one newline goes: a second is part of the key.
  TempFile f(kKey + "\n\n", 0400);
  std::vector<uint8_t> key;
  std::string why;
  ASSERT_EQ(ReadKeyFile(f.path(), &key, &why), SUCCESS) << why;
  EXPECT_EQ(key, Bytes(kKey + "\n"));
}

TEST(AuthKeyFile, RefusesShortOpenMissingAndOddFilesWithoutShowingTheKey) {
  struct Case {
    std::string bytes;
    mode_t mode;
    const char *reason;
  };
  const std::string secret = "s3cr3t-s3cr3t-s3cr3t";
  const Case cases[] = {
      {"fifteen-bytes!!", 0600, "fewer than 16"},
      {"fifteen-bytes!!\n", 0600, "fewer than 16"},
      {secret, 0644, "chmod 600"},
      {secret, 0640, "chmod 600"},
      {secret, 0604, "chmod 600"},
      {std::string(kMaxKeyBytes + 1, 'k'), 0600, "more than"},
      {std::string(kMaxKeyBytes + 100, 'k'), 0600, "more than"},
  };
  for (const Case &c : cases) {
    TempFile f(c.bytes, c.mode);
    std::vector<uint8_t> key;
    std::string why;
    EXPECT_EQ(ReadKeyFile(f.path(), &key, &why), PARAM_INVALID) << c.reason;
    EXPECT_NE(why.find(c.reason), std::string::npos) << why;
    EXPECT_NE(why.find(f.path()), std::string::npos) << why;
    EXPECT_EQ(why.find(secret), std::string::npos) << "the key is in the reason: " << why;
    EXPECT_TRUE(key.empty());
  }
  std::vector<uint8_t> key;
  std::string why;
  EXPECT_EQ(ReadKeyFile("/nonexistent/hixl.key", &key, &why), PARAM_INVALID);
  EXPECT_NE(why.find("cannot open"), std::string::npos) << why;
  EXPECT_EQ(ReadKeyFile("/tmp", &key, &why), PARAM_INVALID);
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  if (geteuid() != 0) {  // root reads whatever the mode says
    TempFile f(secret, 0200);
    EXPECT_EQ(ReadKeyFile(f.path(), &key, &why), PARAM_INVALID);
    EXPECT_NE(why.find("cannot open"), std::string::npos) << why;
  }
}

TEST(AuthLibCrypto, HmacSha256MatchesRfc4231AndAMissingLibraryIsReported) {
  std::string why;
  const Crypto *c = LoadCrypto(&why);
  ASSERT_NE(c, nullptr) << why;
  // RFC 4231, test case 1.
  const std::vector<uint8_t> key(20, 0x0b);
  const std::string data = "Hi There";
  unsigned char mac[32];
  unsigned int len = 0;
  ASSERT_NE(c->hmac(c->sha256(), key.data(), static_cast<int>(key.size()),
                    reinterpret_cast<const unsigned char *>(data.data()), data.size(), mac, &len),
            nullptr);
  ASSERT_EQ(len, 32u);
  const uint8_t want[32] = {0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf,
                            0xce, 0xaf, 0x0b, 0xf1, 0x2b, 0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83,
                            0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
  EXPECT_EQ(std::vector<uint8_t>(mac, mac + 32), std::vector<uint8_t>(want, want + 32));

  Loaded absent = LoadFrom("libcrypto-not-installed.so.3");
  EXPECT_EQ(absent.crypto.hmac, nullptr);
  EXPECT_NE(absent.why.find("cannot load libcrypto-not-installed.so.3"), std::string::npos) << absent.why;
}

class AuthProof : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    crypto_ = LoadCrypto(&why);
    ASSERT_NE(crypto_, nullptr) << why;
    a_ = std::make_unique<Authenticator>(Bytes(kKey), *crypto_);
    ASSERT_TRUE(a_->NewNonce(&ni_));
    ASSERT_TRUE(a_->NewNonce(&nt_));
  }
  const Crypto *crypto_ = nullptr;
  std::unique_ptr<Authenticator> a_;
  Nonce ni_{}, nt_{};
};

TEST_F(AuthProof, ChecksItsOwnProofAndRefusesEveryChangedInput) {
  const Mac t = a_->Prove(Role::kTarget, ni_, nt_, "10.0.0.1", "10.0.0.2:16000");
  const Mac i = a_->Prove(Role::kInitiator, ni_, nt_, "10.0.0.1", "10.0.0.2:16000");
  EXPECT_TRUE(a_->Check(Role::kTarget, ni_, nt_, "10.0.0.1", "10.0.0.2:16000", t));
  EXPECT_TRUE(a_->Check(Role::kInitiator, ni_, nt_, "10.0.0.1", "10.0.0.2:16000", i));
  EXPECT_NE(t, i) << "one role's proof must not serve as the other's (reflection)";
  EXPECT_FALSE(a_->Check(Role::kInitiator, ni_, nt_, "10.0.0.1", "10.0.0.2:16000", t));
  // Every bit of the proof matters.
  for (size_t bit = 0; bit < kMacBytes * 8; ++bit) {
    Mac flipped = t;
    flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_FALSE(a_->Check(Role::kTarget, ni_, nt_, "10.0.0.1", "10.0.0.2:16000", flipped)) << "bit " << bit;
  }
  // Each nonce and each name is bound; names cannot run together.
  Nonce other = ni_;
  other[31] ^= 1;
  EXPECT_FALSE(a_->Check(Role::kTarget, other, nt_, "10.0.0.1", "10.0.0.2:16000", t));
  EXPECT_FALSE(a_->Check(Role::kTarget, ni_, other, "10.0.0.1", "10.0.0.2:16000", t));
  EXPECT_FALSE(a_->Check(Role::kTarget, nt_, ni_, "10.0.0.1", "10.0.0.2:16000", t));
  EXPECT_FALSE(a_->Check(Role::kTarget, ni_, nt_, "10.0.0.9", "10.0.0.2:16000", t));
  EXPECT_FALSE(a_->Check(Role::kTarget, ni_, nt_, "10.0.0.1", "10.0.0.3:16000", t));
  EXPECT_FALSE(a_->Check(Role::kTarget, ni_, nt_, "10.0.0.110.0.0.2:16000", "", t));
  // Another key, however close, proves nothing.
  std::string near = kKey;
  near.back() ^= 1;
  Authenticator b(Bytes(near), *crypto_);
  EXPECT_FALSE(b.Check(Role::kTarget, ni_, nt_, "10.0.0.1", "10.0.0.2:16000", t));
}

TEST_F(AuthProof, NoncesAreFresh) {
  Nonce a{}, b{};
  ASSERT_TRUE(a_->NewNonce(&a));
  ASSERT_TRUE(a_->NewNonce(&b));
  EXPECT_NE(a, b);
  EXPECT_NE(a, Nonce{});
}

TEST(AuthOptions, KeyFileIsAGlobalResourceConfigPathAndTheOptionWinsOverTheEnvironment) {
  EngineOptions o;
  std::string why;
  ASSERT_EQ(ParseEngineOptions({{OPTION_GLOBAL_RESOURCE_CONFIG, R"({"auth.key_file":"/etc/hixl.key"})"}}, &o, &why),
            SUCCESS)
      << why;
  EXPECT_EQ(o.auth_key_file, "/etc/hixl.key");
  for (const char *bad : {R"({"auth.key_file":""})", R"({"auth.key_file":7})", R"({"auth.key_file":["a"]})"}) {
    EXPECT_EQ(ParseEngineOptions({{OPTION_GLOBAL_RESOURCE_CONFIG, bad}}, &o, &why), PARAM_INVALID) << bad;
    EXPECT_NE(why.find("auth.key_file"), std::string::npos) << why;
  }
  ASSERT_EQ(setenv("HIXL_AUTH_KEY_FILE", "/from/env", 1), 0);
  EXPECT_EQ(KeyFilePath("/from/option"), "/from/option");
  EXPECT_EQ(KeyFilePath(""), "/from/env");
  unsetenv("HIXL_AUTH_KEY_FILE");
  EXPECT_EQ(KeyFilePath(""), "");
}

}  // namespace
}  // namespace hixl::auth
