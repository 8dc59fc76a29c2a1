#include "config.h"

namespace hixl_bench {

const char *ModeName(Mode m) { return m == Mode::kAsync ? "async" : "sync"; }

std::string ModeText(const Point &p) {
  if (p.mode == Mode::kSync) return "sync";
  return "async d" + std::to_string(p.depth);
}
const char *LayoutName(Layout l) {
  switch (l) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kOneBlock:
      return "one-block";
    case Layout::kScattered:
      break;
  }
  return "scattered";
}
const char *OpName(hixl::TransferOp op) { return op == hixl::READ ? "read" : "write"; }

}  // namespace hixl_bench
