/* api-probe: a pod's view of the API server, for tests/node/node_test.sh.
 *
 * GET /api at https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, as the pod's
 * service account (the projected token) and trusting the projected CA only, and prints
 *   api-probe: GET https://HOST:PORT/api from POD_IP: HTTP 200
 * Without arguments it retries for up to 60 s, prints the line (also to the termination
 * log), then sleeps until SIGTERM: a pod that stays Running. With --once it tries once and
 * exits 0 only on 200: the pod's readiness probe, run by the kubelet inside the pod.
 *
 * Built static (OpenSSL and glibc linked in): its image holds this one file.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static char result[512];

static int read_file(const char* path, char* buf, size_t size) {
  FILE* f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  return 0;
}

/* probe: one GET /api; returns the HTTP status, or -1 with the reason in result. */
static int probe(const char* host, int port, const char* token) {
  int status = -1, fd = -1;
  SSL_CTX* ctx = NULL;
  SSL* ssl = NULL;
  struct sockaddr_in server, local;
  socklen_t local_len = sizeof local;
  char from[INET_ADDRSTRLEN] = "?", request[4096], response[512];

  memset(&server, 0, sizeof server);
  server.sin_family = AF_INET;
  server.sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, host, &server.sin_addr) != 1) {
    snprintf(result, sizeof result, "api-probe: %s is not an IPv4 address", host);
    return -1;
  }
  fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&server, sizeof server) != 0) {
    snprintf(result, sizeof result, "api-probe: connect %s:%d failed", host, port);
    goto done;
  }
  if (getsockname(fd, (struct sockaddr*)&local, &local_len) == 0)
    inet_ntop(AF_INET, &local.sin_addr, from, sizeof from);

  ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx || SSL_CTX_load_verify_locations(ctx, SA_DIR "/ca.crt", NULL) != 1) {
    snprintf(result, sizeof result, "api-probe: cannot load %s/ca.crt", SA_DIR);
    goto done;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  ssl = SSL_new(ctx);
  /* The serving certificate must name the Service's IP, as a client's check would. */
  X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) != 1) {
    snprintf(result, sizeof result, "api-probe: TLS to %s:%d failed: %s", host, port,
             ERR_reason_error_string(ERR_get_error()));
    goto done;
  }
  int len = snprintf(request, sizeof request,
                     "GET /api HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
                     "User-Agent: api-probe\r\nConnection: close\r\n\r\n",
                     host, port, token);
  if (len <= 0 || len >= (int)sizeof request || SSL_write(ssl, request, len) != len) {
    snprintf(result, sizeof result, "api-probe: cannot send the request");
    goto done;
  }
  int n = SSL_read(ssl, response, sizeof response - 1);
  if (n <= 0) {
    snprintf(result, sizeof result, "api-probe: no response from %s:%d", host, port);
    goto done;
  }
  response[n] = '\0';
  if (sscanf(response, "HTTP/%*s %d", &status) != 1)
    status = -1;
  snprintf(result, sizeof result, "api-probe: GET https://%s:%d/api from %s: HTTP %d", host, port,
           from, status);
done:
  if (ssl)
    SSL_free(ssl);
  if (ctx)
    SSL_CTX_free(ctx);
  if (fd >= 0)
    close(fd);
  return status;
}

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

int main(int argc, char** argv) {
  int once = argc > 1 && strcmp(argv[1], "--once") == 0;
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  char token[8192];
  if (!host || !port) {
    fprintf(stderr, "api-probe: KUBERNETES_SERVICE_HOST/PORT are not set\n");
    return 2;
  }
  if (read_file(SA_DIR "/token", token, sizeof token) != 0) {
    fprintf(stderr, "api-probe: no service account token in %s\n", SA_DIR);
    return 2;
  }
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  int status = -1;
  for (int attempt = 0; attempt < (once ? 1 : 60); ++attempt) {
    if (attempt > 0)
      sleep(1);
    status = probe(host, atoi(port), token);
    if (status == 200)
      break;
  }
  puts(result);
  fflush(stdout);
  if (once)
    return status == 200 ? 0 : 1;
  FILE* log = fopen("/dev/termination-log", "w");
  if (log) {
    fputs(result, log);
    fclose(log);
  }
  if (status != 200)
    return 1;
  for (;;)
    pause();
}
