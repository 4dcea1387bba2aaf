/* pause: the sandbox process of every pod on the node of `tools/cluster up --with-node`.
 *
 * It holds the pod's namespaces and does nothing else: it sleeps until SIGINT or SIGTERM
 * (then exits 0) and reaps the children re-parented to it, as it is PID 1 of pods that
 * share their process namespace. Built static (tools/lib/cluster_node.sh), so its image
 * is this one file: nothing can be pulled on the test machines.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

static int on(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("gpu-partitioner pause 1");
    return 0;
  }
  if (on(SIGINT, stop) || on(SIGTERM, stop) || on(SIGCHLD, reap)) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;)
    pause();
}
