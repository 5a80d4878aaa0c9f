/* The two-layer MLP of the Flux.jl + Enzyme example, forward pass and loss in C:
 * 784 -> 32 (relu) -> 10, mean logit cross-entropy over a batch.
 * Row-major weights: W1[HIDDEN][INPUTS], W2[CLASSES][HIDDEN]; X[batch][INPUTS].
 * Used from Python by examples/mlp_torch.py, examples/mlp_jax.py and the benchmark. */
#include <math.h>

#define INPUTS 784
#define HIDDEN 32
#define CLASSES 10

double mlp_loss(const double *W1, const double *b1, const double *W2, const double *b2,
                const double *X, const int *labels, int batch) {
    double total = 0.0;
    for (int s = 0; s < batch; s++) {
        const double *x = X + (long)s * INPUTS;
        double h[HIDDEN];
        for (int j = 0; j < HIDDEN; j++) {
            double a = b1[j];
            for (int i = 0; i < INPUTS; i++)
                a += W1[j * INPUTS + i] * x[i];
            h[j] = a > 0.0 ? a : 0.0;
        }
        double logits[CLASSES];
        double top = -INFINITY;
        for (int k = 0; k < CLASSES; k++) {
            double z = b2[k];
            for (int j = 0; j < HIDDEN; j++)
                z += W2[k * HIDDEN + j] * h[j];
            logits[k] = z;
            if (z > top)
                top = z;
        }
        double sum = 0.0;
        for (int k = 0; k < CLASSES; k++)
            sum += exp(logits[k] - top);
        total += top + log(sum) - logits[labels[s]];
    }
    return total / batch;
}
