// The text exposition format 0.0.4: golden output and hostile label values.
#include "metrics/registry.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

using namespace gpu_partitioner::metrics;

BOOST_AUTO_TEST_SUITE(exposition)

BOOST_AUTO_TEST_CASE(counters_gauges_and_histograms_match_the_golden_text) {
  registry r;
  auto& c = r.counter("gp_requests_total", "Requests served.", {"verb", "code"});
  c.add({"GET", "200"});
  c.add({"GET", "200"}, 2);
  c.add({"PATCH", "409"});
  auto& g = r.gauge("gp_leader", "1 while leading.");
  g.set({}, 1);
  auto& h = r.histogram("gp_phase_duration_seconds", "Phase time.", {"phase"}, {1, 10});
  h.observe({"Draining"}, 0.5);
  h.observe({"Draining"}, 5);
  h.observe({"Draining"}, 50);
  const std::string expected =
      "# HELP gp_requests_total Requests served.\n"
      "# TYPE gp_requests_total counter\n"
      "gp_requests_total{verb=\"GET\",code=\"200\"} 3\n"
      "gp_requests_total{verb=\"PATCH\",code=\"409\"} 1\n"
      "# HELP gp_leader 1 while leading.\n"
      "# TYPE gp_leader gauge\n"
      "gp_leader 1\n"
      "# HELP gp_phase_duration_seconds Phase time.\n"
      "# TYPE gp_phase_duration_seconds histogram\n"
      "gp_phase_duration_seconds_bucket{phase=\"Draining\",le=\"1\"} 1\n"
      "gp_phase_duration_seconds_bucket{phase=\"Draining\",le=\"10\"} 2\n"
      "gp_phase_duration_seconds_bucket{phase=\"Draining\",le=\"+Inf\"} 3\n"
      "gp_phase_duration_seconds_sum{phase=\"Draining\"} 55.5\n"
      "gp_phase_duration_seconds_count{phase=\"Draining\"} 3\n";
  BOOST_TEST(r.expose() == expected);
}

BOOST_AUTO_TEST_CASE(hostile_label_values_are_escaped) {
  registry r;
  auto& g = r.gauge("gp_nodes", "Nodes.", {"plan"});
  g.set({"a\"b\\c\nd"}, 2);
  BOOST_TEST(r.expose().find("gp_nodes{plan=\"a\\\"b\\\\c\\nd\"} 2\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(label_values_that_are_not_utf8_become_replacement_characters) {
  const std::string fffd = "\xEF\xBF\xBD";
  // Valid UTF-8 (two, three and four bytes) passes through.
  BOOST_TEST(escape_label_value("n\xC3\xB6"
                                "de-\xE2\x82\xAC-\xF0\x9F\x98\x80") ==
             "n\xC3\xB6"
             "de-\xE2\x82\xAC-\xF0\x9F\x98\x80");
  // A stray continuation byte, a truncated sequence at the end, an overlong form, a
  // surrogate, a code point above U+10FFFF and bytes that never occur in UTF-8.
  BOOST_TEST(escape_label_value("a\x80"
                                "b") == "a" + fffd + "b");
  BOOST_TEST(escape_label_value("a\xE2\x82") == "a" + fffd + fffd);
  BOOST_TEST(escape_label_value("\xC0\xAF") == fffd + fffd);
  BOOST_TEST(escape_label_value("\xED\xA0\x80") == fffd + fffd + fffd);
  BOOST_TEST(escape_label_value("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);
  BOOST_TEST(escape_label_value("\xFE\xFF") == fffd + fffd);
  // Escaping still applies around them.
  BOOST_TEST(escape_label_value("\"\xFF\n") == "\\\"" + fffd + "\\n");
}

BOOST_AUTO_TEST_CASE(help_text_escapes_backslash_and_newline) {
  BOOST_TEST(escape_help("a\\b\nc") == "a\\\\b\\nc");
}

BOOST_AUTO_TEST_CASE(special_values_use_prometheus_spelling) {
  BOOST_TEST(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  BOOST_TEST(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  BOOST_TEST(format_value(std::nan("")) == "NaN");
  BOOST_TEST(format_value(0.1) == "0.1");
  BOOST_TEST(format_value(3) == "3");
}

BOOST_AUTO_TEST_CASE(wrong_label_count_is_refused) {
  registry r;
  auto& c = r.counter("gp_x_total", "X.", {"a"});
  BOOST_CHECK_THROW(c.add({}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(registering_a_name_twice_returns_the_same_family) {
  registry r;
  auto& a = r.counter("gp_y_total", "Y.");
  auto& b = r.counter("gp_y_total", "Y.");
  BOOST_TEST(&a == &b);
}

BOOST_AUTO_TEST_CASE(help_text_is_escaped_in_the_exposition) {
  registry r;
  r.counter("gp_z_total", "Back\\slash and\nnewline.");
  BOOST_TEST(r.expose() == "# HELP gp_z_total Back\\\\slash and\\nnewline.\n"
                           "# TYPE gp_z_total counter\n");
}

BOOST_AUTO_TEST_CASE(a_histogram_without_labels_writes_le_alone) {
  registry r;
  auto& h = r.histogram("gp_wait_seconds", "Wait.", {}, {0.25});
  h.observe({}, 0.25);
  BOOST_TEST(r.expose() == "# HELP gp_wait_seconds Wait.\n"
                           "# TYPE gp_wait_seconds histogram\n"
                           "gp_wait_seconds_bucket{le=\"0.25\"} 1\n"
                           "gp_wait_seconds_bucket{le=\"+Inf\"} 1\n"
                           "gp_wait_seconds_sum 0.25\n"
                           "gp_wait_seconds_count 1\n");
}

BOOST_AUTO_TEST_CASE(series_of_a_plan_that_is_gone_can_be_removed) {
  registry r;
  auto& g = r.gauge("gp_nodes", "Nodes.", {"plan", "phase"});
  g.set({"a", "Pending"}, 1);
  g.set({"a", "Failed"}, 1);
  g.set({"b", "Pending"}, 2);
  g.remove_where("plan", "a");
  g.remove_where("no_such_label", "b");
  BOOST_TEST(r.expose() == "# HELP gp_nodes Nodes.\n"
                           "# TYPE gp_nodes gauge\n"
                           "gp_nodes{plan=\"b\",phase=\"Pending\"} 2\n");
  g.remove({"b", "Pending"});
  BOOST_TEST(r.expose() == "# HELP gp_nodes Nodes.\n# TYPE gp_nodes gauge\n");
}

BOOST_AUTO_TEST_CASE(registering_a_name_with_another_type_or_labels_is_refused) {
  registry r;
  r.counter("gp_w_total", "W.", {"a"});
  BOOST_CHECK_THROW(r.gauge("gp_w_total", "W."), std::logic_error);
  BOOST_CHECK_THROW(r.counter("gp_w_total", "W.", {"b"}), std::logic_error);
  BOOST_TEST((r.names() == std::vector<std::string>{"gp_w_total"}));
  BOOST_REQUIRE(r.find("gp_w_total") != nullptr);
  BOOST_TEST((r.find("gp_w_total")->type() == metric_type::counter));
  BOOST_TEST(r.find("gp_nope") == nullptr);
}

BOOST_AUTO_TEST_CASE(ensured_series_are_exposed_at_zero_and_keep_their_values) {
  registry r;
  auto& c = r.counter("gp_evictions_total", "Evictions.", {"result"});
  auto& h = r.histogram("gp_phase_seconds", "Phases.", {"phase"}, {1});
  c.ensure({"error"});
  c.add({"evicted"}, 2);
  c.ensure({"evicted"});
  h.ensure({"Draining"});
  BOOST_TEST(r.expose() == "# HELP gp_evictions_total Evictions.\n"
                           "# TYPE gp_evictions_total counter\n"
                           "gp_evictions_total{result=\"error\"} 0\n"
                           "gp_evictions_total{result=\"evicted\"} 2\n"
                           "# HELP gp_phase_seconds Phases.\n"
                           "# TYPE gp_phase_seconds histogram\n"
                           "gp_phase_seconds_bucket{phase=\"Draining\",le=\"1\"} 0\n"
                           "gp_phase_seconds_bucket{phase=\"Draining\",le=\"+Inf\"} 0\n"
                           "gp_phase_seconds_sum{phase=\"Draining\"} 0\n"
                           "gp_phase_seconds_count{phase=\"Draining\"} 0\n");
}

BOOST_AUTO_TEST_CASE(collectors_set_their_families_before_each_exposition) {
  registry r;
  auto& g = r.gauge("gp_reads", "Times read.");
  int reads = 0;
  r.add_collector([&] { g.set({}, ++reads); });
  BOOST_TEST(r.expose().find("gp_reads 1\n") != std::string::npos);
  BOOST_TEST(r.expose().find("gp_reads 2\n") != std::string::npos);
  BOOST_TEST(reads == 2);
}

BOOST_AUTO_TEST_SUITE_END()
