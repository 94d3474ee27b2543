// The reference's PRNG: JAX's threefry2x32 in its default "partitionable" mode, plus the
// jax.random samplers Craftax uses, reproduced bit for bit (jax 0.10, CPU).
//
// A key is two uint32 words. In partitionable mode every derived stream is the threefry hash of
// the key with the 64-bit counter (hi, lo) = (0, i):
//   split(key, n)[i]   = threefry(key, 0, i)              (both output words form the new key)
//   random_bits(key)[i] = w0 ^ w1 of threefry(key, 0, i)  (i is the flat index into the shape)
#pragma once
#include "common.h"

typedef struct {
    uint32_t w[2];
} Key;

// Threefry-2x32 with 20 rounds, as jax's _threefry2x32_lowering, written once for one key
// (uint32_t words) and for KEY_LANES keys at once (LaneWord vectors): the expressions are the same
// elementwise. Unrolled: hashing is most of the step's cost.
#define ROTL32(x, d) (((x) << (d)) | ((x) >> (32 - (d))))
#define THREEFRY_ROUND(rotation) \
    x0 += x1;                    \
    x1 = ROTL32(x1, rotation);   \
    x1 ^= x0;
#define THREEFRY_EVEN_ROUNDS THREEFRY_ROUND(13) THREEFRY_ROUND(15) THREEFRY_ROUND(26) THREEFRY_ROUND(6)
#define THREEFRY_ODD_ROUNDS THREEFRY_ROUND(17) THREEFRY_ROUND(29) THREEFRY_ROUND(16) THREEFRY_ROUND(24)
#define THREEFRY_BODY(k0, k1, k2, x0, x1) \
    x0 += k0;                             \
    x1 += k1;                             \
    THREEFRY_EVEN_ROUNDS                  \
    x0 += k1;                             \
    x1 += k2 + 1u;                        \
    THREEFRY_ODD_ROUNDS                   \
    x0 += k2;                             \
    x1 += k0 + 2u;                        \
    THREEFRY_EVEN_ROUNDS                  \
    x0 += k0;                             \
    x1 += k1 + 3u;                        \
    THREEFRY_ODD_ROUNDS                   \
    x0 += k1;                             \
    x1 += k2 + 4u;                        \
    THREEFRY_EVEN_ROUNDS                  \
    x0 += k2;                             \
    x1 += k0 + 5u;

CRAFTAX_HOT_FN void threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t* out0,
                                 uint32_t* out1) {
    uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
    THREEFRY_BODY(k0, k1, k2, x0, x1)
    *out0 = x0;
    *out1 = x1;
}

// jax.random.PRNGKey(seed): the high and low words of the seed (jax without x64 accepts seeds
// below 2^31, whose high word is 0).
CRAFTAX_FN Key key_from_seed(uint64_t seed) {
    Key key;
    key.w[0] = (uint32_t)(seed >> 32);
    key.w[1] = (uint32_t)(seed & 0xFFFFFFFFu);
    return key;
}

// The i-th key of jax.random.split(key, n) (independent of n).
CRAFTAX_HOT_FN Key key_split_at(Key key, uint32_t i) {
    Key out;
    threefry2x32(key.w[0], key.w[1], 0u, i, &out.w[0], &out.w[1]);
    return out;
}

// rng, sub = jax.random.split(rng): the common two-way split, in place.
CRAFTAX_HOT_FN Key key_split2(Key* rng) {
    Key sub = key_split_at(*rng, 1);
    *rng = key_split_at(*rng, 0);
    return sub;
}

// jax.random.fold_in(key, data).
CRAFTAX_HOT_FN Key key_fold_in(Key key, uint32_t data) { return key_split_at(key, data); }

// Element i of jax.random.bits(key, shape) for 32-bit output.
CRAFTAX_HOT_FN uint32_t random_bits_at(Key key, uint32_t i) {
    uint32_t a, b;
    threefry2x32(key.w[0], key.w[1], 0u, i, &a, &b);
    return a ^ b;
}

// jax.random.uniform's float in [0, 1) from 32 random bits: 23 of them as the mantissa.
CRAFTAX_HOT_FN float uniform_from_bits(uint32_t bits) {
    uint32_t mantissa = (bits >> 9) | 0x3F800000u;
    float f;
    memcpy(&f, &mantissa, sizeof(f));
    return f - 1.0f;
}

// Element i of jax.random.uniform(key, shape) in [0, 1).
CRAFTAX_HOT_FN float uniform_at(Key key, uint32_t i) { return uniform_from_bits(random_bits_at(key, i)); }

CRAFTAX_HOT_FN float uniform(Key key) { return uniform_at(key, 0); }

// Element i of jax.random.randint(key, shape, minval, maxval) (int32): two words of random bits
// reduced modulo the span with jax's multiplier trick, in uint32 arithmetic.
// randint's span and the multiplier of its high word: 2^32 mod span.
CRAFTAX_HOT_FN uint32_t randint_span(int32_t minval, int32_t maxval) {
    return maxval <= minval ? 1u : (uint32_t)(maxval - minval);
}

CRAFTAX_HOT_FN uint32_t randint_multiplier(uint32_t span) {
    uint32_t multiplier = 65536u % span;
    return (multiplier * multiplier) % span;
}

CRAFTAX_HOT_FN int32_t randint_at(Key key, uint32_t i, int32_t minval, int32_t maxval) {
    uint32_t span = randint_span(minval, maxval);
    uint32_t multiplier = randint_multiplier(span);
    uint32_t low = random_bits_at(key_split_at(key, 1), i);
    // For spans dividing 2^16 (powers of two) the high word's term vanishes: skip its hashes.
    if (multiplier == 0) return minval + (int32_t)(low % span);
    uint32_t high = random_bits_at(key_split_at(key, 0), i);
    uint32_t offset = (high % span) * multiplier + (low % span);
    offset %= span;
    return minval + (int32_t)offset;
}

// Inclusive prefix sums in float32 in the order XLA's CPU backend adds them for jnp.cumsum: its
// reduce-window rewriter scans blocks of 16 sequentially, then adds the exclusive prefix of the
// block totals, computed the same way recursively. `scratch` holds at least n / 7 + 32 floats.
CRAFTAX_FN void xla_cumsum(const float* x, float* out, int n, float* scratch) {
    if (n <= 16) {
        float acc = 0.0f;
        for (int i = 0; i < n; i++) {
            acc += x[i];
            out[i] = acc;
        }
        return;
    }
    int blocks = (n + 15) / 16;
    float* totals = scratch;
    float* totals_prefix = scratch + blocks;
    for (int b = 0; b < blocks; b++) {
        float acc = 0.0f;
        for (int j = 0; j < 16; j++) {
            int i = b * 16 + j;
            acc += i < n ? x[i] : 0.0f;
            if (i < n) out[i] = acc;
        }
        totals[b] = acc;
    }
    xla_cumsum(totals, totals_prefix, blocks, totals_prefix + blocks);
    for (int b = 1; b < blocks; b++) {
        float before = totals_prefix[b - 1];
        for (int j = 0; j < 16 && b * 16 + j < n; j++) out[b * 16 + j] += before;
    }
}

// x <= y in the total order jax sorts floats by (NaN above everything, NaN equal to NaN).
CRAFTAX_FN int sort_le(float x, float y) {
    if (y != y) return 1;
    if (x != x) return 0;
    return x <= y;
}

// jnp.searchsorted(sorted, query, side="left") with jax's default "scan" method: a fixed number
// of binary-search halvings, which matters only when NaNs are involved.
CRAFTAX_FN int searchsorted_left(const float* sorted, int n, float query) {
    int levels = 0;
    while ((1 << levels) < n + 1) levels++;
    int low = 0, high = n;
    for (int level = 0; level < levels; level++) {
        int mid = (int)(((unsigned)low + (unsigned)high) / 2u);
        if (sort_le(query, sorted[mid])) {
            high = mid;
        } else {
            low = mid;
        }
    }
    return high;
}

// jax.random.choice(key, n, p=weights) for one draw, given the weights' prefix sums (xla_cumsum)
// and the draw's uniform(key).
CRAFTAX_FN int choice_cumulative_by(float uniform_draw, const float* cumulative, int n) {
    float r = cumulative[n - 1] * (1.0f - uniform_draw);
    return searchsorted_left(cumulative, n, r);
}

CRAFTAX_FN int choice_cumulative(Key key, const float* cumulative, int n) {
    return choice_cumulative_by(uniform(key), cumulative, n);
}

// jax.random.choice(key, n, p=weights) for one draw over at most 16 weights, given uniform(key).
CRAFTAX_FN int choice_small_by(float uniform_draw, const float* weights, int n) {
    float cumulative[16];
    xla_cumsum(weights, cumulative, n, 0);
    return choice_cumulative_by(uniform_draw, cumulative, n);
}

CRAFTAX_FN int choice_small(Key key, const float* weights, int n) { return choice_small_by(uniform(key), weights, n); }

// jax.random.permutation(key, n) for n <= 16 (one sorting round, as jax uses for small n): a
// stable sort of 0..n-1 by 32-bit random keys.
CRAFTAX_FN void permutation(Key key, int n, int32_t* out) {
    Key sub = key_split_at(key, 1);
    uint32_t sort_keys[16];
    for (int i = 0; i < n; i++) {
        sort_keys[i] = random_bits_at(sub, (uint32_t)i);
        out[i] = i;
    }
    for (int i = 1; i < n; i++) {
        uint32_t k = sort_keys[i];
        int32_t v = out[i];
        int j = i - 1;
        while (j >= 0 && sort_keys[j] > k) {
            sort_keys[j + 1] = sort_keys[j];
            out[j + 1] = out[j];
            j--;
        }
        sort_keys[j + 1] = k;
        out[j + 1] = v;
    }
}

// KEY_LANES keys hashed side by side, one SIMD lane each (GCC vector extensions; a single lane
// under nvcc, where each thread is one env). A step's keys form a chain within an env, so the
// vecenv draws a batch of envs' random numbers at once (draws.h). Sixteen lanes are four SSE2,
// two AVX2 or one AVX-512 register per word: enough independent hashes in flight to hide the
// latency of each round.
#ifdef __CUDACC__
#define KEY_LANES 1
typedef uint32_t LaneWord;
#define LANE(v, l) (v)
#else
#define KEY_LANES 16
typedef uint32_t LaneWord __attribute__((vector_size(4 * KEY_LANES)));
#define LANE(v, l) ((v)[l])
#endif

typedef struct {
    LaneWord w0, w1;
} KeyLanes;

CRAFTAX_HOT_FN Key lane_key(const KeyLanes* keys, int lane) {
    Key key = {{LANE(keys->w0, lane), LANE(keys->w1, lane)}};
    return key;
}

CRAFTAX_HOT_FN void set_lane_key(KeyLanes* keys, int lane, Key key) {
    LANE(keys->w0, lane) = key.w[0];
    LANE(keys->w1, lane) = key.w[1];
}

// key_split_at in every lane: *out = split(*key)[i] (out may be key).
CRAFTAX_HOT_FN void lanes_split_at(const KeyLanes* key, uint32_t i, KeyLanes* out) {
    LaneWord k0 = key->w0, k1 = key->w1;
    LaneWord k2 = k0 ^ k1 ^ 0x1BD11BDAu;
    LaneWord x0 = {0};
    LaneWord x1 = x0 + i;
    THREEFRY_BODY(k0, k1, k2, x0, x1)
    out->w0 = x0;
    out->w1 = x1;
}

// random_bits_at(key, 0) in every lane: the hash of split_at(key, 0), its words xored.
CRAFTAX_HOT_FN void lanes_bits(const KeyLanes* key, LaneWord* out) {
    KeyLanes hash;
    lanes_split_at(key, 0, &hash);
    *out = hash.w0 ^ hash.w1;
}

// randint_at(key, 0, minval, maxval) - minval in every lane.
CRAFTAX_HOT_FN void lanes_randint_offset(const KeyLanes* key, int32_t minval, int32_t maxval, LaneWord* out) {
    uint32_t span = randint_span(minval, maxval);
    uint32_t multiplier = randint_multiplier(span);
    KeyLanes half;
    LaneWord low, high;
    lanes_split_at(key, 1, &half);
    lanes_bits(&half, &low);
    if (multiplier == 0) {
        *out = low % span;
        return;
    }
    lanes_split_at(key, 0, &half);
    lanes_bits(&half, &high);
    *out = ((high % span) * multiplier + low % span) % span;
}
