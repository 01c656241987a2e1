/* The least time a call of predict_proba can spend rebuilding a lean forest's boxes.

   A lean tree keeps no box below its stored ones, so a call rebuilds each box a row needs
   from the training points under it (mondrian.core._batch_walk, mf_grow_box). On usps
   (7291 points of 256 features, 100 trees, 2007 test rows) an instrumented build counted
   723,626 point rows read per call, 99% of 100 x 7291: every tree reads every point once,
   in groups of 2.85 points on average. This program times that read with nothing else
   around it: T trees, each visiting the n rows of a shared n x D store in its own random
   order, min/max into a box reset every G rows (the kernel of mf_grow_box, prefetching two
   rows ahead). CPU time of the thread, the shuffles subtracted.

   Build and run from the repository root (gcc, x86-64 with AVX-512):
       gcc -O3 -o /tmp/grow_floor benchmarks/floor/grow_floor.c
       /tmp/grow_floor 256 3 && /tmp/grow_floor 256 64
   Arguments: D (features), G (rows per box); n = 7291 and T = 100 as usps. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

__attribute__((target("avx512f")))
static void grow(const double *X, long D, const long *idx, long n, double *lo) {
    double *hi = lo + D;
    for (long k = 0; k < n; k++) {
        const double *row = X + idx[k] * D;
        if (k + 2 < n) {
            const char *ahead = (const char *)(X + idx[k + 2] * D);
            for (long d = 0; d < D; d += 8) __builtin_prefetch(ahead + d * sizeof(double));
        }
        for (long d = 0; d < D; d++) {
            double v = row[d];
            lo[d] = v < lo[d] ? v : lo[d];
            hi[d] = v > hi[d] ? v : hi[d];
        }
    }
}

static void shuffle(long *order, long n, unsigned seed) {
    srand(seed);
    for (long i = 0; i < n; i++) order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        long j = rand() % (i + 1), s = order[i];
        order[i] = order[j];
        order[j] = s;
    }
}

int main(int argc, char **argv) {
    long n = 7291, T = 100;
    long D = argc > 1 ? atol(argv[1]) : 256, G = argc > 2 ? atol(argv[2]) : 3;
    double *X = aligned_alloc(64, ((n * D * sizeof(double) + 63) / 64) * 64);
    double *box = aligned_alloc(64, ((2 * D * sizeof(double) + 63) / 64) * 64);
    long *order = malloc(n * sizeof(long));
    double sink = 0.0;
    if (X == NULL || box == NULL || order == NULL || D < 1 || G < 1) return 2;
    for (long i = 0; i < n * D; i++) X[i] = rand() / (double)RAND_MAX;
    for (int rep = 0; rep < 5; rep++) {
        double start = cpu_seconds();
        for (long t = 0; t < T; t++) {
            shuffle(order, n, (unsigned)t);
            for (long s = 0; s < n; s += G) {
                for (long d = 0; d < D; d++) {
                    box[d] = 1e300;
                    box[D + d] = -1e300;
                }
                grow(X, D, order + s, s + G < n ? G : n - s, box);
                sink += box[0];
            }
        }
        double grown = cpu_seconds() - start;
        start = cpu_seconds();
        for (long t = 0; t < T; t++) shuffle(order, n, (unsigned)t);
        double seconds = grown - (cpu_seconds() - start);
        double gb = (double)T * n * D * sizeof(double) / 1e9;
        printf("D=%ld G=%ld: %.4f s for %.2f GB of points (%.1f GB/s)\n", D, G, seconds, gb,
               gb / seconds);
    }
    return sink == 42.0;
}
