// The HTTP/1.1 connection layer of `kite serve`: one epoll thread accepts connections and
// reads requests (parser limits, deadlines, a connection cap), and a fixed pool of handler
// threads runs complete requests and writes their responses. A connection costs a thread
// only while a complete request of it is being answered, so idle or trickling clients
// (slowloris) cost a socket and a small buffer, never a handler. Pipelined requests are
// answered in order; a client that half-closes after its request still gets the answer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/http_message.h"
#include "server/http_parser.h"

namespace kite::server {

struct ConnectionLimits {
    HttpLimits http;
    size_t max_connections = 4096;  // more are answered 503 and closed
    size_t handler_threads = 64;    // requests answered at once (more wait their turn)
    // A new or kept-alive connection may wait this long for its next request, and a request
    // head must arrive within it once started; the body within three times it.
    std::chrono::milliseconds read_timeout{10000};
    std::chrono::milliseconds write_timeout{30000};     // a write stalled this long: client gone
    std::chrono::milliseconds shutdown_timeout{10000};  // then open responses are cut
};

class ConnectionServer {
  public:
    using Handler = std::function<void(HttpRequest&, HttpResponse&)>;
    // The response for a request the layer refuses itself (413, 431, 503 ...).
    using ErrorResponse = std::function<HttpResponse(int status, const std::string& message)>;
    // Called with the status of every response sent.
    using Logger = std::function<void(int status)>;

    ConnectionServer(ConnectionLimits limits, Handler handler, ErrorResponse error, Logger log);
    ~ConnectionServer();
    ConnectionServer(const ConnectionServer&) = delete;
    ConnectionServer& operator=(const ConnectionServer&) = delete;

    // Listens on host:port (0: any free port) without SO_REUSEPORT, so a second server on
    // the same port fails here; returns the port. Throws Error on failure.
    int bind(const std::string& host, int port);
    // Serves until stop(); then refuses new requests, ends those still being read with 503,
    // waits for open responses (at most shutdown_timeout, then cuts them) and returns.
    void serve();
    // From any thread.
    void stop();

  private:
    struct Connection;
    struct Job {
        Connection* conn;
        HttpRequest request;
    };
    using Clock = std::chrono::steady_clock;

    void accept_all();
    void on_readable(Connection& c);
    void process_input(Connection& c);
    void refuse(Connection& c, int status, const std::string& message);
    void dispatch(Connection& c);
    void reclaim_returned();
    void expire(Clock::time_point now);
    void begin_shutdown();
    void close_connection(int fd);
    void watch(Connection& c);

    void handler_loop();
    // Runs one request and writes its response; false when the connection must close.
    bool answer(Connection& c, HttpRequest& request);
    bool write_all(int fd, const char* data, size_t size) const;

    ConnectionLimits limits_;
    Handler handler_;
    ErrorResponse error_;
    Logger log_;
    int listen_fd_ = -1;
    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::unordered_map<int, std::unique_ptr<Connection>> connections_;  // epoll thread only
    size_t busy_ = 0;                                                   // epoll thread only

    std::mutex mutex_;
    std::condition_variable jobs_cv_;
    std::deque<Job> jobs_;
    std::vector<std::pair<Connection*, bool>> returned_;  // (connection, close it)
    bool jobs_closed_ = false;
    std::vector<std::thread> handlers_;
};

}  // namespace kite::server
