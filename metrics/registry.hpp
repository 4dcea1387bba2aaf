#pragma once

// A small Prometheus metrics registry: counters, gauges and histograms with labels,
// written in the text exposition format 0.0.4. Thread-safe; prometheus-cpp is not
// packaged here, and this is all the operator needs.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpu_partitioner::metrics {

using label_values = std::vector<std::string>;

enum class metric_type { counter, gauge, histogram };

/// One metric family: a name, help text, label names, and one series per label values.
class family {
public:
  family(std::string name, std::string help, metric_type type, std::vector<std::string> labels,
         std::vector<double> buckets = {});

  /// Counter: add (>= 0). Gauge: add (any sign).
  void add(const label_values& labels, double value = 1);
  /// Gauge: set.
  void set(const label_values& labels, double value);
  /// Histogram: one observation.
  void observe(const label_values& labels, double value);
  /// Creates the series at zero if it is not there: known label values are exposed from
  /// the start, so that rate() and increase() see their first change.
  void ensure(const label_values& labels);
  /// Drops every series (for gauges recomputed from scratch).
  void clear();
  /// Drops the series whose label `label` has `value` (a plan or node that is gone, so
  /// its last values do not linger). Nothing if the family has no such label.
  void remove_where(const std::string& label, const std::string& value);
  /// Drops one series.
  void remove(const label_values& labels);

  /// Appends this family in the text format.
  void write(std::string& out) const;

  const std::string& name() const { return name_; }
  metric_type type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

private:
  struct series {
    double value = 0;
    std::vector<std::uint64_t> bucket_counts;
    double sum = 0;
    std::uint64_t count = 0;
  };
  series& at(const label_values& labels);

  std::string name_;
  std::string help_;
  metric_type type_;
  std::vector<std::string> label_names_;
  std::vector<double> buckets_;
  mutable std::mutex mutex_;
  std::map<label_values, series> series_;
};

/// Registering a name again returns the family registered first; a different type or
/// label names is a programming error (std::logic_error).
class registry {
public:
  family& counter(const std::string& name, const std::string& help,
                  std::vector<std::string> labels = {});
  family& gauge(const std::string& name, const std::string& help,
                std::vector<std::string> labels = {});
  family& histogram(const std::string& name, const std::string& help,
                    std::vector<std::string> labels, std::vector<double> buckets);

  /// Every family, in registration order, in the text format 0.0.4. The collectors run
  /// first, in the order they were added.
  std::string expose() const;
  /// A function that sets some families from the process's state (its memory, its CPU)
  /// just before each exposition: figures read when asked, not sampled on a timer.
  void add_collector(std::function<void()> collect);
  /// The families' names, in registration order.
  std::vector<std::string> names() const;
  /// The family registered under `name`, or nullptr.
  const family* find(const std::string& name) const;

private:
  family& add(std::unique_ptr<family> f);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<family>> families_;
  std::vector<std::function<void()>> collectors_;
};

/// Escapes a label value for the text format: backslash, double quote and newline.
std::string escape_label_value(const std::string& value);

/// Escapes HELP text: backslash and newline.
std::string escape_help(const std::string& text);

/// Formats a sample value as Prometheus does (+Inf, -Inf, NaN, shortest round trip).
std::string format_value(double value);

} // namespace gpu_partitioner::metrics
