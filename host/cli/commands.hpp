#pragma once
#include <string>
#include <vector>

namespace exactly::cli {

int cmd_run(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_plugins(const std::vector<std::string>& args);
int cmd_test(const std::vector<std::string>& args);
void print_usage();

}  // namespace exactly::cli
