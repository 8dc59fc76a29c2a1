// fake_absent_dep.cc: a library the loader's tests hide (fake_plugin.cc).
extern "C" __attribute__((visibility("default"))) int hixl_fake_absent_symbol() { return 1; }
