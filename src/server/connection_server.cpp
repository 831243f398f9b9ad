#include "server/connection_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace kite::server {

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// After refusing a request, input is discarded this long before closing, so the client
// reads the answer instead of a reset caused by its unread upload.
constexpr std::chrono::milliseconds kDrainTime{2000};
constexpr uint64_t kWakeToken = ~uint64_t{0};

std::string response_head(const HttpResponse& res, bool chunked, bool keep_alive) {
    std::string head = fmt::format("HTTP/1.1 {} {}\r\n", res.status, reason_phrase(res.status));
    if (!res.content_type.empty()) head += "Content-Type: " + res.content_type + "\r\n";
    for (const auto& [name, value] : res.headers) head += name + ": " + value + "\r\n";
    if (chunked)
        head += "Transfer-Encoding: chunked\r\n";
    else
        head += fmt::format("Content-Length: {}\r\n", res.body.size());
    if (!keep_alive) head += "Connection: close\r\n";
    return head + "\r\n";
}

}  // namespace

struct ConnectionServer::Connection {
    Connection(int socket, HttpLimits limits) : fd(socket), parser(limits) {}
    int fd;
    std::string in;  // received, not yet parsed
    HttpRequestParser parser;
    HttpRequestParser::State seen = HttpRequestParser::State::Idle;  // for the deadlines
    Clock::time_point deadline;
    bool busy = false;  // a handler thread owns it
    bool peer_closed = false;
    bool draining = false;  // refused: discard input until EOF or the deadline
    bool continue_sent = false;
    bool watched = false;  // registered with epoll
};

ConnectionServer::ConnectionServer(ConnectionLimits limits, Handler handler, ErrorResponse error,
                                   Logger log)
    : limits_(limits),
      handler_(std::move(handler)),
      error_(std::move(error)),
      log_(std::move(log)) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) throw Error(fmt::format("epoll: {}", std::strerror(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeToken;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ConnectionServer::~ConnectionServer() {
    for (auto& [fd, c] : connections_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    ::close(wake_fd_);
    ::close(epoll_fd_);
}

int ConnectionServer::bind(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
        throw Error(fmt::format("cannot listen on {}:{}: {}", host, port, gai_strerror(rc)));
    std::string why = "no address";
    for (addrinfo* a = found; a && listen_fd_ < 0; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        // SO_REUSEADDR lets a restart bind past old TIME_WAIT connections; on Linux it never
        // lets a second socket listen on the port (SO_REUSEPORT would, and is not set).
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
            listen_fd_ = fd;
        } else {
            why = std::strerror(errno);
            ::close(fd);
        }
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) throw Error(fmt::format("cannot listen on {}:{}: {}", host, port, why));
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
    return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

void ConnectionServer::stop() {
    stopping_ = true;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionServer::serve() {
    for (size_t i = 0; i < limits_.handler_threads; ++i)
        handlers_.emplace_back([this] { handler_loop(); });
    std::vector<epoll_event> events(256);
    bool shutting_down = false;
    Clock::time_point cut_at{};
    while (!shutting_down || busy_ > 0) {
        const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 200);
        for (int i = 0; i < n; ++i) {
            const epoll_event& ev = events[static_cast<size_t>(i)];
            if (ev.data.u64 == kWakeToken) {
                uint64_t count;
                [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof count);
            } else if (listen_fd_ >= 0 && ev.data.fd == listen_fd_) {
                accept_all();
            } else if (auto it = connections_.find(ev.data.fd); it != connections_.end()) {
                on_readable(*it->second);
            }
        }
        reclaim_returned();
        const Clock::time_point now = Clock::now();
        if (stopping_ && !shutting_down) {
            shutting_down = true;
            cut_at = now + limits_.shutdown_timeout;
            begin_shutdown();
        }
        if (shutting_down && now > cut_at) {
            // Responses still open past the bound: their next write fails and they end.
            for (auto& [fd, c] : connections_)
                if (c->busy) ::shutdown(fd, SHUT_RDWR);
        }
        expire(now);
    }
    {
        std::lock_guard lock(mutex_);
        jobs_closed_ = true;
    }
    jobs_cv_.notify_all();
    for (std::thread& t : handlers_) t.join();
    handlers_.clear();
}

void ConnectionServer::accept_all() {
    while (true) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;  // EAGAIN, or out of descriptors until some close
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connections_.size() >= limits_.max_connections) {
            // Closed at once rather than drained, so a flood cannot pile up descriptors.
            const HttpResponse res = error_(503, "too many connections; try again later");
            const std::string out = response_head(res, false, false) + res.body;
            [[maybe_unused]] const ssize_t r =
                send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            log_(503);
            ::close(fd);
            continue;
        }
        auto conn = std::make_unique<Connection>(fd, limits_.http);
        Connection& c = *conn;
        connections_.emplace(fd, std::move(conn));
        c.deadline = Clock::now() + limits_.read_timeout;
        watch(c);
    }
}

void ConnectionServer::watch(Connection& c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
    c.watched = true;
}

void ConnectionServer::on_readable(Connection& c) {
    char buf[kReadChunk];
    // Parse after every read, so a chunked body is decoded (and limited) as it arrives and
    // the buffer never holds more than one read beyond the request being assembled.
    while (!c.busy) {
        const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
        if (n > 0) {
            if (!c.draining) {
                c.in.append(buf, static_cast<size_t>(n));
                process_input(c);
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n < 0 && errno == EINTR) continue;
        // The client has closed its side (or the connection failed): a request already
        // complete is still answered (half-close); anything else ends here.
        c.peer_closed = true;
        if (!c.busy) close_connection(c.fd);
        return;
    }
}

void ConnectionServer::process_input(Connection& c) {
    using State = HttpRequestParser::State;
    const State state = c.parser.parse(c.in);
    const Clock::time_point now = Clock::now();
    if (state != c.seen) {
        if (state == State::Head) c.deadline = now + limits_.read_timeout;
        if (state == State::Body) c.deadline = now + 3 * limits_.read_timeout;
        c.seen = state;
    }
    if (state == State::Failed) return refuse(c, c.parser.error_status(), c.parser.error_message());
    if (state == State::Complete) return dispatch(c);
    if (c.parser.expects_continue() && !c.continue_sent) {
        c.continue_sent = true;
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] const ssize_t r =
            send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

void ConnectionServer::refuse(Connection& c, int status, const std::string& message) {
    HttpResponse res = error_(status, message);
    const std::string out = response_head(res, false, false) + res.body;
    // A short answer on a fresh socket buffer: one non-blocking send is enough, and a client
    // that does not read gets nothing rather than a thread.
    [[maybe_unused]] const ssize_t r =
        send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    log_(status);
    ::shutdown(c.fd, SHUT_WR);
    c.draining = true;
    c.parser = HttpRequestParser(limits_.http);  // frees a partial body at once
    c.in.clear();
    c.in.shrink_to_fit();
    c.deadline = Clock::now() + kDrainTime;
    if (!c.watched) watch(c);
}

void ConnectionServer::dispatch(Connection& c) {
    c.busy = true;
    ++busy_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    c.watched = false;
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(Job{&c, c.parser.take()});
    }
    c.seen = HttpRequestParser::State::Idle;
    c.continue_sent = false;
    jobs_cv_.notify_one();
}

void ConnectionServer::reclaim_returned() {
    std::vector<std::pair<Connection*, bool>> returned;
    {
        std::lock_guard lock(mutex_);
        returned.swap(returned_);
    }
    for (auto [c, close] : returned) {
        c->busy = false;
        --busy_;
        if (close || stopping_) {
            close_connection(c->fd);
            continue;
        }
        c->deadline = Clock::now() + limits_.read_timeout;
        watch(*c);
        // Bytes already buffered may hold the start of the next request (or a bad one).
        if (!c->in.empty()) process_input(*c);
    }
}

void ConnectionServer::expire(Clock::time_point now) {
    std::vector<int> expired;
    for (auto& [fd, c] : connections_)
        if (!c->busy && now > c->deadline) expired.push_back(fd);
    for (int fd : expired) {
        Connection& c = *connections_.at(fd);
        if (c.draining || c.parser.state() == HttpRequestParser::State::Idle)
            close_connection(fd);
        else
            refuse(c, 408, "the request did not arrive in time");
    }
}

void ConnectionServer::begin_shutdown() {
    if (listen_fd_ >= 0) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        ::close(listen_fd_);
        listen_fd_ = -1;
    }
    std::vector<int> idle;
    for (auto& [fd, c] : connections_) {
        if (c->busy || c->draining) continue;
        if (c->parser.state() == HttpRequestParser::State::Idle)
            idle.push_back(fd);
        else
            refuse(*c, 503, "the server is shutting down");
    }
    for (int fd : idle) close_connection(fd);
}

void ConnectionServer::close_connection(int fd) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections_.erase(fd);
}

void ConnectionServer::handler_loop() {
    while (true) {
        Job job;
        {
            std::unique_lock lock(mutex_);
            jobs_cv_.wait(lock, [this] { return jobs_closed_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        Connection& c = *job.conn;
        bool keep = answer(c, job.request);
        // Pipelined requests already received are answered here, in order.
        while (keep && !stopping_ && c.parser.parse(c.in) == HttpRequestParser::State::Complete) {
            HttpRequest next = c.parser.take();
            keep = answer(c, next);
        }
        {
            std::lock_guard lock(mutex_);
            returned_.emplace_back(&c, !keep);
        }
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
}

bool ConnectionServer::answer(Connection& c, HttpRequest& request) {
    HttpResponse res;
    try {
        handler_(request, res);
    } catch (const std::exception& e) {
        res = error_(500, std::string("internal error: ") + e.what());
    }
    // A half-closed client gets its answer, then the connection ends.
    const bool keep_alive = request.keep_alive && !c.peer_closed && !stopping_;
    if (!res.provider) {
        const std::string out = response_head(res, false, keep_alive) + res.body;
        const bool ok = write_all(c.fd, out.data(), out.size());
        log_(res.status);
        return ok && keep_alive;
    }
    const std::string head = response_head(res, true, keep_alive);
    bool ok = write_all(c.fd, head.data(), head.size());
    bool done = false;
    size_t offset = 0;
    DataSink sink;
    sink.write = [&](const char* data, size_t size) {
        if (size == 0) return ok;
        const std::string framed = fmt::format("{:x}\r\n", size) + std::string(data, size) + "\r\n";
        ok = ok && write_all(c.fd, framed.data(), framed.size());
        offset += size;
        return ok;
    };
    sink.done = [&] {
        if (done) return;
        done = true;
        ok = ok && write_all(c.fd, "0\r\n\r\n", 5);
    };
    while (ok && !done && res.provider(offset, sink)) {
    }
    if (res.releaser) res.releaser(ok && done);
    log_(res.status);
    return ok && done && keep_alive;
}

bool ConnectionServer::write_all(int fd, const char* data, size_t size) const {
    while (size > 0) {
        const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            size -= static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            if (poll(&p, 1, static_cast<int>(limits_.write_timeout.count())) == 1) continue;
        }
        return false;
    }
    return true;
}

}  // namespace kite::server
