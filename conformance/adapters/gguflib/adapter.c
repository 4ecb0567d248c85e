/* gguflib adapter: reads a GGUF file with antirez's gguflib (gguf-tools),
 * the way `gguf-tools show` does, then reads every tensor's bytes.
 *
 *   gguflib-adapter FILE     exit 0 accepted, 1 rejected
 *   gguflib-adapter --version
 *
 * gguflib opens files O_RDWR and maps them MAP_SHARED with PROT_WRITE, so
 * the adapter copies FILE to a temporary file and reads the copy: the
 * corpus is never opened for writing. gguflib checks the magic and the
 * size of the header (gguf_open returns NULL: rejected) and stops the
 * tensor walk at a type id it does not know (rejected); it checks no
 * length, count or offset, so a hostile file is read out of bounds (a
 * signal, which the matrix runner records as a crash) and an assert on
 * n_dims aborts.
 *
 * Built by build.sh against a gguf-tools checkout (never committed). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguflib.h"

#define GGUF_TOOLS_COMMIT "8fa6eb6"

static int copy_to_temp(const char *src, char *tmpl) {
    FILE *in = fopen(src, "rb");
    if (!in) return -1;
    int fd = mkstemp(tmpl);
    if (fd == -1) { fclose(in); return -1; }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (write(fd, buf, n) != (ssize_t)n) { fclose(in); close(fd); return -1; }
    }
    fclose(in);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("gguflib (antirez/gguf-tools %s)\n", GGUF_TOOLS_COMMIT);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: gguflib-adapter FILE | --version\n");
        return 2;
    }
    char tmp[] = "/tmp/gguflib-adapter-XXXXXX";
    if (copy_to_temp(argv[1], tmp) != 0) {
        fprintf(stderr, "gguflib: cannot copy %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    gguf_ctx *ctx = gguf_open(tmp);
    unlink(tmp); /* the mapping keeps the data */
    if (ctx == NULL) {
        fprintf(stderr, "gguflib: gguf_open failed: %s\n", strerror(errno));
        return 1;
    }
    /* gguf_print_value writes to stdout: the matrix runner keeps only an
     * excerpt, and the values are walked in full (arrays included). */
    if (freopen("/dev/null", "w", stdout) == NULL) return 2;
    gguf_key key;
    while (gguf_get_key(ctx, &key)) {
        gguf_print_value(ctx, key.type, key.val, 1);
    }
    gguf_tensor tensor;
    uint64_t sum = 0, seen = 0;
    uint64_t declared = ctx->header->tensor_count;
    while (gguf_get_tensor(ctx, &tensor)) {
        seen++;
        for (uint64_t i = 0; i < tensor.bsize; i++) sum += tensor.weights_data[i];
    }
    if (seen != declared) {
        fprintf(stderr, "gguflib: tensor walk stopped after %llu of %llu tensors (unknown type id)\n",
                (unsigned long long)seen, (unsigned long long)declared);
        gguf_close(ctx);
        return 1;
    }
    fprintf(stderr, "gguflib: %llu keys, %llu tensors, data checksum %llu\n",
            (unsigned long long)ctx->header->metadata_kv_count, (unsigned long long)seen,
            (unsigned long long)sum);
    gguf_close(ctx);
    return 0;
}
