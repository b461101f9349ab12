// The sandbox relay (relay.ts's twin, same argv), native: a Node relay costs a Node start-up per episode.
// Listens on the sandbox's loopback, forwards each connection to a Unix socket the controller serves, starts
// the agent once it listens, and ends as the agent ends (its exit code, or its signal re-raised).
// Usage: sandbox-relay --listen PORT=SOCKET… -- AGENT ARGV…   Built by scripts/build.mjs where cc exists.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LISTEN 16

static pid_t agent = -1;

static void forward(int sig) {
  if (agent > 0) kill(agent, sig);
}

static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    n -= w;
  }
  return 0;
}

/* One connection: bytes both ways until both sides have ended. Runs in its own process. */
static void splice_unix(int inbound, const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) _exit(1);
  strcpy(addr.sun_path, path);
  int out = socket(AF_UNIX, SOCK_STREAM, 0);
  if (out < 0 || connect(out, (struct sockaddr *)&addr, sizeof addr) < 0) _exit(1);
  struct pollfd fds[2] = {{.fd = inbound, .events = POLLIN}, {.fd = out, .events = POLLIN}};
  char buf[65536];
  int open_ends = 2;
  while (open_ends > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      int other = i == 0 ? out : inbound;
      if (n > 0 && write_all(other, buf, n) == 0) continue;
      shutdown(other, SHUT_WR); /* this side ended (or the other cannot take more): half-close */
      fds[i].fd = -1;
      open_ends--;
    }
  }
  _exit(0);
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 64) < 0)
    return -1;
  return fd;
}

static int fail(const char *what) {
  fprintf(stderr, "episodic sandbox relay: %s\n", what);
  return 126;
}

int main(int argc, char **argv) {
  struct pollfd fds[MAX_LISTEN];
  const char *sockets[MAX_LISTEN];
  int n = 0, i = 1;
  for (; i + 1 < argc && strcmp(argv[i], "--listen") == 0 && n < MAX_LISTEN; i += 2) {
    char *eq = strchr(argv[i + 1], '=');
    if (!eq) return fail("usage: relay --listen PORT=SOCKET… -- COMMAND…");
    *eq = '\0';
    fds[n].fd = listen_on(atoi(argv[i + 1]));
    fds[n].events = POLLIN;
    sockets[n] = eq + 1;
    if (fds[n++].fd < 0) return fail("cannot listen on the sandbox's loopback");
  }
  if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) return fail("usage: relay --listen PORT=SOCKET… -- COMMAND…");
  sigset_t chld, none;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &none);
  sigdelset(&none, SIGCHLD);
  signal(SIGCHLD, forward); /* any handler: SIGCHLD must interrupt ppoll, not be ignored */
  agent = fork();
  if (agent == 0) {
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGCHLD, SIG_DFL);
    execvp(argv[i + 1], &argv[i + 1]);
    fprintf(stderr, "episodic sandbox: cannot start %s: %s\n", argv[i + 1], strerror(errno));
    _exit(127);
  }
  if (agent < 0) return fail("cannot fork the agent");
  signal(SIGTERM, forward);
  signal(SIGINT, forward);
  signal(SIGHUP, forward);
  for (;;) {
    int status;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0)
      if (done == agent) {
        if (WIFSIGNALED(status)) {
          signal(WTERMSIG(status), SIG_DFL);
          sigprocmask(SIG_SETMASK, &none, NULL);
          kill(getpid(), WTERMSIG(status));
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
      }
    if (ppoll(fds, (nfds_t)n, NULL, &none) <= 0) continue; /* EINTR: a child ended */
    for (int k = 0; k < n; k++) {
      if (!(fds[k].revents & POLLIN)) continue;
      int c = accept(fds[k].fd, NULL, NULL);
      if (c < 0) continue;
      if (fork() == 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGCHLD, SIG_DFL);
        splice_unix(c, sockets[k]);
      }
      close(c);
    }
  }
}
