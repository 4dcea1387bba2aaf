#include "tests/support/loopback.hpp"

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace gpu_partitioner::test_support {

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return a;
}

} // namespace

int port_of(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    return 0;
  char* end = nullptr;
  const long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  return *end == '\0' && port > 0 && port <= 65535 ? static_cast<int>(port) : 0;
}

std::string fresh_path(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/" + name + "-XXXXXX";
  BOOST_REQUIRE_MESSAGE(::mkdtemp(dir.data()) != nullptr, "mkdtemp " << dir);
  return dir + "/" + name;
}

int bound_port(const std::string& file, const std::string& listener,
               std::chrono::milliseconds timeout, const std::function<bool()>& running) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // The operator renames the file into place whole: once it opens, it is complete.
    if (std::ifstream in(file); in) {
      for (std::string name, address; in >> name >> address;)
        if (name == listener)
          return port_of(address);
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline || (running && !running()))
      return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

http_response http_get(int port, const std::string& target, int timeout_seconds) {
  http_response r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return r;
  timeval timeout{timeout_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  const sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string request = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    const auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ::close(fd);
      return r;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buf[16384];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    raw.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const auto head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos)
    return r;
  r.code = std::atoi(raw.c_str() + raw.find(' ') + 1);
  r.head = raw.substr(0, head_end);
  r.body = raw.substr(head_end + 4);
  return r;
}

} // namespace gpu_partitioner::test_support
