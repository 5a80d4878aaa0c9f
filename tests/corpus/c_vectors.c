/* GCC vector extensions: arithmetic, shuffles, comparisons, conversions. */
#include <stdio.h>

typedef float v4f __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
typedef unsigned char v16u8 __attribute__((vector_size(16)));

static v4f axpy(float a, v4f x, v4f y) { return a * x + y; }
static float hsum(v4f v) { return v[0] + v[1] + v[2] + v[3]; }

int main(void) {
    v4f x = {1, 2, 3, 4}, y = {0.5f, -1, 2.5f, 8};
    v4f r = axpy(2.0f, x, y);
    printf("axpy %.2f %.2f %.2f %.2f sum=%.2f\n", r[0], r[1], r[2], r[3], hsum(r));
    v4i a = {1, -2, 3, -4}, b = {4, 3, 2, 1};
    v4i mx = a > b;
    v4i sel = (a & mx) | (b & ~mx);
    printf("max %d %d %d %d\n", sel[0], sel[1], sel[2], sel[3]);
    v4i sh = __builtin_shufflevector(a, b, 3, 7, 0, 4);
    printf("shuffle %d %d %d %d\n", sh[0], sh[1], sh[2], sh[3]);
    v4f conv = __builtin_convertvector(a * b, v4f);
    printf("conv %.1f %.1f %.1f %.1f\n", conv[0], conv[1], conv[2], conv[3]);
    v2d d = {1.25, -3.5};
    d = d * d - (v2d){1, 1};
    printf("v2d %.4f %.4f\n", d[0], d[1]);
    v16u8 bytes;
    for (int i = 0; i < 16; i++) bytes[i] = (unsigned char)(i * 17);
    bytes = bytes + bytes;
    unsigned total = 0;
    for (int i = 0; i < 16; i++) total += bytes[i];
    printf("bytes total=%u\n", total);
    float arr[64];
    for (int i = 0; i < 64; i++) arr[i] = (float)i * 0.25f;
    v4f acc = {0, 0, 0, 0};
    for (int i = 0; i < 64; i += 4) acc += (v4f){arr[i], arr[i + 1], arr[i + 2], arr[i + 3]};
    printf("acc %.2f\n", hsum(acc));
    return 0;
}
