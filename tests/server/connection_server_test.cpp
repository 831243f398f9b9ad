// The connection layer on its own, with a trivial handler and raw sockets: pipelined requests
// answered in order, a half-closed client answered, limits refused at once (411, 413 while a
// chunked body arrives), the connection cap (503), the read timeout (408), an exclusive port,
// and stop() ending an open chunked response cleanly.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "server/connection_server.h"

namespace kite::server {
namespace {

using namespace std::chrono_literals;

class Served {
  public:
    explicit Served(ConnectionLimits limits)
        : server_(
              limits,
              [this](HttpRequest& req, HttpResponse& res) {
                  if (req.path == "/stream") {
                      res.set_chunked_content_provider(
                          "text/plain",
                          [this](size_t, DataSink& sink) {
                              std::this_thread::sleep_for(10ms);
                              if (stopping) {
                                  sink.write("end", 3);
                                  sink.done();
                                  return true;
                              }
                              return sink.write("x", 1);
                          },
                          [](bool) {});
                      return;
                  }
                  res.set_content(req.method + " " + req.path + " " + req.body, "text/plain");
              },
              [](int status, const std::string& message) {
                  HttpResponse r;
                  r.status = status;
                  r.set_content(message, "text/plain");
                  return r;
              },
              [](int) {}) {
        port = server_.bind("127.0.0.1", 0);
        thread_ = std::thread([this] { server_.serve(); });
    }
    ~Served() { stop(); }
    void stop() {
        if (!thread_.joinable()) return;
        stopping = true;
        server_.stop();
        thread_.join();
    }

    int connect() const {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        timeval tv{5, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        return fd;
    }

    int port = 0;
    std::atomic<bool> stopping{false};

  private:
    ConnectionServer server_;
    std::thread thread_;
};

void send_all(int fd, const std::string& s) {
    ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// Everything until the server closes (or 5 s pass).
std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

TEST(ConnectionServer, PipelinedAndHalfClosedRequestsAreAnswered) {
    Served s({});
    const int fd = s.connect();
    send_all(fd,
             "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
             "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n");
    shutdown(fd, SHUT_WR);
    const std::string out = read_all(fd);
    close(fd);
    const size_t a = out.find("GET /a "), b = out.find("POST /b xyz"), c = out.find("GET /c ");
    ASSERT_NE(a, std::string::npos) << out;
    ASSERT_NE(b, std::string::npos) << out;
    ASSERT_NE(c, std::string::npos) << out;
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
    EXPECT_EQ(count(out, "HTTP/1.1 200 OK"), 3u);
}

TEST(ConnectionServer, RefusesAtTheLimit) {
    Served s({});
    int fd = s.connect();
    send_all(fd, "POST /x HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_all(fd).rfind("HTTP/1.1 411 ", 0), 0u);
    close(fd);
    // A chunked body: 413 once 1 MiB has arrived, long before the client is done.
    fd = s.connect();
    send_all(fd, "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
    for (int i = 0; i < 17; ++i) send_all(fd, chunk);
    const std::string out = read_all(fd);
    EXPECT_EQ(out.rfind("HTTP/1.1 413 ", 0), 0u) << out.substr(0, 80);
    close(fd);
}

TEST(ConnectionServer, CapTimeoutAndExclusivePort) {
    ConnectionLimits limits;
    limits.max_connections = 2;
    limits.read_timeout = 300ms;
    Served s(limits);
    const int a = s.connect(), b = s.connect();
    send_all(b, "GET /slow HTTP/1.1\r\nX: ");  // a head that never ends
    std::this_thread::sleep_for(50ms);
    const int c = s.connect();
    EXPECT_EQ(read_all(c).rfind("HTTP/1.1 503 ", 0), 0u);
    close(c);
    EXPECT_EQ(read_all(a), "");  // idle: closed after the read timeout
    EXPECT_EQ(read_all(b).rfind("HTTP/1.1 408 ", 0), 0u);
    close(a);
    close(b);
    ConnectionServer second(
        {}, [](HttpRequest&, HttpResponse&) {},
        [](int, const std::string&) { return HttpResponse{}; }, [](int) {});
    try {
        second.bind("127.0.0.1", s.port);
        FAIL() << "a second server bound the port";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Address already in use"), std::string::npos)
            << e.what();
    }
}

TEST(ConnectionServer, StopEndsOpenResponses) {
    Served s({});
    const int fd = s.connect();
    send_all(fd, "GET /stream HTTP/1.1\r\n\r\n");
    std::this_thread::sleep_for(100ms);
    const auto start = std::chrono::steady_clock::now();
    s.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
    const std::string out = read_all(fd);
    close(fd);
    EXPECT_EQ(out.rfind("HTTP/1.1 200 OK", 0), 0u);
    EXPECT_NE(out.find("3\r\nend\r\n0\r\n\r\n"), std::string::npos) << out.substr(out.size() - 40);
}

}  // namespace
}  // namespace kite::server
