// auth_test.cc: peer authentication (docs/security.md). Engines with the same
// key move bytes over tcp and shm; a wrong key, a keyless initiator and a
// keyless target are refused, clearly and within the connect timeout; and
// raw peers show that a keyed target sends nothing of its own (no region
// table) before the proof, that a replayed handshake and a proof with one bit
// flipped fail, and that an initiator refuses a target that cannot prove it.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "auth/authenticator.h"
#include "auth/libcrypto.h"
#include "hixl/hixl_log.h"
#include "integration/fixture.h"
#include "integration/net_util.h"
#include "wire/frame.h"
#include "wire/messages.h"

using namespace hixl_test;
namespace w = hixl::wire;

namespace {

// A key file (mode 0600), removed with the object.
class KeyFile {
 public:
  explicit KeyFile(const std::string &key) {
    char tmpl[] = "/tmp/hixl_auth_key_XXXXXX";
    const int fd = mkstemp(tmpl);
    path_ = tmpl;
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, key.data(), key.size()), static_cast<ssize_t>(key.size()));
    close(fd);
    key_.assign(key.begin(), key.end());
  }
  ~KeyFile() { unlink(path_.c_str()); }
  const std::string &path() const { return path_; }
  std::string Config() const { return R"({"auth.key_file":")" + path_ + R"("})"; }
  // The Authenticator this key makes, for raw peers.
  std::unique_ptr<hixl::auth::Authenticator> Make() const {
    std::string why;
    const hixl::auth::Crypto *c = hixl::auth::LoadCrypto(&why);
    EXPECT_NE(c, nullptr) << why;
    return std::make_unique<hixl::auth::Authenticator>(key_, *c);
  }

 private:
  std::string path_;
  std::vector<uint8_t> key_;
};

// Collects what the library logs while alive.
class LogCapture {
 public:
  LogCapture() { hixl::SetLogSink(&LogCapture::Sink, this); }
  ~LogCapture() { hixl::SetLogSink(nullptr, nullptr); }
  bool Has(const std::string &text) {
    std::lock_guard<std::mutex> lock(mu_);
    return all_.find(text) != std::string::npos;
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mu_);
    return all_;
  }

 private:
  static void Sink(hixl::LogLevel, const char *line, void *user) {
    auto *self = static_cast<LogCapture *>(user);
    std::lock_guard<std::mutex> lock(self->mu_);
    self->all_ += line;
    self->all_ += '\n';
  }
  std::mutex mu_;
  std::string all_;
};

std::string ReadAll(const std::string &path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t Count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::chrono::steady_clock::time_point In(int ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}

// One frame with its body (no payload expected); false if none came.
bool ReadFrame(int fd, w::FrameHeader *h, std::vector<uint8_t> *body, int ms = 3000) {
  uint8_t hdr[w::kHeaderSize];
  if (!RecvExactly(fd, hdr, sizeof(hdr), In(ms)) || w::DecodeHeader(hdr, h) != w::HeaderError::kOk) return false;
  body->resize(h->body_len);
  return h->payload_len == 0 && RecvExactly(fd, body->data(), body->size(), In(ms));
}

// True if nothing at all arrives on `fd` for `ms` (and the stream stays open).
bool Silent(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 0;
}

w::Hello MakeHello(const std::string &target, bool with_auth, uint16_t index = 0) {
  w::Hello h;
  h.initiator = "127.0.0.1";
  h.target = target;
  h.link_nonce = 77;
  h.stream_index = index;
  h.stream_count = 2;
  h.has_auth = with_auth;
  for (size_t i = 0; i < h.auth_nonce.size(); ++i) h.auth_nonce[i] = static_cast<uint8_t>(rand());
  return h;
}

std::vector<uint8_t> HelloBytes(const w::Hello &hello) {
  std::vector<uint8_t> body;
  w::EncodeHello(hello, &body);
  w::FrameHeader h;
  h.type = w::MsgType::kHello;
  return Frame(h, body);
}

std::vector<uint8_t> AuthBytes(const hixl::auth::Mac &mac) {
  std::vector<uint8_t> body;
  w::EncodeAuth(mac, &body);
  w::FrameHeader h;
  h.type = w::MsgType::kAuth;
  return Frame(h, body);
}

// Expects one refusing HELLO_ACK naming `why`, with no region in it, and
// then the end of the stream: nothing else.
void ExpectOnlyRefusal(int fd, const std::string &why) {
  w::FrameHeader h;
  std::vector<uint8_t> body;
  ASSERT_TRUE(ReadFrame(fd, &h, &body));
  EXPECT_EQ(h.type, w::MsgType::kHelloAck);
  EXPECT_NE(h.status, 0u);
  w::HelloAck ack;
  ASSERT_TRUE(w::DecodeHelloAck(body.data(), body.size(), &ack));
  EXPECT_NE(ack.reason.find(why), std::string::npos) << ack.reason;
  EXPECT_EQ(ack.regions.total, 0u);
  EXPECT_TRUE(ack.regions.entries.empty());
  EXPECT_TRUE(EndedWithin(fd, 3000)) << "the stream stays open, or more came, after the refusal";
}

// ------------------------------------------------------ engines, both sides

class AuthLink : public ::testing::TestWithParam<const char *> {
 protected:
  void TearDown() override {
    engine_.Finalize();
    peer_.Stop();
  }
  // A peer serving with `config` (GlobalResourceConfig), and our engine
  // initialized with `config_here` for this test's transport.
  void Start(const std::string &config, const std::string &config_here) {
    peer_.stderr_path = stderr_path_;
    // The refusals and the no-key warning are warnings (the suites run at
    // HIXL_LOG_LEVEL=error: see scripts/modes.sh).
    peer_.env.push_back("HIXL_LOG_LEVEL=warn");
    ASSERT_TRUE(peer_.Start(false, config));
    auto opts = config_here.empty() ? std::map<hixl::AscendString, hixl::AscendString>()
                                    : ResourceConfig(config_here);
    ASSERT_EQ(engine_.Initialize("127.0.0.1", WithTransport(opts, GetParam())), hixl::SUCCESS);
  }
  // A round trip of 1 MiB: WRITE then READ back, bytes compared.
  void ExpectBytesMove() {
    constexpr size_t kLen = 1u << 20;
    size_t id = 0;
    const uintptr_t remote = peer_.AllocRegistered(kLen, &id);
    ASSERT_NE(remote, 0u);
    LocalBuffer out(kLen), in(kLen);
    RegisterWith(engine_, out);
    RegisterWith(engine_, in);
    ASSERT_EQ(engine_.Connect(peer_.name().c_str(), 3000), hixl::SUCCESS);
    hixl::AscendString transport;
    ASSERT_EQ(engine_.GetLinkTransport(peer_.name().c_str(), transport), hixl::SUCCESS);
    EXPECT_STREQ(transport.GetString(), GetParam());
    FillPattern(out.data(), kLen, 21);
    std::vector<hixl::TransferOpDesc> d = {{out.addr(), remote, kLen}};
    ASSERT_EQ(engine_.TransferSync(peer_.name().c_str(), hixl::WRITE, d, 5000), hixl::SUCCESS);
    EXPECT_EQ(peer_.HashOf(id, 0, kLen), Hash(out.data(), kLen));
    d = {{in.addr(), remote, kLen}};
    ASSERT_EQ(engine_.TransferSync(peer_.name().c_str(), hixl::READ, d, 5000), hixl::SUCCESS);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), kLen), 0);
  }
  // Connect fails (not by its timeout: at once), with `why` in our log.
  void ExpectRefused(const std::string &why) {
    LogCapture log;
    const auto t0 = std::chrono::steady_clock::now();
    const hixl::Status s = engine_.Connect(peer_.name().c_str(), 3000);
    EXPECT_EQ(s, hixl::FAILED);
    EXPECT_LT(SecondsSince(t0), 2.0) << "a refusal should not wait for the connect timeout";
    EXPECT_TRUE(log.Has(why)) << log.All();
  }

  // Stops the peer; what it logged.
  std::string PeerLog() {
    peer_.Stop();
    const std::string err = ReadAll(stderr_path_);
    unlink(stderr_path_.c_str());
    return err;
  }

  std::string stderr_path_ = "/tmp/hixl_auth_peer_" + std::to_string(getpid()) + ".log";
  PeerProcess peer_;
  hixl::Hixl engine_;
};

INSTANTIATE_TEST_SUITE_P(Transports, AuthLink, ::testing::Values("tcp", "shm"));

TEST_P(AuthLink, SameKeyMovesBytes) {
  KeyFile key("a shared secret of 32 bytes.....");
  Start(key.Config(), key.Config());
  ExpectBytesMove();
}

TEST_P(AuthLink, WrongKeyIsRefused) {
  KeyFile key("a shared secret of 32 bytes.....");
  KeyFile other("a shared secret of 32 bytes....,");
  Start(key.Config(), other.Config());
  ExpectRefused("stream 0: peer failed authentication: its proof does not match our key");
}

TEST_P(AuthLink, KeylessInitiatorGetsAClearRefusalAndTheTargetLogsWho) {
  KeyFile key("a shared secret of 32 bytes.....");
  Start(key.Config(), "");
  ExpectRefused("peer requires authentication");
  const std::string err = PeerLog();
  EXPECT_NE(err.find("refusing handshake: peer requires authentication"), std::string::npos) << err;
  EXPECT_NE(err.find("(127.0.0.1:"), std::string::npos) << "the refused peer's address: " << err;
  EXPECT_EQ(err.find("a shared secret"), std::string::npos) << "the key is in the log: " << err;
}

TEST_P(AuthLink, KeyedInitiatorRefusesAKeylessTarget) {
  KeyFile key("a shared secret of 32 bytes.....");
  Start("", key.Config());
  ExpectRefused("peer did not authenticate itself");
  const std::string err = PeerLog();
  EXPECT_EQ(Count(err, "no auth key: any peer that can connect may read and write registered memory"), 1u) << err;
}

TEST_P(AuthLink, TheEnvironmentSuppliesTheKeyAndTheOptionWins) {
  KeyFile key("a shared secret of 32 bytes.....");
  KeyFile other("another secret, of 31 bytes....");
  peer_.env.push_back("HIXL_AUTH_KEY_FILE=" + key.path());
  ASSERT_EQ(setenv("HIXL_AUTH_KEY_FILE", other.path().c_str(), 1), 0);
  Start("", key.Config());  // our option names the right key: it wins over the environment
  unsetenv("HIXL_AUTH_KEY_FILE");
  ExpectBytesMove();
  const std::string err = PeerLog();
  EXPECT_EQ(Count(err, "no auth key"), 0u) << err;
}

TEST(AuthInitialize, ABadKeyFileFailsInitializeWithTheReason) {
  KeyFile short_key("only 15 bytes..");
  KeyFile open_key("a shared secret of 32 bytes.....");
  ASSERT_EQ(chmod(open_key.path().c_str(), 0644), 0);
  const std::pair<std::string, std::string> cases[] = {
      {short_key.path(), "fewer than 16"},
      {open_key.path(), "chmod 600"},
      {"/nonexistent/hixl.key", "cannot open"},
  };
  for (const auto &[path, why] : cases) {
    LogCapture log;
    hixl::Hixl e;
    EXPECT_EQ(e.Initialize("127.0.0.1", ResourceConfig(R"({"auth.key_file":")" + path + R"("})")),
              hixl::PARAM_INVALID)
        << path;
    EXPECT_TRUE(log.Has(why)) << log.All();
    EXPECT_FALSE(log.Has("a shared secret")) << "the key is in the log";
  }
}

// -------------------------------------------------------------- raw peers

class AuthRaw : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ServeOnFreePort(target_, &name_, ResourceConfig(key_.Config())));
    mem_ = RegisterWith(target_, buf_);
  }
  void TearDown() override { target_.Finalize(); }

  // A handshake up to the challenge: the HELLO sent, AUTH_CHALLENGE read.
  int UpToChallenge(const w::Hello &hello, w::AuthChallenge *challenge) {
    const int fd = RawConnect(name_);
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(SendAll(fd, HelloBytes(hello)));
    w::FrameHeader h;
    std::vector<uint8_t> body;
    EXPECT_TRUE(ReadFrame(fd, &h, &body));
    EXPECT_EQ(h.type, w::MsgType::kAuthChallenge);
    EXPECT_EQ(h.status, 0u);
    EXPECT_TRUE(w::DecodeAuthChallenge(body.data(), body.size(), challenge));
    return fd;
  }
  hixl::auth::Mac ProofFor(const w::Hello &hello, const w::AuthChallenge &c) {
    return auth_->Prove(hixl::auth::Role::kInitiator, hello.auth_nonce, c.nonce_t, hello.initiator, hello.target);
  }

  KeyFile key_{"the raw peers' key, 24 b"};
  std::unique_ptr<hixl::auth::Authenticator> auth_ = key_.Make();
  hixl::Hixl target_;
  std::string name_;
  LocalBuffer buf_{1u << 16};
  hixl::MemHandle mem_ = nullptr;
};

TEST_F(AuthRaw, AHelloWithoutProofGetsOnlyTheRefusalOnEveryStream) {
  for (uint16_t index : {0, 1}) {
    const int fd = RawConnect(name_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, HelloBytes(MakeHello(name_, false, index))));
    ExpectOnlyRefusal(fd, "peer requires authentication");
    close(fd);
  }
}

TEST_F(AuthRaw, TheChallengeComesAloneAndTheRightProofGetsTheTable) {
  const w::Hello hello = MakeHello(name_, true);
  w::AuthChallenge c;
  const int fd = UpToChallenge(hello, &c);
  // The target proves the key first, and sends nothing else until we do.
  EXPECT_TRUE(auth_->Check(hixl::auth::Role::kTarget, hello.auth_nonce, c.nonce_t, hello.initiator, hello.target,
                           c.mac_t));
  EXPECT_TRUE(Silent(fd, 200)) << "bytes beyond AUTH_CHALLENGE before our proof";
  ASSERT_TRUE(SendAll(fd, AuthBytes(ProofFor(hello, c))));
  w::FrameHeader h;
  std::vector<uint8_t> body;
  ASSERT_TRUE(ReadFrame(fd, &h, &body));
  ASSERT_EQ(h.type, w::MsgType::kHelloAck);
  EXPECT_EQ(h.status, 0u);
  w::HelloAck ack;
  ASSERT_TRUE(w::DecodeHelloAck(body.data(), body.size(), &ack));
  ASSERT_EQ(ack.regions.entries.size(), 1u);
  EXPECT_EQ(ack.regions.entries[0].range.addr, buf_.addr());
  close(fd);
}

TEST_F(AuthRaw, AReplayedHandshakeFails) {
  const w::Hello hello = MakeHello(name_, true);
  w::AuthChallenge first;
  int fd = UpToChallenge(hello, &first);
  const std::vector<uint8_t> recorded = AuthBytes(ProofFor(hello, first));
  ASSERT_TRUE(SendAll(fd, recorded));
  w::FrameHeader h;
  std::vector<uint8_t> body;
  ASSERT_TRUE(ReadFrame(fd, &h, &body));
  ASSERT_EQ(h.status, 0u) << "the recorded handshake itself must succeed";
  close(fd);
  // The same bytes again: the target's nonce is fresh, the old proof is not.
  w::AuthChallenge second;
  fd = UpToChallenge(hello, &second);
  EXPECT_NE(first.nonce_t, second.nonce_t);
  ASSERT_TRUE(SendAll(fd, recorded));
  ExpectOnlyRefusal(fd, "authentication failed");
  close(fd);
}

TEST_F(AuthRaw, AProofWithOneBitFlippedFails) {
  for (int bit : {0, 77, 255}) {
    const w::Hello hello = MakeHello(name_, true);
    w::AuthChallenge c;
    const int fd = UpToChallenge(hello, &c);
    hixl::auth::Mac mac = ProofFor(hello, c);
    mac[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_TRUE(SendAll(fd, AuthBytes(mac)));
    ExpectOnlyRefusal(fd, "authentication failed");
    close(fd);
  }
}

TEST_F(AuthRaw, AuthOutOfTurnClosesTheStream) {
  int fd = RawConnect(name_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, AuthBytes(hixl::auth::Mac{})));
  EXPECT_TRUE(EndedWithin(fd, 3000));
  close(fd);
  // A HELLO, then another HELLO instead of AUTH.
  const w::Hello hello = MakeHello(name_, true);
  w::AuthChallenge c;
  fd = UpToChallenge(hello, &c);
  ASSERT_TRUE(SendAll(fd, HelloBytes(hello)));
  EXPECT_TRUE(EndedWithin(fd, 3000));
  close(fd);
}

// A fake target: accepts one stream, answers its HELLO with a challenge
// whose proof is right or has one bit flipped, and records what follows.
TEST(AuthFakeTarget, TheInitiatorProvesItselfOnlyToATargetThatProvedTheKey) {
  KeyFile key("the initiator's key, 24b");
  auto auth = key.Make();
  hixl::Hixl engine;
  ASSERT_EQ(engine.Initialize("127.0.0.1", WithTransport(ResourceConfig(key.Config()), "tcp")), hixl::SUCCESS);
  for (bool honest : {false, true}) {
    SilentListener listener;
    const std::string name = listener.name();
    std::atomic<bool> got_hello{false}, got_valid_auth{false}, got_anything_more{false};
    std::thread fake([&] {
      const int fd = accept(listener.fd, nullptr, nullptr);
      if (fd < 0) return;
      w::FrameHeader h;
      std::vector<uint8_t> body;
      w::Hello hello;
      if (ReadFrame(fd, &h, &body) && h.type == w::MsgType::kHello &&
          w::DecodeHello(body.data(), body.size(), &hello) && hello.has_auth) {
        got_hello = true;
        w::AuthChallenge c;
        auth->NewNonce(&c.nonce_t);
        c.mac_t = auth->Prove(hixl::auth::Role::kTarget, hello.auth_nonce, c.nonce_t, hello.initiator, hello.target);
        if (!honest) c.mac_t[5] ^= 0x10;
        std::vector<uint8_t> cb;
        w::EncodeAuthChallenge(c, &cb);
        w::FrameHeader ch;
        ch.type = w::MsgType::kAuthChallenge;
        SendAll(fd, Frame(ch, cb));
        w::AuthBytes mac_i;
        if (ReadFrame(fd, &h, &body, 2000)) {
          got_anything_more = true;
          got_valid_auth = h.type == w::MsgType::kAuth && w::DecodeAuth(body.data(), body.size(), &mac_i) &&
                           auth->Check(hixl::auth::Role::kInitiator, hello.auth_nonce, c.nonce_t, hello.initiator,
                                       hello.target, mac_i);
        }
      }
      close(fd);
    });
    LogCapture log;
    EXPECT_EQ(engine.Connect(name.c_str(), 2000), hixl::FAILED);  // (the fake never sends HELLO_ACK)
    fake.join();
    EXPECT_TRUE(got_hello);
    if (honest) {
      EXPECT_TRUE(got_valid_auth) << "the initiator's proof, once the target proved the key";
    } else {
      EXPECT_FALSE(got_anything_more) << "the initiator answered a target that did not prove the key";
      EXPECT_TRUE(log.Has("peer failed authentication")) << log.All();
    }
  }
  engine.Finalize();
}

}  // namespace
