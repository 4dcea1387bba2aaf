// Kubeconfig settings that change how requests travel, against the real kube-apiserver
// (tools/cluster): tls-server-name is the name the certificate is checked against,
// impersonation reaches the server as the identity it names, proxy-url carries every
// request, and insecure-skip-tls-verify alone connects without a CA. Each kubeconfig is
// the cluster's admin kubeconfig with one setting changed, read by kube::parse_kubeconfig
// as the operator reads it.
#include "tests/integration/support/cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <rapidjson/document.h>
#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace gpu_partitioner;
using namespace gpu_partitioner::testing;
using kube::error_kind;

namespace {

std::string admin_kubeconfig_path() {
  const char* path = std::getenv("KUBECONFIG");
  BOOST_TEST_REQUIRE(path != nullptr, "KUBECONFIG is not set: run through tools/test");
  return path;
}

// The admin kubeconfig with its one cluster and one user changed by `edit`.
kube::result<kube::connection_config>
edited_kubeconfig(const std::function<void(YAML::Node cluster, YAML::Node user)>& edit) {
  const auto path = admin_kubeconfig_path();
  auto text = kube::read_file(path);
  BOOST_TEST_REQUIRE(text.ok());
  YAML::Node root = YAML::Load(text.value());
  edit(root["clusters"][0]["cluster"], root["users"][0]["user"]);
  YAML::Emitter out;
  out << root;
  return kube::parse_kubeconfig(out.c_str(), path);
}

kube::connection_config accepted(const kube::result<kube::connection_config>& r) {
  BOOST_TEST_REQUIRE(r.ok(), (r.ok() ? "" : r.error().describe()));
  return r.value();
}

kube::result<std::string> get_default_namespace(const kube::connection_config& config) {
  connection conn(config);
  kube::http_request req;
  req.path = "/api/v1/namespaces/default";
  req.max_attempts = 1;
  return conn.http.call(req);
}

// Who the server says the request came from (a SelfSubjectReview's userInfo).
rapidjson::Document who_am_i(const kube::connection_config& config) {
  connection conn(config);
  kube::http_request req;
  req.method = kube::verb::post;
  req.path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
  req.body = R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})";
  auto answer = conn.http.call(req);
  BOOST_TEST_REQUIRE(answer.ok(), (answer.ok() ? "" : answer.error().describe()));
  rapidjson::Document doc;
  doc.Parse(answer.value().c_str());
  BOOST_TEST_REQUIRE(doc.IsObject());
  rapidjson::Document info;
  const auto* user_info = kube::find_path(doc, {"status", "userInfo"});
  BOOST_TEST_REQUIRE((user_info != nullptr && user_info->IsObject()), answer.value());
  info.CopyFrom(*user_info, info.GetAllocator());
  return info;
}

std::string string_at(const rapidjson::Value& object, const char* key) {
  auto it = object.FindMember(key);
  return it != object.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

std::vector<std::string> strings_at(const rapidjson::Value& object, const char* key) {
  std::vector<std::string> out;
  auto it = object.FindMember(key);
  if (it != object.MemberEnd() && it->value.IsArray())
    for (const auto& s : it->value.GetArray())
      if (s.IsString())
        out.emplace_back(s.GetString());
  return out;
}

// An HTTP CONNECT proxy on 127.0.0.1: it records each CONNECT's target, opens the tunnel
// and copies bytes both ways until either side closes.
class connect_proxy {
public:
  connect_proxy() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_TEST_REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t n = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    BOOST_TEST_REQUIRE(::listen(listen_fd_, 16) == 0);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~connect_proxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : tunnels_)
      t.join();
    ::close(listen_fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> targets() {
    std::lock_guard<std::mutex> lock(mutex_);
    return targets_;
  }

private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0)
        continue;
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client >= 0)
        tunnels_.emplace_back([this, client] { tunnel(client); });
    }
  }

  void tunnel(int client) {
    std::string head;
    char buf[16384];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 8192) {
      pollfd p{client, POLLIN, 0};
      if (stop_ || ::poll(&p, 1, 100) < 0)
        break;
      if (p.revents == 0)
        continue;
      const ssize_t got = ::recv(client, buf, sizeof buf, 0);
      if (got <= 0)
        break;
      head.append(buf, static_cast<std::size_t>(got));
    }
    // "CONNECT host:port HTTP/1.1"
    const std::size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    if (head.compare(0, 8, "CONNECT ") != 0 || sp2 == std::string::npos) {
      ::close(client);
      return;
    }
    const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      targets_.push_back(target);
    }
    const std::size_t colon = target.rfind(':');
    std::string host = target.substr(0, colon);
    if (host.size() > 2 && host.front() == '[')
      host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int upstream = -1;
    if (::getaddrinfo(host.c_str(), target.substr(colon + 1).c_str(), &hints, &found) == 0) {
      upstream = ::socket(found->ai_family, SOCK_STREAM, 0);
      if (::connect(upstream, found->ai_addr, found->ai_addrlen) != 0) {
        ::close(upstream);
        upstream = -1;
      }
      ::freeaddrinfo(found);
    }
    const std::string answer = upstream >= 0 ? "HTTP/1.1 200 Connection established\r\n\r\n"
                                             : "HTTP/1.1 502 Bad Gateway\r\n\r\n";
    (void)!::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
    while (upstream >= 0 && !stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
      if (::poll(p, 2, 100) < 0)
        break;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (p[i].revents == 0)
          continue;
        const ssize_t got = ::recv(p[i].fd, buf, sizeof buf, 0);
        closed = got <= 0 ||
                 ::send(p[1 - i].fd, buf, static_cast<std::size_t>(got), MSG_NOSIGNAL) != got;
      }
      if (closed)
        break;
    }
    if (upstream >= 0)
      ::close(upstream);
    ::close(client);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> tunnels_;
  std::mutex mutex_;
  std::vector<std::string> targets_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(kubeconfig_against_the_api_server)

// The server's certificate names kubernetes.default.svc and 127.0.0.1, not wrong.example:
// only a name that is really checked can fail.
BOOST_AUTO_TEST_CASE(tls_server_name_is_the_name_the_certificate_is_checked_against) {
  auto right = accepted(edited_kubeconfig([](YAML::Node cluster, YAML::Node) {
    cluster["tls-server-name"] = "kubernetes.default.svc";
  }));
  auto ok = get_default_namespace(right);
  BOOST_TEST(ok.ok(), (ok.ok() ? "" : ok.error().describe()));

  auto wrong = accepted(edited_kubeconfig(
      [](YAML::Node cluster, YAML::Node) { cluster["tls-server-name"] = "wrong.example"; }));
  auto refused = get_default_namespace(wrong);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().kind == error_kind::tls, refused.error().describe());
  BOOST_TEST(refused.error().message.find("wrong.example") != std::string::npos,
             refused.error().message);
}

BOOST_AUTO_TEST_CASE(impersonation_reaches_the_server_as_the_identity_it_names) {
  auto as_jane = accepted(edited_kubeconfig([](YAML::Node, YAML::Node user) {
    user["as"] = "jane";
    user["as-uid"] = "uid-1234";
    user["as-groups"].push_back("platform-team");
    user["as-groups"].push_back("system:authenticated");
    user["as-user-extra"]["reason/why"].push_back("audit");
  }));
  const auto info = who_am_i(as_jane);
  BOOST_TEST(string_at(info, "username") == "jane");
  BOOST_TEST(string_at(info, "uid") == "uid-1234");
  BOOST_TEST((strings_at(info, "groups") ==
              std::vector<std::string>{"platform-team", "system:authenticated"}));
  BOOST_TEST_REQUIRE(info.HasMember("extra"));
  BOOST_TEST((strings_at(info["extra"], "reason/why") == std::vector<std::string>{"audit"}));

  // jane has no grants here: what the admin may do, she may not.
  auto refused = get_default_namespace(as_jane);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().kind == error_kind::forbidden, refused.error().describe());
  BOOST_TEST(refused.error().message.find("\"jane\"") != std::string::npos,
             refused.error().message);
}

BOOST_AUTO_TEST_CASE(every_request_goes_through_the_proxy_url) {
  connect_proxy proxy;
  auto through = accepted(edited_kubeconfig(
      [&](YAML::Node cluster, YAML::Node) { cluster["proxy-url"] = proxy.url(); }));
  auto ok = get_default_namespace(through);
  BOOST_TEST(ok.ok(), (ok.ok() ? "" : ok.error().describe()));
  const std::string authority = through.server.substr(through.server.find("://") + 3);
  BOOST_TEST((proxy.targets() == std::vector<std::string>{authority}));

  // A proxy that is not there fails the request: it is never bypassed.
  auto nowhere = accepted(edited_kubeconfig(
      [](YAML::Node cluster, YAML::Node) { cluster["proxy-url"] = "http://127.0.0.1:1"; }));
  auto refused = get_default_namespace(nowhere);
  BOOST_TEST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.error().kind == error_kind::transport, refused.error().describe());
}

BOOST_AUTO_TEST_CASE(insecure_skip_tls_verify_alone_connects_and_beside_a_ca_is_refused) {
  auto insecure = accepted(edited_kubeconfig([](YAML::Node cluster, YAML::Node) {
    cluster.remove("certificate-authority-data");
    cluster["insecure-skip-tls-verify"] = true;
  }));
  BOOST_TEST(insecure.insecure_skip_tls_verify);
  auto ok = get_default_namespace(insecure);
  BOOST_TEST(ok.ok(), (ok.ok() ? "" : ok.error().describe()));

  auto both = edited_kubeconfig(
      [](YAML::Node cluster, YAML::Node) { cluster["insecure-skip-tls-verify"] = true; });
  BOOST_TEST_REQUIRE(!both.ok());
  BOOST_TEST(both.error().message.find("insecure-skip-tls-verify is true and a "
                                       "certificate-authority is given") != std::string::npos,
             both.error().message);
}

BOOST_AUTO_TEST_SUITE_END()
