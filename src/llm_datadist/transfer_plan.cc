#include "transfer_plan.h"

#include <algorithm>
#include <numeric>

namespace llm_datadist {

void BuildPlan(const std::vector<TensorPair> &tensors, const std::vector<PlanUnit> &units, TransferPlan *plan) {
  plan->descs.clear();
  plan->spans.clear();
  plan->bytes = 0;
  plan->unit_order.resize(units.size());
  std::iota(plan->unit_order.begin(), plan->unit_order.end(), 0);
  // Blocks listed out of order may still be contiguous on both sides.
  std::stable_sort(plan->unit_order.begin(), plan->unit_order.end(),
                   [&](size_t a, size_t b) { return units[a].remote_off < units[b].remote_off; });
  const uint64_t n = units.size();
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (uint64_t pos = 0; pos < n; ++pos) {
      const PlanUnit &u = units[plan->unit_order[pos]];
      const uint64_t local = tensors[t].local_base + u.local_off;
      const uint64_t remote = tensors[t].remote_base + u.remote_off;
      const uint64_t g = t * n + pos;
      plan->bytes += u.len;
      if (!plan->descs.empty()) {
        hixl::TransferOpDesc &last = plan->descs.back();
        if (last.local_addr + last.len == local && last.remote_addr + last.len == remote) {
          last.len += u.len;
          plan->spans.back().second = g;
          continue;
        }
      }
      plan->descs.push_back(
          {static_cast<uintptr_t>(local), static_cast<uintptr_t>(remote), static_cast<size_t>(u.len)});
      plan->spans.emplace_back(g, g);
    }
  }
}

std::vector<size_t> CutGroups(TransferPlan *plan, uint64_t group_bytes) {
  // Split descriptors larger than a group at unit boundaries where possible;
  // a single unit larger than a group stays whole.
  std::vector<hixl::TransferOpDesc> descs;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (size_t i = 0; i < plan->descs.size(); ++i) {
    hixl::TransferOpDesc d = plan->descs[i];
    auto span = plan->spans[i];
    const uint64_t nunits = span.second - span.first + 1;
    if (d.len <= group_bytes || nunits < 2) {
      descs.push_back(d);
      spans.push_back(span);
      continue;
    }
    // Units of one descriptor are equally long except across tensors'
    // ends, where the merge needs them whole: cut at multiples of len/n.
    const uint64_t unit = d.len / nunits;
    const uint64_t per = std::max<uint64_t>(1, group_bytes / std::max<uint64_t>(unit, 1));
    if (unit * nunits != d.len) {
      descs.push_back(d);
      spans.push_back(span);
      continue;
    }
    for (uint64_t first = 0; first < nunits; first += per) {
      const uint64_t count = std::min(per, nunits - first);
      descs.push_back({d.local_addr + first * unit, d.remote_addr + first * unit, static_cast<size_t>(count * unit)});
      spans.emplace_back(span.first + first, span.first + first + count - 1);
    }
  }
  plan->descs.swap(descs);
  plan->spans.swap(spans);
  std::vector<size_t> bounds{0};
  uint64_t acc = 0;
  for (size_t i = 0; i < plan->descs.size(); ++i) {
    acc += plan->descs[i].len;
    if (acc >= group_bytes && i + 1 < plan->descs.size()) {
      bounds.push_back(i + 1);
      acc = 0;
    }
  }
  bounds.push_back(plan->descs.size());
  return bounds;
}

void MarkUnits(const TransferPlan &plan, size_t from, size_t to, std::vector<bool> *failed) {
  const uint64_t n = plan.unit_order.size();
  if (n == 0) return;
  for (size_t i = from; i < to && i < plan.spans.size(); ++i) {
    const auto &span = plan.spans[i];
    if (span.second - span.first + 1 >= n) {
      std::fill(failed->begin(), failed->end(), true);
      return;
    }
    for (uint64_t g = span.first; g <= span.second; ++g) (*failed)[plan.unit_order[g % n]] = true;
  }
}

}  // namespace llm_datadist
