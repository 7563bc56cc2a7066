/*
 * jit.c - run-time compilation of the generated kernels with NVRTC (see
 * jit.h): NVRTC found with dlopen, a process-wide table of loaded kernels,
 * and the disk cache of compiled cubins (atomic writes, checked reads).
 */
#include "jit.h"
#include "../bytes.h"
#include "gen.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- NVRTC, loaded at first use ------------------------------------------ */

typedef struct cvcu_nvrtc_program *cvcu_nvrtc_prog;
typedef int (*nv_version_fn)(int *, int *);
typedef int (*nv_create_fn)(cvcu_nvrtc_prog *, const char *, const char *, int, const char *const *,
                            const char *const *);
typedef int (*nv_destroy_fn)(cvcu_nvrtc_prog *);
typedef int (*nv_compile_fn)(cvcu_nvrtc_prog, int, const char *const *);
typedef int (*nv_size_fn)(cvcu_nvrtc_prog, size_t *);
typedef int (*nv_get_fn)(cvcu_nvrtc_prog, char *);
typedef int (*nv_add_name_fn)(cvcu_nvrtc_prog, const char *);
typedef int (*nv_lowered_fn)(cvcu_nvrtc_prog, const char *, const char **);
typedef const char *(*nv_errstr_fn)(int);

static struct {
    int ok;
    char why[256];
    nv_version_fn version;
    nv_create_fn create;
    nv_destroy_fn destroy;
    nv_compile_fn compile;
    nv_size_fn cubin_size, log_size;
    nv_get_fn cubin, log;
    nv_add_name_fn add_name;
    nv_lowered_fn lowered;
    nv_errstr_fn errstr;
    int major, minor;
    uint64_t source_hash;
    char cache_dir[1024];
    char defines[256]; /* CONVOLVE_JIT_DEFINES: more NVRTC options (tuning) */
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_SEED 0xcbf29ce484222325ull

static void find_cache_dir(void)
{
    const char *env = getenv("CONVOLVE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    nv.cache_dir[0] = '\0';
    if (env)
        snprintf(nv.cache_dir, sizeof nv.cache_dir, "%s", env);
    else if (xdg && *xdg == '/')
        snprintf(nv.cache_dir, sizeof nv.cache_dir, "%s/convolve", xdg);
    else if (home && *home)
        snprintf(nv.cache_dir, sizeof nv.cache_dir, "%s/.cache/convolve", home);
}

static void *open_nvrtc(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    char path[1200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++) {
        if (!roots[r] || !*roots[r])
            continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            snprintf(path, sizeof path, "%s/lib64/%s", roots[r], names[i]);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
        }
    }
    return NULL;
}

static void load_nvrtc(void)
{
    find_cache_dir();
    const char *defs = getenv("CONVOLVE_JIT_DEFINES");
    snprintf(nv.defines, sizeof nv.defines, "%s", defs ? defs : "");
    nv.source_hash = FNV_SEED;
    for (int i = 0; i < cvk_gen_source_count; i++) {
        nv.source_hash = fnv1a(nv.source_hash, cvk_gen_source_names[i],
                               strlen(cvk_gen_source_names[i]) + 1);
        nv.source_hash = fnv1a(nv.source_hash, cvk_gen_sources[i], strlen(cvk_gen_sources[i]));
    }
    const char *off = getenv("CONVOLVE_JIT");
    if (off && strcmp(off, "0") == 0) {
        snprintf(nv.why, sizeof nv.why, "run-time compilation is turned off (CONVOLVE_JIT=0)");
        return;
    }
    void *h = open_nvrtc();
    if (!h) {
        snprintf(nv.why, sizeof nv.why, "NVRTC (libnvrtc.so) was not found");
        return;
    }
#define NV_SYM(field, type, name)                                    \
    do {                                                             \
        *(void **)&nv.field = dlsym(h, name);                        \
        if (!nv.field) {                                             \
            snprintf(nv.why, sizeof nv.why, "NVRTC lacks %s", name); \
            return;                                                  \
        }                                                            \
    } while (0)
    NV_SYM(version, nv_version_fn, "nvrtcVersion");
    NV_SYM(create, nv_create_fn, "nvrtcCreateProgram");
    NV_SYM(destroy, nv_destroy_fn, "nvrtcDestroyProgram");
    NV_SYM(compile, nv_compile_fn, "nvrtcCompileProgram");
    NV_SYM(cubin_size, nv_size_fn, "nvrtcGetCUBINSize");
    NV_SYM(cubin, nv_get_fn, "nvrtcGetCUBIN");
    NV_SYM(log_size, nv_size_fn, "nvrtcGetProgramLogSize");
    NV_SYM(log, nv_get_fn, "nvrtcGetProgramLog");
    NV_SYM(add_name, nv_add_name_fn, "nvrtcAddNameExpression");
    NV_SYM(lowered, nv_lowered_fn, "nvrtcGetLoweredName");
    NV_SYM(errstr, nv_errstr_fn, "nvrtcGetErrorString");
#undef NV_SYM
    if (nv.version(&nv.major, &nv.minor) != 0) {
        snprintf(nv.why, sizeof nv.why, "nvrtcVersion failed");
        return;
    }
    nv.ok = 1;
}

/* ---- the process table ------------------------------------------------------ */

typedef struct jit_entry {
    struct jit_entry *next;
    char *key;
    cudaLibrary_t lib;
    cudaKernel_t kernel;
} jit_entry;

static jit_entry *g_entries;

static const void *table_find(const char *key)
{
    for (jit_entry *e = g_entries; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return (const void *)e->kernel;
    return NULL;
}

/* Loads cubin, finds `lowered` in it, and adds it to the table. */
static int table_add(const char *key, const void *cubin, const char *lowered, const void **fn,
                     char *msg, size_t n)
{
    jit_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        snprintf(msg, n, "out of memory for a compiled kernel");
        return -1;
    }
    cudaError_t err = cudaLibraryLoadData(&e->lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
    if (err == cudaSuccess) {
        err = cudaLibraryGetKernel(&e->kernel, e->lib, lowered);
        if (err != cudaSuccess)
            (void)cudaLibraryUnload(e->lib);
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(msg, n, "loading a compiled kernel failed: %s", cudaGetErrorString(err));
        free(e->key);
        free(e);
        return -1;
    }
    e->next = g_entries;
    g_entries = e;
    *fn = (const void *)e->kernel;
    return 0;
}

/* ---- the disk cache --------------------------------------------------------- *
 * A file: "CVKJIT01", u32 key length, key, u32 lowered-name length, lowered
 * name, u64 cubin length, cubin, u64 FNV-1a of all before it.              */

static const char k_magic[8] = {'C', 'V', 'K', 'J', 'I', 'T', '0', '1'};

static void cache_path(const char *key, char *path, size_t n)
{
    snprintf(path, n, "%s/%016llx.cvk", nv.cache_dir,
             (unsigned long long)fnv1a(FNV_SEED, key, strlen(key)));
}

/* mkdir -p for the cache folder; 0 on success. */
static int make_dirs(const char *dir)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Reads the entry for key: 0 with *cubin (malloc'd) and lowered name set,
 * or -1 when absent, unreadable, or not a sound entry for this key. */
static int cache_read(const char *key, unsigned char **cubin, char *lowered, size_t lowered_size)
{
    char path[1200];
    cache_path(key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && size < (64L << 20) &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size)) &&
        fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf)
        return -1;
    size_t pos = 0, total = (size_t)size, klen = strlen(key);
    uint32_t u32;
    uint64_t u64, sum;
    int ok = total >= sizeof k_magic + 4 + 8 && memcmp(buf, k_magic, sizeof k_magic) == 0;
    pos = sizeof k_magic;
    if (ok) {
        memcpy(&sum, buf + total - 8, 8);
        ok = fnv1a(FNV_SEED, buf, total - 8) == sum;
        total -= 8;
    }
    if (ok) {
        memcpy(&u32, buf + pos, 4);
        pos += 4;
        ok = u32 == klen && pos + klen <= total && memcmp(buf + pos, key, klen) == 0;
        pos += klen;
    }
    if (ok && pos + 4 <= total) {
        memcpy(&u32, buf + pos, 4);
        pos += 4;
        ok = u32 > 0 && u32 < lowered_size && pos + u32 <= total;
        if (ok) {
            memcpy(lowered, buf + pos, u32);
            lowered[u32] = '\0';
            pos += u32;
        }
    } else {
        ok = 0;
    }
    if (ok && pos + 8 <= total) {
        memcpy(&u64, buf + pos, 8);
        pos += 8;
        ok = u64 > 0 && pos + u64 == total;
    } else {
        ok = 0;
    }
    if (!ok) {
        free(buf);
        return -1;
    }
    memmove(buf, buf + pos, (size_t)u64);
    *cubin = buf;
    return 0;
}

/* Writes the entry atomically (cvi_write_file_atomic: a temporary file
 * beside it, renamed). Best effort: a cache that cannot be written only
 * costs a later compilation. */
static void cache_write(const char *key, const void *cubin, size_t size, const char *lowered)
{
    if (!nv.cache_dir[0] || make_dirs(nv.cache_dir) != 0)
        return;
    char path[1200];
    cache_path(key, path, sizeof path);
    const uint32_t klen = (uint32_t)strlen(key), llen = (uint32_t)strlen(lowered);
    const uint64_t clen = size;
    size_t total = sizeof k_magic + 4 + klen + 4 + llen + 8 + size + 8;
    unsigned char *buf = malloc(total);
    if (buf) {
        size_t pos = 0;
        memcpy(buf + pos, k_magic, sizeof k_magic), pos += sizeof k_magic;
        memcpy(buf + pos, &klen, 4), pos += 4;
        memcpy(buf + pos, key, klen), pos += klen;
        memcpy(buf + pos, &llen, 4), pos += 4;
        memcpy(buf + pos, lowered, llen), pos += llen;
        memcpy(buf + pos, &clen, 8), pos += 8;
        memcpy(buf + pos, cubin, size), pos += size;
        uint64_t sum = fnv1a(FNV_SEED, buf, pos);
        memcpy(buf + pos, &sum, 8);
        (void)cvi_write_file_atomic(NULL, path, buf, total);
    }
    free(buf);
}

/* ---- compiling -------------------------------------------------------------- */

/* Compiles `name` for sm_<major><minor>: *cubin (malloc'd), *size and the
 * lowered name. 0, or -1 with a message. */
static int compile(const char *name, int major, int minor, unsigned char **cubin, size_t *size,
                   char *lowered, size_t lowered_size, char *msg, size_t n)
{
    char src[512], arch[64];
    snprintf(src, sizeof src, "#include \"gen_kernels.cuh\"\n");
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    const char *opts[3 + 16] = {arch, "-std=c++17", "-DCVK_NVRTC=1"};
    int nopts = 3;
    char defs[sizeof nv.defines];
    snprintf(defs, sizeof defs, "%s", nv.defines);
    char *save = NULL;
    for (char *tok = strtok_r(defs, " ", &save); tok && nopts < 3 + 16;
         tok = strtok_r(NULL, " ", &save))
        opts[nopts++] = tok;
    cvcu_nvrtc_prog prog = NULL;
    int r = nv.create(&prog, src, "cvk_gen.cu", cvk_gen_source_count, cvk_gen_sources,
                      cvk_gen_source_names);
    if (r == 0)
        r = nv.add_name(prog, name);
    int rc = r == 0 ? nv.compile(prog, nopts, opts) : r;
    if (rc != 0) {
        size_t ls = 0;
        char log[600] = "";
        if (prog && nv.log_size(prog, &ls) == 0 && ls > 1) {
            char *full = malloc(ls);
            if (full && nv.log(prog, full) == 0)
                snprintf(log, sizeof log, "%s", full);
            free(full);
        }
        snprintf(msg, n, "NVRTC could not compile %.120s: %s%s%.300s", name, nv.errstr(rc),
                 *log ? ": " : "", log);
        if (prog)
            nv.destroy(&prog);
        return -1;
    }
    const char *low = NULL;
    if (nv.lowered(prog, name, &low) != 0 || !low || strlen(low) >= lowered_size ||
        nv.cubin_size(prog, size) != 0 || !(*cubin = malloc(*size)) ||
        nv.cubin(prog, (char *)*cubin) != 0) {
        snprintf(msg, n, "NVRTC gave no cubin for %.200s", name);
        nv.destroy(&prog);
        return -1;
    }
    snprintf(lowered, lowered_size, "%s", low);
    nv.destroy(&prog);
    return 0;
}

int cvcu_jit_kernel(const char *name, int major, int minor, const void **fn, char *msg,
                    size_t msg_size)
{
    pthread_once(&nv_once, load_nvrtc);
    char key[1024];
    snprintf(key, sizeof key, "cvkjit1|src=%016llx|nvrtc=%d.%d|sm_%d%d|%s|%s",
             (unsigned long long)nv.source_hash, nv.major, nv.minor, major, minor, nv.defines,
             name);
    pthread_mutex_lock(&g_lock);
    int rc = -1;
    *fn = table_find(key);
    if (*fn) {
        rc = 0;
        goto done;
    }
    unsigned char *cubin = NULL;
    size_t size = 0;
    char lowered[512];
    if (nv.cache_dir[0] && cache_read(key, &cubin, lowered, sizeof lowered) == 0) {
        if (table_add(key, cubin, lowered, fn, msg, msg_size) == 0) {
            free(cubin);
            rc = 0;
            goto done;
        }
        free(cubin); /* a sound file the driver refuses: compile again */
        cubin = NULL;
    }
    if (!nv.ok) {
        snprintf(msg, msg_size, "%s", nv.why);
        goto done;
    }
    if (compile(name, major, minor, &cubin, &size, lowered, sizeof lowered, msg, msg_size) != 0)
        goto done;
    if (table_add(key, cubin, lowered, fn, msg, msg_size) == 0) {
        cache_write(key, cubin, size, lowered);
        rc = 0;
    }
    free(cubin);
done:
    pthread_mutex_unlock(&g_lock);
    return rc;
}
