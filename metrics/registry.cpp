#include "metrics/registry.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

namespace gpu_partitioner::metrics {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when there is none.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80)
    return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF; // the second byte's range
  if (b >= 0xC2 && b <= 0xDF)
    n = 2;
  else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0)
      lo = 0xA0;
    if (b == 0xED)
      hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi)
    return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF)
      return 0;
  return n;
}

} // namespace

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else if (const std::size_t n = utf8_sequence(value, i); n > 0) {
      out.append(value, i, n);
      i += n;
      continue;
    } else
      // The text format is UTF-8: a byte that starts no valid sequence becomes U+FFFD,
      // so that one bad label value cannot make a scraper drop the whole exposition.
      out += "\xEF\xBF\xBD";
    ++i;
  }
  return out;
}

std::string escape_help(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Shortest form that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v)
      return shorter;
  }
  return buf;
}

family::family(std::string name, std::string help, metric_type type,
               std::vector<std::string> labels, std::vector<double> buckets)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(labels)),
      buckets_(std::move(buckets)) {}

family::series& family::at(const label_values& labels) {
  if (labels.size() != label_names_.size())
    throw std::invalid_argument("metric " + name_ + ": expected " +
                                std::to_string(label_names_.size()) + " label values, got " +
                                std::to_string(labels.size()));
  auto [it, fresh] = series_.try_emplace(labels);
  if (fresh && type_ == metric_type::histogram)
    it->second.bucket_counts.assign(buckets_.size(), 0);
  return it->second;
}

void family::add(const label_values& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  at(labels).value += value;
}

void family::set(const label_values& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  at(labels).value = value;
}

void family::observe(const label_values& labels, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& s = at(labels);
  for (std::size_t i = 0; i < buckets_.size(); ++i)
    if (value <= buckets_[i])
      ++s.bucket_counts[i];
  s.sum += value;
  ++s.count;
}

void family::ensure(const label_values& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  at(labels);
}

void family::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  series_.clear();
}

void family::remove(const label_values& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  series_.erase(labels);
}

void family::remove_where(const std::string& label, const std::string& value) {
  std::size_t index = 0;
  while (index < label_names_.size() && label_names_[index] != label)
    ++index;
  if (index == label_names_.size())
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = series_.begin(); it != series_.end();)
    it = it->first[index] == value ? series_.erase(it) : std::next(it);
}

namespace {

std::string label_block(const std::vector<std::string>& names, const label_values& values,
                        const std::string& extra_name = {}, const std::string& extra_value = {}) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + escape_label_value(values[i]) + "\"";
  if (!extra_name.empty())
    out += (out.empty() ? "" : ",") + extra_name + "=\"" + extra_value + "\"";
  return out.empty() ? out : "{" + out + "}";
}

} // namespace

void family::write(std::string& out) const {
  static const char* types[] = {"counter", "gauge", "histogram"};
  out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
  out += "# TYPE " + name_ + " " + types[static_cast<int>(type_)] + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [labels, s] : series_) {
    if (type_ != metric_type::histogram) {
      out += name_ + label_block(label_names_, labels) + " " + format_value(s.value) + "\n";
      continue;
    }
    for (std::size_t i = 0; i < buckets_.size(); ++i)
      out += name_ + "_bucket" +
             label_block(label_names_, labels, "le", format_value(buckets_[i])) + " " +
             std::to_string(s.bucket_counts[i]) + "\n";
    out += name_ + "_bucket" + label_block(label_names_, labels, "le", "+Inf") + " " +
           std::to_string(s.count) + "\n";
    out += name_ + "_sum" + label_block(label_names_, labels) + " " + format_value(s.sum) + "\n";
    out +=
        name_ + "_count" + label_block(label_names_, labels) + " " + std::to_string(s.count) + "\n";
  }
}

family& registry::add(std::unique_ptr<family> f) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& existing : families_)
    if (existing->name() == f->name()) {
      if (existing->type() != f->type() || existing->label_names() != f->label_names())
        throw std::logic_error("metric " + f->name() +
                               " registered again with another type or labels");
      return *existing;
    }
  families_.push_back(std::move(f));
  return *families_.back();
}

family& registry::counter(const std::string& name, const std::string& help,
                          std::vector<std::string> labels) {
  return add(std::make_unique<family>(name, help, metric_type::counter, std::move(labels)));
}

family& registry::gauge(const std::string& name, const std::string& help,
                        std::vector<std::string> labels) {
  return add(std::make_unique<family>(name, help, metric_type::gauge, std::move(labels)));
}

family& registry::histogram(const std::string& name, const std::string& help,
                            std::vector<std::string> labels, std::vector<double> buckets) {
  return add(std::make_unique<family>(name, help, metric_type::histogram, std::move(labels),
                                      std::move(buckets)));
}

std::vector<std::string> registry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& f : families_)
    out.push_back(f->name());
  return out;
}

const family* registry::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_)
    if (f->name() == name)
      return f.get();
  return nullptr;
}

void registry::add_collector(std::function<void()> collect) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collect));
}

std::string registry::expose() const {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    collectors = collectors_;
  }
  // Outside the registry's lock: a collector sets families, which lock themselves.
  for (const auto& collect : collectors)
    collect();
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : families_)
    f->write(out);
  return out;
}

} // namespace gpu_partitioner::metrics
