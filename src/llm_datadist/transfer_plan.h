// transfer_plan.h: the hixl descriptors of a KV transfer.
//
// A transfer moves `units` (block pairs, or pieces of a batch item) of every
// tensor pair. Descriptors are made tensor by tensor, units in order of their
// remote offset, and any two that continue each other on both sides become
// one: a run of contiguous blocks is one descriptor per tensor, and tensors
// that lie back to back on both sides merge too (a whole cache can be one
// descriptor). Each descriptor remembers which units it carries, so that a
// failed part of the transfer can name the blocks that did not land.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hixl/hixl_types.h"

namespace llm_datadist {

struct TensorPair {
  uint64_t local_base = 0;
  uint64_t remote_base = 0;
};

// One unit: offsets into each tensor on the two sides, and its length.
struct PlanUnit {
  uint64_t local_off = 0;
  uint64_t remote_off = 0;
  uint64_t len = 0;
};

struct TransferPlan {
  std::vector<hixl::TransferOpDesc> descs;
  // For each descriptor, the first and last (inclusive) of the units it
  // carries, counted tensor by tensor in the order they were laid out.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  std::vector<size_t> unit_order;  // laid-out position -> index into the caller's unit list
  uint64_t bytes = 0;
};

void BuildPlan(const std::vector<TensorPair> &tensors, const std::vector<PlanUnit> &units, TransferPlan *plan);

// Cuts the descriptors into consecutive groups of at least `group_bytes`
// (the last may be smaller); returns the bounds: 0, ..., descs.size().
// A descriptor larger than a group is split so that a failure names fewer
// blocks; `plan` is changed accordingly.
std::vector<size_t> CutGroups(TransferPlan *plan, uint64_t group_bytes);

// Marks, in `failed` (one flag per unit of the caller's list), every unit
// that descriptors [from, to) carry.
void MarkUnits(const TransferPlan &plan, size_t from, size_t to, std::vector<bool> *failed);

}  // namespace llm_datadist
