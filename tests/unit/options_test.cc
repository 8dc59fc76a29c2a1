// Unit tests for hixl::ParseEngineOptions (src/engine/options.h), against the
// Initialize options section of docs/API.md.
#include "engine/options.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hixl {
namespace {

using Options = std::map<std::string, std::string>;

struct Parsed {
  Status status = FAILED;
  EngineOptions opts;
  std::string why;
};

Parsed Parse(const Options &options) {
  Parsed p;
  p.status = ParseEngineOptions(options, &p.opts, &p.why);
  return p;
}

Parsed ParseOne(const std::string &key, const std::string &value) { return Parse({{key, value}}); }

Parsed ParseGrc(const std::string &json) { return ParseOne(OPTION_GLOBAL_RESOURCE_CONFIG, json); }

// Expects PARAM_INVALID with a reason that names `key`.
void ExpectInvalid(const Parsed &p, const std::string &key, const std::string &what) {
  EXPECT_EQ(p.status, PARAM_INVALID) << what;
  EXPECT_NE(p.why.find(key), std::string::npos) << what << ": why='" << p.why << "' does not name " << key;
}

void ExpectDefaults(const EngineOptions &o) {
  EXPECT_EQ(o.buffer_pool_count, 4u);
  EXPECT_EQ(o.buffer_pool_mib, 8u);
  EXPECT_FALSE(o.auto_connect);
  EXPECT_EQ(o.rdma_traffic_class, 132u);
  EXPECT_EQ(o.rdma_service_level, 4u);
  EXPECT_TRUE(o.local_comm_res.empty());
  EXPECT_EQ(o.connect_pool_threads, 2u);
  EXPECT_EQ(o.connect_pool_queue, 128u);
  EXPECT_EQ(o.max_channel, 512u);
  EXPECT_FALSE(o.has_waterlines);
  EXPECT_TRUE(o.protocols.empty());
  EXPECT_EQ(o.listen_port, -1);
}

// ---------------------------------------------------------------- defaults

TEST(OptionsTest, EmptyMapGivesDocumentedDefaults) {
  Parsed p = Parse({});
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  ExpectDefaults(p.opts);
}

TEST(OptionsTest, UnknownTopLevelKeyIgnored) {
  Parsed p = Parse({{"NoSuchOption", "whatever"}, {"bufferpool", "garbage"}});
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  ExpectDefaults(p.opts);
}

TEST(OptionsTest, FailureLeavesOutputUntouched) {
  EngineOptions o;
  o.buffer_pool_count = 77;
  o.rdma_service_level = 6;
  std::string why;
  EXPECT_EQ(ParseEngineOptions({{OPTION_RDMA_SERVICE_LEVEL, "8"}}, &o, &why), PARAM_INVALID);
  EXPECT_EQ(o.buffer_pool_count, 77u);
  EXPECT_EQ(o.rdma_service_level, 6u);
}

TEST(OptionsTest, AllKeysTogether) {
  Parsed p = Parse({{OPTION_BUFFER_POOL, "2:16"},
                    {OPTION_AUTO_CONNECT, "1"},
                    {OPTION_RDMA_TRAFFIC_CLASS, "8"},
                    {OPTION_RDMA_SERVICE_LEVEL, "7"},
                    {OPTION_ENABLE_USE_FABRIC_MEM, "0"},
                    {OPTION_LOCAL_COMM_RES, "{\"nics\":[\"10.0.0.1\"]}"},
                    {OPTION_GLOBAL_RESOURCE_CONFIG, "{\"connect_pool.thread_num\": 3}"}});
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  EXPECT_EQ(p.opts.buffer_pool_count, 2u);
  EXPECT_EQ(p.opts.buffer_pool_mib, 16u);
  EXPECT_TRUE(p.opts.auto_connect);
  EXPECT_EQ(p.opts.rdma_traffic_class, 8u);
  EXPECT_EQ(p.opts.rdma_service_level, 7u);
  EXPECT_EQ(p.opts.local_comm_res, "{\"nics\":[\"10.0.0.1\"]}");
  EXPECT_EQ(p.opts.connect_pool_threads, 3u);
}

// ---------------------------------------------------------------- BufferPool

TEST(OptionsTest, BufferPoolValid) {
  struct Case {
    const char *text;
    uint32_t n, s;
  } cases[] = {{"0:0", 0, 0}, {"4:8", 4, 8}, {"1:1", 1, 1}, {"1024:1024", 1024, 1024}, {"16:2", 16, 2}};
  for (const auto &c : cases) {
    Parsed p = ParseOne(OPTION_BUFFER_POOL, c.text);
    ASSERT_EQ(p.status, SUCCESS) << c.text << ": " << p.why;
    EXPECT_EQ(p.opts.buffer_pool_count, c.n) << c.text;
    EXPECT_EQ(p.opts.buffer_pool_mib, c.s) << c.text;
  }
}

TEST(OptionsTest, BufferPoolInvalid) {
  for (const char *text : {"0:8", "4:0", "4", "a:b", "1025:1", "1:1025", "", ":", "4:", ":8", "-1:8", "4:-8", "+4:8",
                           " 4:8", "4:8 ", "4:8:1", "4.0:8", "4;8", "99999999999999999999:1"}) {
    ExpectInvalid(ParseOne(OPTION_BUFFER_POOL, text), OPTION_BUFFER_POOL, std::string("BufferPool='") + text + "'");
  }
}

// ---------------------------------------------------------------- AutoConnect

TEST(OptionsTest, AutoConnectValues) {
  Parsed on = ParseOne(OPTION_AUTO_CONNECT, "1");
  ASSERT_EQ(on.status, SUCCESS) << on.why;
  EXPECT_TRUE(on.opts.auto_connect);
  Parsed off = ParseOne(OPTION_AUTO_CONNECT, "0");
  ASSERT_EQ(off.status, SUCCESS) << off.why;
  EXPECT_FALSE(off.opts.auto_connect);
  for (const char *text : {"", "2", "true", "false", "yes", "01", " 1", "1 ", "-1"}) {
    ExpectInvalid(ParseOne(OPTION_AUTO_CONNECT, text), OPTION_AUTO_CONNECT, std::string("AutoConnect='") + text + "'");
  }
}

// ---------------------------------------------------------------- RDMA

TEST(OptionsTest, RdmaTrafficClassBoundaries) {
  for (uint32_t v : {0u, 4u, 132u, 248u, 252u}) {
    Parsed p = ParseOne(OPTION_RDMA_TRAFFIC_CLASS, std::to_string(v));
    ASSERT_EQ(p.status, SUCCESS) << v << ": " << p.why;
    EXPECT_EQ(p.opts.rdma_traffic_class, v);
  }
  for (const char *text : {"255", "256", "1", "2", "3", "133", "253", "260", "1000", "-4", "+4", "", "abc", "4.0",
                           " 4", "4 "}) {
    ExpectInvalid(ParseOne(OPTION_RDMA_TRAFFIC_CLASS, text), OPTION_RDMA_TRAFFIC_CLASS,
                  std::string("RdmaTrafficClass='") + text + "'");
  }
}

TEST(OptionsTest, RdmaServiceLevelBoundaries) {
  for (uint32_t v = 0; v <= 7; ++v) {
    Parsed p = ParseOne(OPTION_RDMA_SERVICE_LEVEL, std::to_string(v));
    ASSERT_EQ(p.status, SUCCESS) << v << ": " << p.why;
    EXPECT_EQ(p.opts.rdma_service_level, v);
  }
  for (const char *text : {"8", "255", "-1", "+1", "", "x", "1.5", " 3"}) {
    ExpectInvalid(ParseOne(OPTION_RDMA_SERVICE_LEVEL, text), OPTION_RDMA_SERVICE_LEVEL,
                  std::string("RdmaServiceLevel='") + text + "'");
  }
}

// ---------------------------------------------------------------- EnableUseFabricMem

TEST(OptionsTest, EnableUseFabricMemZeroAccepted) {
  Parsed p = ParseOne(OPTION_ENABLE_USE_FABRIC_MEM, "0");
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  ExpectDefaults(p.opts);
}

TEST(OptionsTest, EnableUseFabricMemOneUnsupported) {
  Parsed p = ParseOne(OPTION_ENABLE_USE_FABRIC_MEM, "1");
  EXPECT_EQ(p.status, UNSUPPORTED);
  EXPECT_NE(p.why.find(OPTION_ENABLE_USE_FABRIC_MEM), std::string::npos) << p.why;
}

TEST(OptionsTest, EnableUseFabricMemWithBufferPoolInvalid) {
  for (const char *pool : {"4:8", "0:0"}) {
    Parsed p = Parse({{OPTION_ENABLE_USE_FABRIC_MEM, "1"}, {OPTION_BUFFER_POOL, pool}});
    EXPECT_EQ(p.status, PARAM_INVALID) << pool;
    EXPECT_NE(p.why.find(OPTION_ENABLE_USE_FABRIC_MEM), std::string::npos) << p.why;
    EXPECT_NE(p.why.find(OPTION_BUFFER_POOL), std::string::npos) << p.why;
  }
}

TEST(OptionsTest, EnableUseFabricMemOtherValuesInvalid) {
  for (const char *text : {"", "2", "true", "10", " 1"}) {
    ExpectInvalid(ParseOne(OPTION_ENABLE_USE_FABRIC_MEM, text), OPTION_ENABLE_USE_FABRIC_MEM,
                  std::string("EnableUseFabricMem='") + text + "'");
  }
}

// ---------------------------------------------------------------- LocalCommRes

TEST(OptionsTest, LocalCommRes) {
  Parsed empty = ParseOne(OPTION_LOCAL_COMM_RES, "");
  ASSERT_EQ(empty.status, SUCCESS) << empty.why;
  EXPECT_TRUE(empty.opts.local_comm_res.empty());

  const std::string json = "{\"net_devices\": [{\"ip\": \"10.0.0.1\"}]}";
  Parsed ok = ParseOne(OPTION_LOCAL_COMM_RES, json);
  ASSERT_EQ(ok.status, SUCCESS) << ok.why;
  EXPECT_EQ(ok.opts.local_comm_res, json);

  for (const char *text : {"{", "not json", "{\"a\":}", "[1,2"}) {
    ExpectInvalid(ParseOne(OPTION_LOCAL_COMM_RES, text), OPTION_LOCAL_COMM_RES,
                  std::string("LocalCommRes='") + text + "'");
  }
}

// ---------------------------------------------------------------- GlobalResourceConfig

TEST(GlobalResourceConfigTest, EmptyObjectKeepsDefaults) {
  Parsed p = ParseGrc("{}");
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  ExpectDefaults(p.opts);
}

TEST(GlobalResourceConfigTest, NotAJsonObject) {
  for (const char *text : {"", "not json", "{", "{\"connect_pool.thread_num\": }", "[]",
                           "[{\"connect_pool.thread_num\": 2}]", "2", "\"str\"", "null", "true"}) {
    ExpectInvalid(ParseGrc(text), OPTION_GLOBAL_RESOURCE_CONFIG, std::string("GlobalResourceConfig='") + text + "'");
  }
}

TEST(GlobalResourceConfigTest, UnknownFieldIgnored) {
  Parsed p = ParseGrc("{\"no.such.field\": 12, \"connect_pool.thread_num\": 5, \"x\": {\"y\": []}}");
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  EXPECT_EQ(p.opts.connect_pool_threads, 5u);
}

struct IntField {
  const char *name;
  uint64_t lo, hi;
  uint32_t EngineOptions::*member;
};

const IntField kIntFields[] = {
    {"connect_pool.thread_num", 1, 64, &EngineOptions::connect_pool_threads},
    {"connect_pool.task_queue_capacity", 1, 65535, &EngineOptions::connect_pool_queue},
    {"channel_pool.max_channel", 1, 512, &EngineOptions::max_channel},
    // [beyond] fields of this project (src/engine/options.h).
    {"tcp.io_threads", 1, 64, &EngineOptions::io_threads},
    {"max_regions", 256, 65536, &EngineOptions::max_regions},  // the region table must fit a HELLO_ACK
};

std::string Obj(const std::string &field, const std::string &json_value) {
  return "{\"" + field + "\": " + json_value + "}";
}

TEST(GlobalResourceConfigTest, IntegerFieldsInRangeAsNumbersAndStrings) {
  for (const auto &f : kIntFields) {
    for (uint64_t v : {f.lo, f.lo + 1, (f.lo + f.hi) / 2, f.hi}) {
      std::string num = std::to_string(v);
      Parsed a = ParseGrc(Obj(f.name, num));
      ASSERT_EQ(a.status, SUCCESS) << f.name << "=" << num << ": " << a.why;
      EXPECT_EQ(a.opts.*f.member, v) << f.name;
      Parsed b = ParseGrc(Obj(f.name, "\"" + num + "\""));
      ASSERT_EQ(b.status, SUCCESS) << f.name << "=\"" << num << "\": " << b.why;
      EXPECT_EQ(b.opts.*f.member, v) << f.name;
    }
  }
}

TEST(GlobalResourceConfigTest, IntegralJsonFloatIsAnInteger) {
  Parsed p = ParseGrc(Obj("connect_pool.thread_num", "2.0"));
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  EXPECT_EQ(p.opts.connect_pool_threads, 2u);
}

TEST(GlobalResourceConfigTest, IntegerFieldsOutOfRangeOrMalformed) {
  for (const auto &f : kIntFields) {
    std::vector<std::string> bad = {std::to_string(f.lo - 1),
                                    std::to_string(f.hi + 1),
                                    "\"" + std::to_string(f.hi + 1) + "\"",
                                    "-1",
                                    "\"-1\"",
                                    "2.5",
                                    "\"2.5\"",
                                    "\"\"",
                                    "\"abc\"",
                                    "\" 2\"",
                                    "\"+2\"",
                                    "true",
                                    "null",
                                    "[2]",
                                    "{}",
                                    "18446744073709551615",
                                    "-9223372036854775808"};
    for (const auto &v : bad) {
      Parsed p = ParseGrc(Obj(f.name, v));
      ExpectInvalid(p, f.name, std::string(f.name) + "=" + v);
      EXPECT_NE(p.why.find(OPTION_GLOBAL_RESOURCE_CONFIG), std::string::npos) << p.why;
    }
  }
}

TEST(GlobalResourceConfigTest, WaterlinesValid) {
  struct Case {
    const char *json;
    double high, low;
  } cases[] = {
      {"{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": 0.5}", 0.8, 0.5},
      {"{\"channel_pool.high_waterline\": \"0.8\", \"channel_pool.low_waterline\": \"0.5\"}", 0.8, 0.5},
      {"{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": \"0.25\"}", 0.8, 0.25},
      {"{\"channel_pool.high_waterline\": 0.99, \"channel_pool.low_waterline\": 0.01}", 0.99, 0.01},
  };
  for (const auto &c : cases) {
    Parsed p = ParseGrc(c.json);
    ASSERT_EQ(p.status, SUCCESS) << c.json << ": " << p.why;
    EXPECT_TRUE(p.opts.has_waterlines);
    EXPECT_DOUBLE_EQ(p.opts.high_waterline, c.high);
    EXPECT_DOUBLE_EQ(p.opts.low_waterline, c.low);
  }
}

TEST(GlobalResourceConfigTest, WaterlinesInvalid) {
  const char *cases[] = {
      "{\"channel_pool.high_waterline\": 0.8}",
      "{\"channel_pool.low_waterline\": 0.5}",
      "{\"channel_pool.high_waterline\": 0.5, \"channel_pool.low_waterline\": 0.5}",   // low == high
      "{\"channel_pool.high_waterline\": 0.5, \"channel_pool.low_waterline\": 0.6}",   // low > high
      "{\"channel_pool.high_waterline\": 1, \"channel_pool.low_waterline\": 0.5}",     // high == 1
      "{\"channel_pool.high_waterline\": 1.5, \"channel_pool.low_waterline\": 0.5}",   // high > 1
      "{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": 0}",     // low == 0
      "{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": -0.1}",  // low < 0
      "{\"channel_pool.high_waterline\": \"1.0\", \"channel_pool.low_waterline\": \"0.5\"}",
      "{\"channel_pool.high_waterline\": \"0.8\", \"channel_pool.low_waterline\": \"0\"}",
      "{\"channel_pool.high_waterline\": \"high\", \"channel_pool.low_waterline\": 0.5}",
      "{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": \"0.5x\"}",
      "{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": \"\"}",
      "{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": \"nan\"}",
      "{\"channel_pool.high_waterline\": \"inf\", \"channel_pool.low_waterline\": 0.5}",
      "{\"channel_pool.high_waterline\": null, \"channel_pool.low_waterline\": 0.5}",
      "{\"channel_pool.high_waterline\": true, \"channel_pool.low_waterline\": 0.5}",
      "{\"channel_pool.high_waterline\": [0.8], \"channel_pool.low_waterline\": 0.5}",
  };
  for (const char *c : cases) {
    Parsed p = ParseGrc(c);
    ExpectInvalid(p, "waterline", c);
    EXPECT_FALSE(p.opts.has_waterlines);
  }
}

// Numeric strings are parsed the same strict way for every field: no white
// space, no hex floats.
TEST(GlobalResourceConfigTest, WaterlineStringsAreStrictNumbers) {
  for (const char *low : {"\" 0.5\"", "\"\\t0.5\"", "\"0x1p-1\"", "\"\\n0.5\""}) {
    std::string json = std::string("{\"channel_pool.high_waterline\": 0.8, \"channel_pool.low_waterline\": ") + low + "}";
    ExpectInvalid(ParseGrc(json), "waterline", json);
  }
}

TEST(GlobalResourceConfigTest, ProtocolDescValid) {
  Parsed one = ParseGrc("{\"comm_resource_config.protocol_desc\": \"tcp:host\"}");
  ASSERT_EQ(one.status, SUCCESS) << one.why;
  EXPECT_EQ(one.opts.protocols, std::vector<std::string>({"tcp:host"}));

  Parsed two = ParseGrc("{\"comm_resource_config.protocol_desc\": [\"shm:host\", \"tcp:host\"]}");
  ASSERT_EQ(two.status, SUCCESS) << two.why;
  EXPECT_EQ(two.opts.protocols, std::vector<std::string>({"shm:host", "tcp:host"}));

  Parsed none = ParseGrc("{}");
  ASSERT_EQ(none.status, SUCCESS);
  EXPECT_TRUE(none.opts.protocols.empty());  // every transport
}

TEST(GlobalResourceConfigTest, ATransportsOwnFieldsGoToItAsText) {
  // "<transport>.<key>" of a transport this build knows: its to check (at
  // Initialize); an unknown prefix is an unknown field.
  Parsed p = ParseGrc("{\"tcp.streams_per_link\": 4, \"shm.some_key\": \"x\", \"nosuch.key\": 1}");
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  EXPECT_EQ(p.opts.transport_config["tcp"]["streams_per_link"], "4");
  EXPECT_EQ(p.opts.transport_config["shm"]["some_key"], "x");
  EXPECT_EQ(p.opts.transport_config.count("nosuch"), 0u);
  // tcp.io_threads sizes the engine's event loops: the engine's own.
  Parsed io = ParseGrc("{\"tcp.io_threads\": 3}");
  ASSERT_EQ(io.status, SUCCESS) << io.why;
  EXPECT_EQ(io.opts.io_threads, 3u);
  EXPECT_EQ(io.opts.transport_config.count("tcp"), 0u);
  // "tcp." names no field of tcp's: an unknown field, not one named "".
  Parsed empty = ParseGrc("{\"tcp.\": 4, \"shm.\": \"x\"}");
  ASSERT_EQ(empty.status, SUCCESS) << empty.why;
  EXPECT_EQ(empty.opts.transport_config.count("tcp"), 0u);
  EXPECT_EQ(empty.opts.transport_config.count("shm"), 0u);
}

TEST(GlobalResourceConfigTest, ProtocolDescInvalid) {
  for (const char *v : {"\"tcp\"", "\"foo:host\"", "\"tcp:moon\"", "\"\"", "\":host\"", "\"tcp:\"", "\"TCP:host\"",
                        "\"tcp:host \"", "[]", "[1]", "[\"tcp:host\", 1]", "[\"tcp:host\", \"tcp\"]", "[[\"tcp:host\"]]",
                        "1", "null", "{\"tcp\": \"host\"}"}) {
    Parsed p = ParseGrc(Obj("comm_resource_config.protocol_desc", v));
    ExpectInvalid(p, "protocol_desc", std::string("protocol_desc=") + v);
    EXPECT_TRUE(p.opts.protocols.empty());
  }
}

TEST(GlobalResourceConfigTest, ListenPort) {
  for (const char *v : {"0", "1", "8080", "65535", "\"0\"", "\"65535\""}) {
    Parsed p = ParseGrc(Obj("comm_resource_config.listen_port", v));
    ASSERT_EQ(p.status, SUCCESS) << v << ": " << p.why;
    std::string digits = v[0] == '"' ? std::string(v + 1, std::strlen(v) - 2) : std::string(v);
    EXPECT_EQ(p.opts.listen_port, std::stoi(digits)) << v;
  }
  for (const char *v : {"-1", "65536", "\"65536\"", "\"-1\"", "80.5", "\"80.5\"", "\"\"", "\"http\"", "null", "[80]"}) {
    ExpectInvalid(ParseGrc(Obj("comm_resource_config.listen_port", v)), "listen_port",
                  std::string("listen_port=") + v);
  }
}

TEST(GlobalResourceConfigTest, FirstBadFieldFailsWholeOption) {
  // One good and one bad field: the option as a whole is rejected.
  Parsed p = ParseGrc("{\"connect_pool.thread_num\": 4, \"channel_pool.max_channel\": 513}");
  ExpectInvalid(p, "channel_pool.max_channel", "max_channel=513");
}

TEST(GlobalResourceConfigTest, FullValidConfig) {
  Parsed p = ParseGrc(
      "{\"connect_pool.thread_num\": \"8\", \"connect_pool.task_queue_capacity\": 1024,"
      " \"channel_pool.max_channel\": 16, \"channel_pool.high_waterline\": 0.75,"
      " \"channel_pool.low_waterline\": \"0.25\", \"comm_resource_config.protocol_desc\": [\"tcp:host\"],"
      " \"comm_resource_config.listen_port\": \"26001\"}");
  ASSERT_EQ(p.status, SUCCESS) << p.why;
  EXPECT_EQ(p.opts.connect_pool_threads, 8u);
  EXPECT_EQ(p.opts.connect_pool_queue, 1024u);
  EXPECT_EQ(p.opts.max_channel, 16u);
  EXPECT_TRUE(p.opts.has_waterlines);
  EXPECT_DOUBLE_EQ(p.opts.high_waterline, 0.75);
  EXPECT_DOUBLE_EQ(p.opts.low_waterline, 0.25);
  EXPECT_EQ(p.opts.protocols, std::vector<std::string>({"tcp:host"}));
  EXPECT_EQ(p.opts.listen_port, 26001);
  // Fields not given keep their defaults, other keys too.
  EXPECT_EQ(p.opts.buffer_pool_count, 4u);
  EXPECT_EQ(p.opts.rdma_traffic_class, 132u);
}

TEST(GlobalResourceConfigTest, AValueNestedDeepIsRefusedNotDumped) {
  // A value nested 100000 deep is valid JSON, and json::dump() recurses:
  // printing it in the reason overflowed the stack (Initialize crashed).
  // It is refused, and named by its kind and size, not written out.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string fields[] = {"\"channel_pool.max_channel\": " + deep,
                                "\"comm_resource_config.listen_port\": " + deep,
                                "\"comm_resource_config.protocol_desc\": " + deep,
                                "\"comm_resource_config.protocol_desc\": {\"a\": " + deep + "}",
                                "\"channel_pool.high_waterline\": " + deep + ", \"channel_pool.low_waterline\": 0.1"};
  for (const auto &f : fields) {
    Parsed p = ParseGrc("{" + f + "}");
    EXPECT_EQ(p.status, PARAM_INVALID) << f.substr(0, 40);
    EXPECT_LT(p.why.size(), 300u) << p.why.substr(0, 300);
  }
}

}  // namespace
}  // namespace hixl
