/* LSTM as ADBench's C writes it (ADBench's lstm.h objective in the C form of Enzyme's
 * ADBench port, without its `__restrict`): lstm_objective(l, c, b, main_params,
 * extra_params, state, sequence, loss) with the state updated in place through its
 * pointer argument, gates in a malloc'd scratch array per cell, ADBench's
 * logsumexp (which adds 2 to the sum), and the loss through the out-parameter `loss`.
 * The gradient is w.r.t. main_params and extra_params; the state is `enzyme_dup` with
 * a scratch shadow (it is overwritten with active values) and reset before every call,
 * as ADBench's runner does.  Sizes: l c [b=14].
 */
#define KERNEL_NAME "lstm_adbench"
#define BENCH_CUSTOM
#include "bench.h"

double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

double logsumexp(double const *vect, int sz) {
    double sum = 0.0;
    int i;
    for (i = 0; i < sz; i++) sum += exp(vect[i]);
    sum += 2;
    return log(sum);
}

void lstm_model(int hsize, double const *weight, double const *bias, double *hidden,
                double *cell, double const *input) {
    double *gates = (double *)malloc(4 * hsize * sizeof(double));
    double *forget = &(gates[0]);
    double *ingate = &(gates[hsize]);
    double *outgate = &(gates[2 * hsize]);
    double *change = &(gates[3 * hsize]);
    int i;
    for (i = 0; i < hsize; i++) {
        forget[i] = sigmoid(input[i] * weight[i] + bias[i]);
        ingate[i] = sigmoid(hidden[i] * weight[hsize + i] + bias[hsize + i]);
        outgate[i] = sigmoid(input[i] * weight[2 * hsize + i] + bias[2 * hsize + i]);
        change[i] = tanh(hidden[i] * weight[3 * hsize + i] + bias[3 * hsize + i]);
    }
    for (i = 0; i < hsize; i++) cell[i] = cell[i] * forget[i] + ingate[i] * change[i];
    for (i = 0; i < hsize; i++) hidden[i] = outgate[i] * tanh(cell[i]);
    free(gates);
}

void lstm_predict(int l, int b, double const *w, double const *w2, double *s, double const *x,
                  double *x2) {
    int i;
    for (i = 0; i < b; i++) x2[i] = x[i] * w2[i];
    double *xp = x2;
    for (i = 0; i <= 2 * l * b - 1; i += 2 * b) {
        lstm_model(b, &(w[i * 4]), &(w[(i + b) * 4]), &(s[i]), &(s[i + b]), xp);
        xp = &(s[i]);
    }
    for (i = 0; i < b; i++) x2[i] = xp[i] * w2[b + i] + w2[2 * b + i];
}

void lstm_objective(int l, int c, int b, double const *main_params, double const *extra_params,
                    double *state, double const *sequence, double *loss) {
    int i, t;
    double total = 0.0;
    int count = 0;
    const double *input = &(sequence[0]);
    double *ypred = (double *)malloc(b * sizeof(double));
    double *ynorm = (double *)malloc(b * sizeof(double));
    const double *goal;
    double lynorm;
    for (t = 0; t <= (c - 1) * b - 1; t += b) {
        lstm_predict(l, b, main_params, extra_params, state, input, ypred);
        lynorm = logsumexp(ypred, b);
        for (i = 0; i < b; i++) ynorm[i] = ypred[i] - lynorm;
        goal = &(sequence[t + b]);
        for (i = 0; i < b; i++) total += goal[i] * ynorm[i];
        count += b;
        input = goal;
    }
    *loss = -total / count;
    free(ypred);
    free(ynorm);
}

/* ---- the benchmark driver (not part of ADBench's objective) ---------------- */

static int L, C, B;
static double *PARAMS;   /* main_params (2*l*4*b) | extra_params (3*b) */
static double *STATE0;   /* 2*l*b initial hidden/cell state */
static double *STATE, *DSTATE;
static double *SEQ;      /* c*b one-hot sequence */
static void (*volatile objective_fp)(int, int, int, double const *, double const *, double *,
                                     double const *, double *) = lstm_objective;

static double primal_run(void) {
    double loss;
    memcpy(STATE, STATE0, sizeof(double) * 2 * L * B);
    objective_fp(L, C, B, PARAMS, PARAMS + 2 * L * 4 * B, STATE, SEQ, &loss);
    return loss;
}

static void gradient_run(double *G) {
    double loss, dloss = 1.0;
    memset(G, 0, sizeof(double) * (size_t)bench_n);
    memcpy(STATE, STATE0, sizeof(double) * 2 * L * B);
    memset(DSTATE, 0, sizeof(double) * 2 * L * B);
    __enzyme_autodiff((void *)lstm_objective, L, C, B,
                      enzyme_dup, PARAMS, G,
                      enzyme_dup, PARAMS + 2 * L * 4 * B, G + 2 * L * 4 * B,
                      enzyme_dup, STATE, DSTATE,
                      enzyme_const, SEQ,
                      enzyme_dupnoneed, &loss, &dloss);
}

static long fd_count(void) { return bench_n; }

/* fourth-order central differences: the loss is a mean over c*b terms and many entries
 * of its gradient are tiny, so a second-order stencil's rounding error (eps |f| / h)
 * shows at h = 1e-6 and its truncation error at larger h */
static double fd_entry(long j, long *gidx) {
    double xj = PARAMS[j];
    double h = 1e-3 * (fabs(xj) > 1.0 ? fabs(xj) : 1.0);
    double f[4];
    const double off[4] = {-2, -1, 1, 2};
    for (int q = 0; q < 4; q++) {
        volatile double xq = xj + off[q] * h;
        PARAMS[j] = xq;
        f[q] = primal_run();
    }
    PARAMS[j] = xj;
    *gidx = j;
    return (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
}

static void setup(const long *sz, int nsz) {
    L = nsz > 0 ? (int)sz[0] : 2;
    C = nsz > 1 ? (int)sz[1] : 1024;
    B = nsz > 2 ? (int)sz[2] : 14;
    bench_n = 2 * L * 4 * B + 3 * B;
    PARAMS = ALLOC(double, bench_n);
    for (long i = 0; i < bench_n; i++) PARAMS[i] = bench_range(-1.0, 1.0);
    STATE0 = ALLOC(double, 2 * L * B);
    for (int i = 0; i < 2 * L * B; i++) STATE0[i] = bench_range(-1.0, 1.0);
    STATE = ALLOC(double, 2 * L * B);
    DSTATE = ALLOC(double, 2 * L * B);
    SEQ = ALLOC(double, (long)C * B);
    for (long t = 0; t < C; t++) {
        long hot = bench_index(B);
        for (int i = 0; i < B; i++) SEQ[t * B + i] = i == hot ? 1.0 : 0.0;
    }
    bench_x = PARAMS;
    static char buf[128];
    snprintf(buf, sizeof buf, "\"l\": %d, \"c\": %d, \"b\": %d", L, C, B);
    bench_sizes(buf);
    bench_dump_d("x", PARAMS, bench_n);
    bench_dump_d("state", STATE0, 2 * L * B);
    bench_dump_d("sequence", SEQ, (long)C * B);
}

#include "bench_main.h"
