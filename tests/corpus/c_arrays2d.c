/* corpus-flags: -g */
/* 2-D arrays: static matrices, VLAs, pointer-to-array, matrix multiply, transpose. */
#include <stdio.h>
#include <stdlib.h>

#define N 6
static double A[N][N], B[N][N], C[N][N];

static void matmul(int n, double (*a)[n], double (*b)[n], double (*c)[n]) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

static long trace_vla(int n, int m) {
    long grid[n][m];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) grid[i][j] = (long)i * m + j;
    long t = 0;
    for (int i = 0; i < n && i < m; i++) t += grid[i][i];
    return t;
}

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) { A[i][j] = i + j * 0.5; B[i][j] = (i == j) ? 2.0 : (double)(i - j) / 4; }
    matmul(N, A, B, C);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) printf("%8.3f", C[i][j]);
        printf("\n");
    }
    printf("trace_vla=%ld %ld\n", trace_vla(5, 7), trace_vla(9, 4));
    int rows = 4, cols = 5;
    int (*dyn)[cols] = malloc(sizeof(int[rows][cols]));
    for (int i = 0; i < rows; i++) for (int j = 0; j < cols; j++) dyn[i][j] = i * 10 + j;
    int colsum[5] = {0};
    for (int i = 0; i < rows; i++) for (int j = 0; j < cols; j++) colsum[j] += dyn[i][j];
    for (int j = 0; j < cols; j++) printf("%d ", colsum[j]);
    printf("\n");
    free(dyn);
    int tri[5][5] = {{1}};
    for (int i = 1; i < 5; i++) { tri[i][0] = 1; for (int j = 1; j <= i; j++) tri[i][j] = tri[i - 1][j - 1] + tri[i - 1][j]; }
    for (int j = 0; j < 5; j++) printf("%d ", tri[4][j]);
    printf("\n");
    return 0;
}
