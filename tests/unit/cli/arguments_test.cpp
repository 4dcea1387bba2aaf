// kubectl-partitioning's command line: every flag in both spellings, where each applies,
// mistakes named by flag, per-command help, and kubectl's --request-timeout format.
#include "cli/arguments.hpp"
#include "tests/unit/cli/parse.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace cli = gpu_partitioner::cli;
using namespace std::chrono_literals;

using gpu_partitioner::cli::testing::parsed;
using gpu_partitioner::cli::testing::refusal;

BOOST_TEST_DONT_PRINT_LOG_VALUE(cli::command_kind)
BOOST_TEST_DONT_PRINT_LOG_VALUE(cli::output_format)
BOOST_TEST_DONT_PRINT_LOG_VALUE(std::optional<cli::command_kind>)

BOOST_AUTO_TEST_SUITE(global_flags)

BOOST_AUTO_TEST_CASE(value_flags_take_both_spellings_anywhere_on_the_line) {
  const auto spaced = parsed({"--kubeconfig",
                              "/k",
                              "--context",
                              "ctx",
                              "--cluster",
                              "cl",
                              "--user",
                              "u",
                              "status",
                              "p",
                              "--as",
                              "alice",
                              "--as-group",
                              "g1",
                              "--as-group",
                              "g2",
                              "--as-uid",
                              "42",
                              "--request-timeout",
                              "1m",
                              "-v",
                              "6",
                              "-n",
                              "ns"});
  const auto joined =
      parsed({"status", "--kubeconfig=/k", "--context=ctx", "--cluster=cl", "--user=u",
              "--as=alice", "--as-group=g1", "--as-group=g2", "--as-uid=42", "--request-timeout=1m",
              "--v=6", "--namespace=ns", "p"});
  for (const auto& c : {spaced, joined}) {
    BOOST_TEST(c.kind == cli::command_kind::status);
    BOOST_TEST(c.plan == "p");
    BOOST_TEST(c.kubeconfig == "/k");
    BOOST_TEST(c.context == "ctx");
    BOOST_TEST(c.cluster == "cl");
    BOOST_TEST(c.user == "u");
    BOOST_TEST(c.as == "alice");
    BOOST_TEST((c.as_groups == std::vector<std::string>{"g1", "g2"}));
    BOOST_TEST(c.as_uid == "42");
    BOOST_TEST(c.request_timeout.value().count() == 60000);
    BOOST_TEST(c.verbosity == 6);
    BOOST_TEST(c.namespace_ == "ns");
  }
}

BOOST_AUTO_TEST_CASE(shorthands_take_attached_values_as_pflag_does) {
  BOOST_TEST(parsed({"list", "-v6"}).verbosity == 6);
  BOOST_TEST(parsed({"list", "-v=7"}).verbosity == 7);
  BOOST_TEST(parsed({"list", "-ojson"}).output == cli::output_format::json);
  BOOST_TEST(parsed({"list", "-o=yaml"}).output == cli::output_format::yaml);
  BOOST_TEST(parsed({"list", "-nkube-system"}).namespace_ == "kube-system");
}

BOOST_AUTO_TEST_CASE(all_namespaces_and_namespace_select_nothing) {
  // Plans are cluster-scoped: -A and -n are accepted, as kubectl accepts them, and change
  // nothing; in particular -A is not --all.
  const auto a = parsed({"status", "p", "-A"});
  BOOST_TEST(!a.all_nodes);
  BOOST_TEST(parsed({"list", "--all-namespaces"}).kind == cli::command_kind::list);
  BOOST_TEST(parsed({"pause", "p", "-n", "x"}).kind == cli::command_kind::pause);
}

BOOST_AUTO_TEST_CASE(boolean_flags_take_true_or_false) {
  BOOST_TEST(parsed({"status", "p", "--watch"}).watch);
  BOOST_TEST(parsed({"status", "p", "-w"}).watch);
  BOOST_TEST(!parsed({"status", "p", "--watch=false"}).watch);
  BOOST_TEST(parsed({"status", "p", "--all=true"}).all_nodes);
  BOOST_TEST(refusal({"status", "p", "--watch=yes"}).message ==
             "--watch is true or false, not \"yes\"");
}

BOOST_AUTO_TEST_CASE(a_double_dash_ends_the_flags) {
  const auto c = parsed({"status", "--", "-odd-name"});
  BOOST_TEST(c.plan == "-odd-name");
}

BOOST_AUTO_TEST_CASE(bad_values_name_the_flag) {
  BOOST_TEST(refusal({"list", "--request-timeout", "soon"}).message ==
             "--request-timeout \"soon\" is neither a whole number of seconds nor a duration "
             "such as 30s, 1m or 1h");
  BOOST_TEST(refusal({"list", "-v", "x"}).message ==
             "--v \"x\" is not a log level (a whole number from 0)");
  BOOST_TEST(refusal({"list", "--as="}).message == "--as needs a value");
  BOOST_TEST(refusal({"list", "--as-group"}).message == "flag needs an argument: --as-group GROUP");
  BOOST_TEST(refusal({"list", "-o"}).message == "flag needs an argument: -o FORMAT");
  BOOST_TEST(refusal({"list", "--frobnicate"}).message == "unknown flag: --frobnicate");
  BOOST_TEST(refusal({"list", "-x"}).message == "unknown shorthand flag: 'x' in -x");
}

BOOST_AUTO_TEST_CASE(groups_or_a_uid_without_a_user_are_refused) {
  BOOST_TEST(refusal({"list", "--as-group", "g"}).message ==
             "--as-group needs --as: impersonation needs a user name");
  BOOST_TEST(refusal({"list", "--as-uid", "1"}).message ==
             "--as-uid needs --as: impersonation needs a user name");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(command_flags)

BOOST_AUTO_TEST_CASE(output_formats_and_their_errors) {
  BOOST_TEST(parsed({"list"}).output == cli::output_format::text);
  BOOST_TEST(parsed({"list", "-o", "wide"}).output == cli::output_format::wide);
  BOOST_TEST(parsed({"status", "p", "--output", "json"}).output == cli::output_format::json);
  BOOST_TEST(parsed({"status", "p", "--output=yaml"}).output == cli::output_format::yaml);
  const auto e = refusal({"status", "p", "-o", "xml"});
  BOOST_TEST(e.message == "--output \"xml\" is not a format this command prints; use json, yaml "
                          "or wide");
  // The hint points at the help of the command the flag was given to.
  BOOST_TEST(e.command == std::optional<cli::command_kind>(cli::command_kind::status));
}

BOOST_AUTO_TEST_CASE(a_flag_of_another_command_is_refused_by_name) {
  const auto e = refusal({"pause", "p", "--watch"});
  BOOST_TEST(e.message == "--watch is not a flag of pause (only of list and status)");
  BOOST_TEST(e.command == std::optional<cli::command_kind>(cli::command_kind::pause));
  BOOST_TEST(refusal({"list", "--all"}).message == "--all is not a flag of list (only of status)");
  BOOST_TEST(refusal({"retry", "p", "n", "-o", "json"}).message ==
             "--output is not a flag of retry (only of list and status)");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(help)

BOOST_AUTO_TEST_CASE(help_of_a_command_by_flag_or_by_the_help_command) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"status", "--help"}, {"status", "-h"}, {"help", "status"}, {"status", "p", "-h"}}) {
    const auto c = parsed(args);
    BOOST_TEST(c.kind == cli::command_kind::help);
    BOOST_TEST(c.help_of == std::optional<cli::command_kind>(cli::command_kind::status));
  }
  BOOST_TEST(!parsed({"--help"}).help_of);
  BOOST_TEST(!parsed({"help"}).help_of);
  // No command at all is kubectl's: the top-level help.
  BOOST_TEST(parsed({}).kind == cli::command_kind::help);
  BOOST_TEST(refusal({"help", "stauts"}).message ==
             "unknown command \"stauts\" (list, status, pause, resume, retry, promote)");
}

BOOST_AUTO_TEST_CASE(a_commands_help_has_its_usage_flags_and_examples) {
  const auto status = cli::usage_of(cli::command_kind::status);
  BOOST_TEST(status.find("kubectl partitioning status PLAN [flags]") != std::string::npos);
  BOOST_TEST(status.find("Examples:\n  kubectl partitioning status training-to-cpx\n") !=
             std::string::npos);
  BOOST_TEST(status.find("-w, --watch") != std::string::npos);
  BOOST_TEST(status.find("-o, --output FORMAT") != std::string::npos);
  BOOST_TEST(status.find("--as-group GROUP") != std::string::npos);
  // pause has no -o: its help does not offer it.
  const auto pause = cli::usage_of(cli::command_kind::pause);
  BOOST_TEST(pause.find("--output") == std::string::npos);
  BOOST_TEST(pause.find("kubectl partitioning pause PLAN [flags]") != std::string::npos);
  for (const auto& text : {status, pause, cli::usage()})
    for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
      end = text.find('\n', start);
      BOOST_TEST(end - start <= 100, "line over 100 columns: " << text.substr(start, end - start));
    }
}

BOOST_AUTO_TEST_CASE(top_level_help_lists_commands_and_exit_status) {
  const auto u = cli::usage();
  for (const char* name : {"list", "status PLAN", "pause PLAN", "resume PLAN", "retry PLAN NODE",
                           "promote PLAN", "--request-timeout", "--kubeconfig"})
    BOOST_TEST(u.find(name) != std::string::npos, name);
  BOOST_TEST(u.find("1 on any error") != std::string::npos);
  BOOST_TEST(cli::usage_hint(cli::command_kind::status) ==
             "See 'kubectl partitioning status --help' for usage.");
  BOOST_TEST(cli::usage_hint(std::nullopt) == "See 'kubectl partitioning --help' for usage.");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(request_timeouts_as_kubectl_reads_them) {
  BOOST_TEST(cli::parse_request_timeout("0").value().count() == 0);
  BOOST_TEST(cli::parse_request_timeout("30").value().count() == 30000);
  BOOST_TEST(cli::parse_request_timeout("30s").value().count() == 30000);
  BOOST_TEST(cli::parse_request_timeout("1m").value().count() == 60000);
  BOOST_TEST(cli::parse_request_timeout("1h30m").value().count() == 5400000);
  BOOST_TEST(cli::parse_request_timeout("250ms").value().count() == 250);
  BOOST_TEST(cli::parse_request_timeout("1.5s").value().count() == 1500);
  // Under a millisecond is still a deadline, not "none".
  BOOST_TEST(cli::parse_request_timeout("10us").value().count() == 1);
  for (const char* bad : {"", "-1", "-5s", "1d", "s", "1.2.3s", "abc", "5 s"})
    BOOST_TEST(!cli::parse_request_timeout(bad), bad);
}
