/* LSTM: ADBench's lstm_objective — an l-layer LSTM predicting the next of c characters
 * (one-hot over b symbols), loss = mean negative log-likelihood.  The state is updated
 * in place every time step (the caching stress of this kernel).
 * Active inputs x = [main_params (2*l*4*b) | extra_params (3*b)].  Sizes: l c [b=14].
 */
#define KERNEL_NAME "lstm"
#define BENCH_SCALAR
#include "bench.h"

static int L, C, B;
static double *STATE0;   /* 2*l*b initial hidden/cell state */
static double *SEQ;      /* c*b one-hot sequence */

static real sigmoid(real v) { return 1.0 / (1.0 + exp(-v)); }

static void lstm_model(int h, const real *weight, const real *bias, real *hidden, real *cell,
                       const real *input) {
    for (int i = 0; i < h; i++) {
        real forget = sigmoid(input[i] * weight[i] + bias[i]);
        real ingate = sigmoid(hidden[i] * weight[h + i] + bias[h + i]);
        real outgate = sigmoid(input[i] * weight[2 * h + i] + bias[2 * h + i]);
        real change = tanh(hidden[i] * weight[3 * h + i] + bias[3 * h + i]);
        cell[i] = cell[i] * forget + ingate * change;
        hidden[i] = outgate * tanh(cell[i]);
    }
}

static void lstm_predict(int l, int b, const real *w, const real *w2, real *s, const real *x,
                         real *x2) {
    for (int i = 0; i < b; i++) x2[i] = x[i] * w2[i];
    const real *xp = x2;
    for (int i = 0; i < l; i++) {
        lstm_model(b, w + i * 8 * b, w + i * 8 * b + 4 * b, s + i * 2 * b, s + i * 2 * b + b, xp);
        xp = s + i * 2 * b;
    }
    for (int i = 0; i < b; i++) x2[i] = xp[i] * w2[b + i] + w2[2 * b + i];
}

static real objective(const real *x) {
    const int l = L, c = C, b = B;
    const real *main_params = x, *extra_params = x + 2 * l * 4 * b;
    real *state = ALLOC_REAL(2 * l * b);
    real *ypred = ALLOC_REAL(b);
    real *input = ALLOC_REAL(b);
    for (int i = 0; i < 2 * l * b; i++) state[i] = STATE0[i];
    for (int i = 0; i < b; i++) input[i] = SEQ[i];
    real total = 0.0;
    int count = 0;
    for (int t = 0; t < c - 1; t++) {
        lstm_predict(l, b, main_params, extra_params, state, input, ypred);
        real sumexp = 0.0;
        for (int i = 0; i < b; i++) sumexp = sumexp + exp(ypred[i]);
        real lynorm = log(sumexp);
        const double *goal = SEQ + (t + 1) * b;
        for (int i = 0; i < b; i++) total = total + goal[i] * (ypred[i] - lynorm);
        count += b;
        for (int i = 0; i < b; i++) input[i] = goal[i];
    }
    FREE_REAL(state);
    FREE_REAL(ypred);
    FREE_REAL(input);
    return -total / count;
}

static void setup(const long *sz, int nsz) {
    L = nsz > 0 ? (int)sz[0] : 2;
    C = nsz > 1 ? (int)sz[1] : 1024;
    B = nsz > 2 ? (int)sz[2] : 14;
    bench_n = 2 * L * 4 * B + 3 * B;
    bench_x = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) bench_x[i] = bench_range(-1.0, 1.0);
    STATE0 = ALLOC(double, 2 * L * B);
    for (int i = 0; i < 2 * L * B; i++) STATE0[i] = bench_range(-1.0, 1.0);
    SEQ = ALLOC(double, (long)C * B);
    for (long t = 0; t < C; t++) {
        long hot = bench_index(B);
        for (int i = 0; i < B; i++) SEQ[t * B + i] = i == hot ? 1.0 : 0.0;
    }
    static char buf[128];
    snprintf(buf, sizeof buf, "\"l\": %d, \"c\": %d, \"b\": %d", L, C, B);
    bench_sizes(buf);
    bench_dump_d("x", bench_x, bench_n);
    bench_dump_d("state", STATE0, 2 * L * B);
    bench_dump_d("sequence", SEQ, (long)C * B);
}

#include "bench_main.h"
