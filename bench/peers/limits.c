// SPDX-License-Identifier: Apache-2.0
// limits: this machine's physical limits for moving bytes between processes, the floor
// under any collective library here. Prints one "name value unit" line per measure:
// memcpy bandwidth (64 MiB, best of 10; bytes copied per second), memory read, write and
// read+write bandwidth, one-way latency between two processes through a shared cache line
// (fork, MAP_SHARED|MAP_ANONYMOUS page, round trip / 2, median of 100k), loopback TCP
// one-way latency (8 B ping-pong, TCP_NODELAY) and bandwidth (64 MiB stream), and
// process_vm_readv bandwidth (64 MiB; "unavailable (reason)" where not permitted).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timing.h"

#define BIG (64u << 20)
#define PINGS 100000
#define TCP_PINGS 20000

static char* big_buffer(void) {
    char* p = aligned_alloc(4096, BIG);
    if (p == NULL) {
        perror("limits: aligned_alloc");
        exit(1);
    }
    memset(p, 1, BIG);
    return p;
}

static void memory(void) {
    char *src = big_buffer(), *dst = big_buffer();
    double copy = 1e30, rd = 1e30, wr = 1e30;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep <= 10; ++rep) {  // rep 0 warms up
        src[rep]  = (char)rep;
        double t0 = now_s();
        memcpy(dst, src, BIG);
        double t1    = now_s();
        uint64_t sum = 0;
        for (const uint64_t* p = (const uint64_t*)src; p < (const uint64_t*)(src + BIG); p += 4) {
            sum += p[0] ^ p[1] ^ p[2] ^ p[3];
        }
        sink += sum + (uint64_t)dst[rep];
        double t2 = now_s();
        memset(dst, rep, BIG);
        double t3 = now_s();
        if (rep > 0) {
            copy = t1 - t0 < copy ? t1 - t0 : copy;
            rd   = t2 - t1 < rd ? t2 - t1 : rd;
            wr   = t3 - t2 < wr ? t3 - t2 : wr;
        }
    }
    printf("memcpy_bandwidth %.2f GB/s\n", BIG / copy / 1e9);
    printf("memory_read_bandwidth %.2f GB/s\n", BIG / rd / 1e9);
    printf("memory_write_bandwidth %.2f GB/s\n", BIG / wr / 1e9);
    printf("memory_read_write_bandwidth %.2f GB/s\n", 2.0 * BIG / copy / 1e9);
    free(src);
    free(dst);
}

// Two flags on separate cache lines: the parent writes `ping`, the child answers in `pong`.
static void shm_latency(void) {
    volatile uint64_t* page =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        printf("shm_one_way_latency unavailable (mmap: %s)\n", strerror(errno));
        return;
    }
    volatile uint64_t *ping = page, *pong = page + 8;
    pid_t child = fork();
    if (child == 0) {
        for (uint64_t i = 1; i <= PINGS + 1000; ++i) {
            while (*ping != i) {
                __builtin_ia32_pause();
            }
            *pong = i;
        }
        _exit(0);
    }
    double* rtt = malloc(sizeof(double) * PINGS);
    for (uint64_t i = 1; i <= PINGS + 1000; ++i) {  // the first 1000 warm up
        double t0 = now_s();
        *ping     = i;
        while (*pong != i) {
            __builtin_ia32_pause();
        }
        if (i > 1000) {
            rtt[i - 1001] = now_s() - t0;
        }
    }
    waitpid(child, NULL, 0);
    printf("shm_one_way_latency %.3f us\n", median(rtt, PINGS) / 2 * 1e6);
    free(rtt);
    munmap((void*)page, 4096);
}

static int full_io(int fd, char* buf, size_t len, int sending) {
    for (size_t done = 0; done < len;) {
        ssize_t r = sending ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
        if (r <= 0) {
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

// A connected loopback TCP pair: *a in this process, *b for the child.
static int tcp_pair(int* a, int* b) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len           = sizeof addr;
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (l < 0 || bind(l, (struct sockaddr*)&addr, len) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr*)&addr, &len) != 0) {
        return -1;
    }
    *b = socket(AF_INET, SOCK_STREAM, 0);
    if (*b < 0 || connect(*b, (struct sockaddr*)&addr, len) != 0) {
        return -1;
    }
    *a = accept(l, NULL, NULL);
    close(l);
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return *a < 0 ? -1 : 0;
}

static void tcp(void) {
    int a = -1, b = -1;
    if (tcp_pair(&a, &b) != 0) {
        printf("tcp_one_way_latency unavailable (%s)\n", strerror(errno));
        return;
    }
    char* buf   = big_buffer();
    pid_t child = fork();
    if (child == 0) {  // echo 8 B pings, then send 3 streams of 64 MiB, each on a 1 B go
        close(a);
        char msg[8];
        for (int i = 0; i < TCP_PINGS + 100; ++i) {
            if (full_io(b, msg, 8, 0) != 0 || full_io(b, msg, 8, 1) != 0) {
                _exit(1);
            }
        }
        for (int rep = 0; rep < 3; ++rep) {
            if (full_io(b, msg, 1, 0) != 0 || full_io(b, buf, BIG, 1) != 0) {
                _exit(1);
            }
        }
        _exit(0);
    }
    close(b);
    double* rtt = malloc(sizeof(double) * TCP_PINGS);
    char msg[8] = "pingpong";
    for (int i = 0; i < TCP_PINGS + 100; ++i) {  // the first 100 warm up
        double t0 = now_s();
        if (full_io(a, msg, 8, 1) != 0 || full_io(a, msg, 8, 0) != 0) {
            printf("tcp_one_way_latency unavailable (ping-pong failed)\n");
            return;
        }
        if (i >= 100) {
            rtt[i - 100] = now_s() - t0;
        }
    }
    printf("tcp_one_way_latency %.3f us\n", median(rtt, TCP_PINGS) / 2 * 1e6);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        double t0 = now_s();
        if (full_io(a, msg, 1, 1) != 0 || full_io(a, buf, BIG, 0) != 0) {
            printf("tcp_bandwidth unavailable (stream failed)\n");
            return;
        }
        double t = now_s() - t0;
        best     = t < best ? t : best;
    }
    printf("tcp_bandwidth %.2f GB/s\n", BIG / best / 1e9);
    waitpid(child, NULL, 0);
    close(a);
    free(rtt);
    free(buf);
}

// Reads a child's 64 MiB with process_vm_readv (a single-copy transfer, as CMA/XPMEM-style
// MPI transports do), best of 5.
static void vm_readv(void) {
    char* src = big_buffer();
    int go[2];
    if (pipe(go) != 0) {
        return;
    }
    pid_t child = fork();
    if (child == 0) {  // keeps its copy of src mapped until the parent closes the pipe
        char c;
        close(go[1]);
        while (read(go[0], &c, 1) > 0) {
        }
        _exit(0);
    }
    close(go[0]);
    char* dst   = big_buffer();
    double best = 1e30;
    for (int rep = 0; rep < 6; ++rep) {
        struct iovec local = {dst, BIG}, remote = {src, BIG};
        double t0 = now_s();
        ssize_t r = process_vm_readv(child, &local, 1, &remote, 1, 0);
        double t  = now_s() - t0;
        if (r != (ssize_t)BIG) {
            printf("process_vm_readv_bandwidth unavailable (%s)\n",
                   r < 0 ? strerror(errno) : "short read");
            best = 0;
            break;
        }
        best = rep > 0 && t < best ? t : best;
    }
    if (best > 0) {
        printf("process_vm_readv_bandwidth %.2f GB/s\n", BIG / best / 1e9);
    }
    close(go[1]);
    waitpid(child, NULL, 0);
    free(src);
    free(dst);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    memory();
    shm_latency();
    tcp();
    vm_readv();
    return 0;
}
