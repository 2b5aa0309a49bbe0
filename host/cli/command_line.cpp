// The command line on CLI11: every subcommand's options, `--flag value` and
// `--flag=value` alike. Anything it cannot take (an unknown option or command, a value
// that is not one of the allowed ones, a missing value) is refused with the option
// named and exit code 2 before anything starts.
#include "cli/commands.hpp"
#include "config/units.hpp"
#include "util/log_output.hpp"

#include <exactly/plugin_abi.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <regex>
#include <string>

namespace exactly::cli {
namespace {
// CLI11's wording for the two mistakes people make most, in the words of this CLI.
std::string plain_parse_error(const std::string& what) {
  static const std::regex flag_value(R"(^([A-Za-z0-9][A-Za-z0-9-]*) was given a disallowed flag override$)");
  static const std::regex missing_value(R"(^(--[A-Za-z0-9-]+): \d+ required \S+ missing$)");
  std::smatch m;
  if (std::regex_match(what, m, flag_value))
    return "--" + m[1].str() + " is a flag and takes no value (give it, or leave it out)";
  if (std::regex_match(what, m, missing_value)) return m[1].str() + " needs a value";
  return what;
}


constexpr int kUsageError = 2;

// --plugin-path must name a directory that exists (a typo would otherwise list nothing).
const CLI::Validator kDirectory(
    [](std::string& dir) {
      std::error_code ec;
      return std::filesystem::is_directory(dir, ec) ? std::string() : "'" + dir + "' is not a directory";
    },
    "DIR");

// Flags take no value: `--no-watch=false` is refused rather than read one way or another.
CLI::Option* flag(CLI::App* app, const std::string& name, bool& to, const std::string& doc) {
  return app->add_flag(name, to, doc)->disable_flag_override()->expected(0);
}

void print_version() {
  std::printf("exactly %s (plugin ABI %u.%u)\n", EXACTLY_VERSION, EX_ABI_VERSION_MAJOR, EX_ABI_VERSION_MINOR);
}

}  // namespace

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return kUsageError;
  }
  const std::string first = argv[1];
  if (first == "help") {
    print_usage();
    return 0;
  }
  if (first == "version") {
    print_version();
    return 0;
  }

  CLI::App app("exactly — exactly-once pipelines from plugins", "exactly");
  bool version = false;
  flag(&app, "--version", version, "print the version and the plugin ABI version");
  app.require_subcommand(0, 1);

  RunOptions run_opts;
  std::string level_name = "info", format_name = "text";
  bool no_watch = false;
  CLI::App* run = app.add_subcommand("run", "run the pipelines in the YAML files / directories");
  run->add_option("PATH", run_opts.paths, "YAML file or directory of them");
  run->add_option("--log-level", level_name, "debug, info (default), warn or error")
      ->check(CLI::Validator(
          [](std::string& v) { return log::parse_level(v) ? std::string() : v + " not in {debug,info,warn,error}"; },
          ""))
      ->option_text("debug|info|warn|error");
  run->add_option("--log-format", format_name,
                  "text (default): '<time> <LEVEL> [<scope>] message'; json: one JSON object per line")
      ->check(CLI::Validator(
          [](std::string& v) { return log::parse_format(v) ? std::string() : v + " not in {text,json}"; },
          ""))
      ->option_text("text|json");
  flag(run, "--no-watch", no_watch, "do not watch the files for changes; only SIGHUP reloads");

  std::vector<std::string> validate_paths;
  std::string validate_timeout = "60s";
  CLI::App* validate = app.add_subcommand("validate", "check files without running anything");
  validate->add_option("PATH", validate_paths, "YAML file or directory of them");
  validate->add_option("--stage-timeout", validate_timeout,
                       "give up (exit 2) on a plugin call (a library's load, a validate()) that has not returned after this long (default 60s)")
      ->check(CLI::Validator(
          [](std::string& v) {
            auto ms = config::parse_duration_ms(v);
            return ms && *ms > 0 ? std::string() : v + " is not a positive duration (e.g. 30s, 500ms)";
          },
          ""))
      ->option_text("DURATION");

  PluginsOptions plugins_opts;
  CLI::App* plugins = app.add_subcommand("plugins", "list the components on the plugin path with their schemas");
  CLI::Option* as_json = flag(plugins, "--json", plugins_opts.json, "machine-readable output");
  flag(plugins, "--markdown", plugins_opts.markdown, "the configuration reference (docs/config-reference.md)")
      ->excludes(as_json);
  plugins->add_option("--plugin-path", plugins_opts.dirs, "scan DIR too (may be repeated)")
      ->check(kDirectory)
      ->option_text("DIR")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  std::vector<std::string> test_files;
  CLI::App* test = app.add_subcommand("test", "run each pipeline's transforms over the cases in PIPELINE.test.yaml");
  test->add_option("PIPELINE", test_files, "pipeline file with a <name>.test.yaml beside it");

  // CLI11 reads `--log-level= p.yaml` as `--log-level p.yaml`: the path became the value.
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=') {
      std::fprintf(stderr, "exactly %s: %s needs a value (nothing after '=')\n(see 'exactly %s --help')\n",
                   first.c_str(), a.substr(0, a.size() - 1).c_str(), first.c_str());
      return kUsageError;
    }
  }
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      // CLI11 stops at --help before it reads the rest: `exactly run --help --bogus`
      // would print the help and exit 0 over a mistake. The rest is read without the
      // help flags first; a refusal there wins.
      int dashes = argc;  // after `--` a "--help" is a path
      for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--") {
          dashes = i;
          break;
        }
      std::vector<std::string> rest;  // CLI11 takes a vector last argument first
      for (int i = argc - 1; i >= 1; --i) {
        const std::string a = argv[i];
        if (i < dashes && (a == "--help" || a == "-h")) continue;
        rest.push_back(a);
      }
      app.clear();
      app.parse(rest);
      throw CLI::CallForHelp();
    }
  } catch (const CLI::CallForHelp&) {
    // The overview for `exactly --help`; CLI11's own help for `exactly <command> --help`.
    if (app.get_subcommands().empty()) print_usage();
    else std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    const auto& chosen = app.get_subcommands();
    if (chosen.empty() && first.rfind("-", 0) != 0) {
      std::fprintf(stderr, "exactly: unknown command '%s'\n\n", first.c_str());
      print_usage();
    } else {
      std::string who = chosen.empty() ? "exactly" : "exactly " + chosen.front()->get_name();
      std::fprintf(stderr, "%s: %s\n(see '%s --help')\n", who.c_str(), plain_parse_error(e.what()).c_str(),
                   who.c_str());
    }
    return kUsageError;
  }

  if (version) {
    print_version();
    return 0;
  }
  if (run->parsed()) {
    log::set_level(*log::parse_level(level_name));
    log::set_format(*log::parse_format(format_name));
    run_opts.watch = !no_watch;
    return cmd_run(run_opts);
  }
  if (validate->parsed()) return cmd_validate(validate_paths, *config::parse_duration_ms(validate_timeout));
  if (plugins->parsed()) return cmd_plugins(plugins_opts);
  if (test->parsed()) return cmd_test(test_files);
  print_usage();
  return kUsageError;
}

}  // namespace exactly::cli
