// fake_plugin.cc: stand-ins for a broken UCX plug-in, for the loader's
// tests. Built three ways: without the entry point (HIXL_FAKE_NO_ENTRY),
// with one that answers another ABI version (HIXL_FAKE_ABI), and linked
// against a library that is not on the search path (as a plug-in on a host
// without UCX's libraries).
#include "transport/ucx/ucx_plugin_api.h"

#ifdef HIXL_FAKE_NEEDS_ABSENT
extern "C" int hixl_fake_absent_symbol();
#endif

#ifndef HIXL_FAKE_NO_ENTRY
extern "C" __attribute__((visibility("default"))) const hixl_ucx_api_t *hixl_ucx_plugin_entry(uint32_t,
                                                                                             const hixl_ucx_host_t *) {
  static hixl_ucx_api_t api{};
#ifdef HIXL_FAKE_NEEDS_ABSENT
  api.abi_version = static_cast<uint32_t>(hixl_fake_absent_symbol());
#else
  api.abi_version = HIXL_FAKE_ABI;
#endif
  api.struct_size = sizeof(api);
  return &api;
}
#else
extern "C" __attribute__((visibility("default"))) int hixl_fake_not_a_plugin() { return 0; }
#endif
