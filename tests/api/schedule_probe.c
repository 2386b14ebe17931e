// SPDX-License-Identifier: Apache-2.0
/* The program run_user_schedule.sh starts as every rank: a user's schedule through the C API
 * alone (loom_schedule_*), on real buffers, every result checked.
 *
 *   schedule_probe run FILE    FILE computes allreduce or allgather: loaded from the file
 *                              and from memory, run blocking and non-blocking, in and out
 *                              of place, at int32 and float; another collective and another
 *                              count refused before anything is sent; a collective after it
 *                              still matches on every rank
 *   schedule_probe refuse FILE CODE TEXT
 *                              loading FILE fails with status CODE (a number) and a
 *                              message holding TEXT, which is printed
 *
 * Exit 0 when every check holds; otherwise 1, with one line per failed check on stderr. */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_ = -1, failed_ = 0;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "schedule_probe: rank %d: ", rank_); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
            failed_ = 1;                                         \
        }                                                        \
    } while (0)

static char* read_all(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* buf = malloc((size_t)n + 1);
    *len      = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

/* Block r of a vector of `count` elements cut in `n` (loom.h: the first count % n one longer). */
static size_t block_offset(size_t count, int n, int r) {
    size_t q = count / (size_t)n, extra = count % (size_t)n;
    return (size_t)r * q + ((size_t)r < extra ? (size_t)r : extra);
}

/* Fills the input, runs, checks the output. The value of element i of rank r's input is
 * r + i (allreduce: the sum over ranks is n·i + n(n-1)/2) or its global index (allgather:
 * the gathered vector is 0, 1, 2 …). Exact in int32 and float for these sizes. */
static void run_checked(loom_comm_t comm, loom_schedule_t s, const loom_schedule_info_t* info,
                        loom_dtype_t dtype, int in_place, int nonblocking, const char* what) {
    int n        = loom_comm_size(comm);
    size_t out_n = info->output_count, in_n = info->input_count;
    double* in  = calloc(in_n + 1, sizeof(double));
    double* out = calloc(out_n + 1, sizeof(double));
    size_t base = info->collective == LOOM_ALLGATHER ? block_offset(info->count, n, rank_) : 0;
    size_t esz  = loom_dtype_size(dtype);
    char* inb   = (char*)in;
    char* outb  = (char*)out;
    for (size_t i = 0; i < in_n; ++i) {
        double v = info->collective == LOOM_ALLGATHER ? (double)(base + i) : (double)(rank_ + i);
        if (dtype == LOOM_INT32) {
            int x = (int)v;
            memcpy(inb + i * esz, &x, esz);
        } else {
            float x = (float)v;
            memcpy(inb + i * esz, &x, esz);
        }
    }
    const void* send = in;
    if (in_place) {
        /* allgather in place: sendbuf = recvbuf + this rank's block offset. */
        memcpy(outb + base * esz, inb, in_n * esz);
        send = outb + base * esz;
    }
    loom_status_t st;
    if (nonblocking) {
        loom_request_t req = NULL;
        st = loom_schedule_run(s, info->collective, send, out, info->count, dtype, LOOM_SUM, NULL,
                               &req);
        if (st == LOOM_SUCCESS) {
            st = loom_wait(req);
            loom_request_free(req);
        }
    } else {
        st = loom_schedule_run(s, info->collective, send, out, info->count, dtype, LOOM_SUM, NULL,
                               NULL);
    }
    CHECK(st == LOOM_SUCCESS, "%s: loom_schedule_run: %s", what, loom_last_error_message());
    size_t wrong = 0;
    for (size_t i = 0; st == LOOM_SUCCESS && i < out_n; ++i) {
        double expect = info->collective == LOOM_ALLGATHER
                            ? (double)i
                            : (double)n * (double)i + (double)n * (n - 1) / 2.0;
        double got;
        if (dtype == LOOM_INT32) {
            int x;
            memcpy(&x, outb + i * esz, esz);
            got = x;
        } else {
            float x;
            memcpy(&x, outb + i * esz, esz);
            got = x;
        }
        wrong += got != expect;
    }
    CHECK(wrong == 0, "%s: %zu of %zu elements wrong", what, wrong, out_n);
    free(in);
    free(out);
}

static int run_mode(loom_comm_t comm, const char* path) {
    loom_schedule_t from_file = NULL, from_text = NULL;
    loom_status_t st = loom_schedule_load_file(comm, path, &from_file);
    CHECK(st == LOOM_SUCCESS, "loom_schedule_load_file: %s", loom_last_error_message());
    size_t len = 0;
    char* text = read_all(path, &len);
    CHECK(text != NULL, "cannot read %s", path);
    st = loom_schedule_load(comm, text, len, &from_text);
    CHECK(st == LOOM_SUCCESS, "loom_schedule_load: %s", loom_last_error_message());
    free(text);
    if (failed_) {
        return 1;
    }
    loom_schedule_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(loom_schedule_query(from_file, &info) == LOOM_SUCCESS, "loom_schedule_query");
    CHECK(info.ranks == loom_comm_size(comm), "query: ranks %d", info.ranks);
    int cases = 0;
    for (int k = 0; k < 2; ++k) {
        loom_schedule_t s = k == 0 ? from_file : from_text;
        run_checked(comm, s, &info, LOOM_INT32, 0, k, k ? "text, non-blocking" : "file, blocking");
        run_checked(comm, s, &info, LOOM_FLOAT32, 1, k, k ? "text, in place" : "file, in place");
        cases += 2;
    }
    /* Refused before anything is sent (so no rank is left waiting): another count, another
     * collective, an algorithm in the attribute. */
    int buf[4] = {0};
    st         = loom_schedule_run(from_file, info.collective, buf, buf, info.count + 1, LOOM_INT32,
                                   LOOM_SUM, NULL, NULL);
    CHECK(st == LOOM_ERR_INVALID_ARGUMENT &&
              strstr(loom_last_error_message(), "does not match the schedule's count"),
          "another count: %s", loom_last_error_message());
    loom_collective_t other = info.collective == LOOM_ALLREDUCE ? LOOM_ALLGATHER : LOOM_ALLREDUCE;
    st =
        loom_schedule_run(from_file, other, buf, buf, info.count, LOOM_INT32, LOOM_SUM, NULL, NULL);
    CHECK(st == LOOM_ERR_INVALID_ARGUMENT &&
              strstr(loom_last_error_message(), "the schedule computes"),
          "another collective: %s", loom_last_error_message());
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.algorithm = "ring";
    st = loom_schedule_run(from_file, info.collective, buf, buf, info.count, LOOM_INT32, LOOM_SUM,
                           &attr, NULL);
    CHECK(st == LOOM_ERR_INVALID_ARGUMENT, "an algorithm in the attribute: %s",
          loom_last_error_message());
    cases += 3;
    /* The refusals took no sequence number: a collective after them matches everywhere. */
    int one = 1, sum = 0;
    st = loom_allreduce(comm, &one, &sum, 1, LOOM_INT32, LOOM_SUM, NULL, NULL);
    CHECK(st == LOOM_SUCCESS && sum == loom_comm_size(comm), "allreduce after: %s",
          loom_last_error_message());
    ++cases;
    loom_schedule_free(from_file);
    loom_schedule_free(from_text);
    if (!failed_) {
        printf("rank %d: %d user-schedule cases ok (%s)\n", rank_, cases, path);
    }
    return failed_;
}

static int refuse_mode(loom_comm_t comm, const char* path, int code, const char* text) {
    loom_schedule_t s = NULL;
    loom_status_t st  = loom_schedule_load_file(comm, path, &s);
    const char* msg   = loom_last_error_message();
    CHECK(st == (loom_status_t)code, "load: status %d (%s), expected %d: %s", (int)st,
          loom_status_string(st), code, msg);
    CHECK(s == NULL, "a refused schedule has no handle");
    CHECK(strstr(msg, text) != NULL, "message '%s' lacks '%s'", msg, text);
    if (!failed_ && rank_ == 0) {
        printf("refused: %s\n", msg);
    }
    return failed_;
}

int main(int argc, char** argv) {
    if (argc < 3 || (strcmp(argv[1], "refuse") == 0 && argc < 5)) {
        fprintf(stderr, "usage: schedule_probe run FILE | refuse FILE CODE TEXT\n");
        return 2;
    }
    loom_comm_t comm = NULL;
    if (loom_comm_create(NULL, &comm) != LOOM_SUCCESS) {
        fprintf(stderr, "schedule_probe: loom_comm_create: %s\n", loom_last_error_message());
        return 1;
    }
    rank_  = loom_comm_rank(comm);
    int rc = strcmp(argv[1], "run") == 0 ? run_mode(comm, argv[2])
                                         : refuse_mode(comm, argv[2], atoi(argv[3]), argv[4]);
    loom_comm_destroy(comm);
    return rc;
}
