#pragma once

#include "kube/config.hpp"
#include "kube/error.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gpu_partitioner::kube {

/// What a request authenticates with right now.
struct credential_material {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  /// Changes whenever the material does, so a connection can tell when to reload.
  std::uint64_t generation = 0;
};

/// The source of a connection's credentials, shared by every client of one
/// configuration and safe to use from several threads. A static token or certificate
/// never changes; a token file is re-read once a minute (bound service-account tokens
/// rotate); an exec plugin runs again when its credential expires or the server
/// answered 401.
class credentials {
public:
  using clock = std::chrono::system_clock;

  explicit credentials(connection_config config);

  /// The material to use now; runs the exec plugin or re-reads the token file if due.
  result<credential_material> current();

  /// The server refused the material of `generation` (401): fetch fresh material next
  /// time, unless it has been already (every connection sharing these credentials may
  /// report the same refusal).
  void invalidate(std::uint64_t generation);

  /// For tests: how often the token file is re-read, and how soon an exec plugin may run
  /// again after its last run.
  void set_token_file_period(std::chrono::seconds period) { token_file_period_ = period; }
  void set_min_exec_interval(std::chrono::milliseconds interval) { min_exec_interval_ = interval; }

private:
  result<credential_material> refresh_locked(clock::time_point now);

  const connection_config config_;
  std::mutex mutex_;
  credential_material material_;
  bool loaded_ = false;
  clock::time_point expires_ = clock::time_point::max();
  std::chrono::seconds token_file_period_{60};
  /// An exec plugin runs at most once per this interval: one that hands out a credential
  /// already expired (or about to) would otherwise run before every request. Meanwhile
  /// the last run's material, or its error, serves.
  std::chrono::milliseconds min_exec_interval_{10000};
  std::optional<clock::time_point> last_exec_;
  std::optional<failure> last_exec_error_;
  bool refused_ = false;
};

/// Gives `config` credentials that every client made from it (and its copies) shares.
void share_credentials(connection_config& config);

/// The configuration's shared credentials, or new ones of its own if it has none.
std::shared_ptr<credentials> credentials_for(const connection_config& config);

/// Runs an exec credential plugin once and decodes its ExecCredential; the expiry is
/// `time_point::max()` when the plugin gives none. The plugin and its children are killed
/// at `deadline`, or as soon as its stdout passes 1 MiB.
result<credential_material>
run_exec_plugin(const exec_plugin& plugin, const std::string& server,
                credentials::clock::time_point& expires,
                std::chrono::milliseconds deadline = std::chrono::seconds(30));

} // namespace gpu_partitioner::kube
