// kv_report.h: hixl_kv_bench's output: a table on stdout and a JSON file
// (the schema is in docs/kv.md; scripts/plot_kv_bench.py draws it).
#pragma once

#include <string>
#include <vector>

#include "kv_measure.h"

namespace kv_bench {

void PrintHeader();
void PrintRow(const RowResult &r);
// False when the file cannot be written.
bool WriteJson(const std::string &path, const std::vector<RowResult> &rows, const std::string &command);

}  // namespace kv_bench
