#pragma once
// The CLI's subcommands, one file each (cli_<name>.cpp). Each takes the arguments after the program name
// (args[0] is the subcommand), returns the exit status, and throws std::invalid_argument for bad usage.
#include <string>
#include <vector>

namespace dd::cli {

int benchCommand(const std::vector<std::string>& args);  // cli_bench.cpp: the memory/speed table (issue 5)
int batchCommand(const std::vector<std::string>& args);  // cli_batch.cpp: resumable JSONL batches (issue 9)
int verifyCommand(const std::vector<std::string>& args); // cli_verify.cpp: rerun a result, compare (issue 8)

} // namespace dd::cli
