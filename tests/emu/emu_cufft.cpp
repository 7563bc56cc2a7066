/*
 * emu_cufft.cpp - the cuFFT stand-in of the CPU emulation (tests/emu/): plans
 * remember their geometry; transforms are separable mixed-radix FFTs in
 * double precision over the logical extents, reading and writing the embedded
 * layouts as cuFFT does (unit strides), unnormalised like cuFFT. In-place
 * transforms work since every batch is read in full before it is written.
 */
#include "cufft.h"

#include <cmath>
#include <complex>
#include <map>
#include <mutex>
#include <vector>

namespace {
struct emu_plan {
    int rank, n[3], inembed[3], onembed[3], idist, odist, batch;
    cufftType type;
};
std::map<int, emu_plan> g_plans;
std::mutex g_lock;
int g_next = 1;

typedef std::complex<double> cx;

/* out[k] = sum_j in[j * stride] * exp(sign * 2 pi i j k / n), k < n: mixed
 * radix (decimation in time by the smallest prime factor), a direct sum for
 * prime lengths. O(n * sum of n's prime factors). */
void fft_line(const cx *in, long long stride, cx *out, int n, int sign)
{
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int p = 2;
    while (p * p <= n && n % p != 0)
        p++;
    if (n % p != 0)
        p = n; /* prime */
    const int m = n / p;
    std::vector<cx> sub((size_t)n);
    if (m == 1) {
        for (int r = 0; r < p; r++)
            sub[r] = in[r * stride];
    } else {
        for (int r = 0; r < p; r++)
            fft_line(in + r * stride, stride * p, &sub[(size_t)r * m], m, sign);
    }
    for (int k = 0; k < n; k++) {
        const int k1 = k % m;
        cx s = 0;
        for (int r = 0; r < p; r++)
            s += sub[(size_t)r * m + k1] *
                 std::polar(1.0, sign * 2.0 * M_PI * (double)((long long)r * k % n) / n);
        out[k] = s;
    }
}

/* In-place DFT of every line along axis a of a dense array of extents n. */
void dft_axis(std::vector<cx> &v, const int *n, int rank, int a, int sign)
{
    long long inner = 1, outer = 1;
    for (int i = a + 1; i < rank; i++)
        inner *= n[i];
    for (int i = 0; i < a; i++)
        outer *= n[i];
    const int len = n[a];
    std::vector<cx> res(len);
    for (long long o = 0; o < outer; o++)
        for (long long in = 0; in < inner; in++) {
            const long long base = o * len * inner + in;
            fft_line(&v[base], inner, res.data(), len, sign);
            for (int k = 0; k < len; k++)
                v[base + k * inner] = res[k];
        }
}

long long dense_count(const emu_plan &p)
{
    long long c = 1;
    for (int i = 0; i < p.rank; i++)
        c *= p.n[i];
    return c;
}

/* Offset of logical index idx[] in an embedded layout. */
long long embedded(const int *idx, const int *embed, int rank)
{
    long long off = 0;
    for (int i = 0; i < rank; i++)
        off = off * embed[i] + idx[i];
    return off;
}

void unravel(long long e, const int *n, int rank, int *idx)
{
    for (int i = rank - 1; i >= 0; i--) {
        idx[i] = (int)(e % n[i]);
        e /= n[i];
    }
}

template <typename R, typename C>
cufftResult forward(cufftHandle h, R *in, C *out)
{
    emu_plan p;
    {
        std::lock_guard<std::mutex> l(g_lock);
        if (!g_plans.count(h))
            return CUFFT_INVALID_PLAN;
        p = g_plans[h];
    }
    const long long count = dense_count(p);
    const int last = p.rank - 1, half = p.n[last] / 2 + 1;
    for (int b = 0; b < p.batch; b++) {
        std::vector<cx> v(count);
        int idx[3];
        for (long long e = 0; e < count; e++) {
            unravel(e, p.n, p.rank, idx);
            v[e] = (double)in[(long long)b * p.idist + embedded(idx, p.inembed, p.rank)];
        }
        for (int a = 0; a < p.rank; a++)
            dft_axis(v, p.n, p.rank, a, -1);
        for (long long e = 0; e < count; e++) {
            unravel(e, p.n, p.rank, idx);
            if (idx[last] >= half)
                continue;
            C &o = out[(long long)b * p.odist + embedded(idx, p.onembed, p.rank)];
            o.x = v[e].real();
            o.y = v[e].imag();
        }
    }
    return CUFFT_SUCCESS;
}

template <typename C, typename R>
cufftResult inverse(cufftHandle h, C *in, R *out)
{
    emu_plan p;
    {
        std::lock_guard<std::mutex> l(g_lock);
        if (!g_plans.count(h))
            return CUFFT_INVALID_PLAN;
        p = g_plans[h];
    }
    const long long count = dense_count(p);
    const int last = p.rank - 1, half = p.n[last] / 2 + 1;
    for (int b = 0; b < p.batch; b++) {
        std::vector<cx> v(count);
        int idx[3], mir[3];
        for (long long e = 0; e < count; e++) {
            unravel(e, p.n, p.rank, idx);
            bool conj = idx[last] >= half; /* Hermitian: X[k] = conj(X[-k]) */
            for (int i = 0; i < p.rank; i++)
                mir[i] = conj ? (p.n[i] - idx[i]) % p.n[i] : idx[i];
            const C &c = in[(long long)b * p.idist + embedded(mir, p.inembed, p.rank)];
            v[e] = conj ? cx(c.x, -c.y) : cx(c.x, c.y);
        }
        for (int a = 0; a < p.rank; a++)
            dft_axis(v, p.n, p.rank, a, +1);
        for (long long e = 0; e < count; e++) {
            unravel(e, p.n, p.rank, idx);
            out[(long long)b * p.odist + embedded(idx, p.onembed, p.rank)] = (R)v[e].real();
        }
    }
    return CUFFT_SUCCESS;
}
} // namespace

extern "C" {

cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed, int istride, int idist,
                          int *onembed, int ostride, int odist, cufftType type, int batch)
{
    if (rank < 1 || rank > 3 || istride != 1 || ostride != 1 || batch < 1 || !inembed || !onembed)
        return CUFFT_INVALID_VALUE;
    emu_plan p;
    p.rank = rank, p.idist = idist, p.odist = odist, p.batch = batch, p.type = type;
    for (int i = 0; i < rank; i++) {
        if (n[i] < 1)
            return CUFFT_INVALID_SIZE;
        p.n[i] = n[i], p.inembed[i] = inembed[i], p.onembed[i] = onembed[i];
    }
    std::lock_guard<std::mutex> l(g_lock);
    *plan = g_next++;
    g_plans[*plan] = p;
    return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream)
{
    (void)stream;
    std::lock_guard<std::mutex> l(g_lock);
    return g_plans.count(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

cufftResult cufftDestroy(cufftHandle plan)
{
    std::lock_guard<std::mutex> l(g_lock);
    return g_plans.erase(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

cufftResult cufftExecR2C(cufftHandle h, cufftReal *in, cufftComplex *out)
{
    return forward(h, in, out);
}
cufftResult cufftExecD2Z(cufftHandle h, cufftDoubleReal *in, cufftDoubleComplex *out)
{
    return forward(h, in, out);
}
cufftResult cufftExecC2R(cufftHandle h, cufftComplex *in, cufftReal *out)
{
    return inverse(h, in, out);
}
cufftResult cufftExecZ2D(cufftHandle h, cufftDoubleComplex *in, cufftDoubleReal *out)
{
    return inverse(h, in, out);
}
}
