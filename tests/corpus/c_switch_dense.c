/* Dense switch (jump table candidate) with fallthrough. */
#include <stdio.h>

static int dense(int x) {
    switch (x) {
    case 0: return 10;
    case 1: return 21;
    case 2: return 32;
    case 3: return 43;
    case 4: return 54;
    case 5: return 65;
    case 6: return 76;
    case 7: return 87;
    case 8: return 98;
    case 9: return 109;
    default: return -1;
    }
}

static const char *day(int d) {
    switch (d) {
    case 1: return "mon"; case 2: return "tue"; case 3: return "wed"; case 4: return "thu";
    case 5: return "fri"; case 6: return "sat"; case 7: return "sun";
    default: return "???";
    }
}

static int fall(int x) {
    int r = 0;
    switch (x) {
    case 4: r += 1000; /* fall through */
    case 3: r += 100;  /* fall through */
    case 2: r += 10;   /* fall through */
    case 1: r += 1; break;
    default: r = -x;
    }
    return r;
}

int main(void) {
    int s = 0;
    for (int i = -2; i < 13; i++) s = s * 3 + dense(i);
    printf("dense hash=%d\n", s);
    for (int d = 0; d <= 8; d++) printf("%s ", day(d));
    printf("\n");
    for (int i = 0; i < 6; i++) printf("fall(%d)=%d\n", i, fall(i));
    int counts[4] = {0};
    for (int i = 0; i < 100; i++) {
        switch (i & 3) {
        case 0: counts[0]++; break;
        case 1: counts[1] += 2; break;
        case 2: counts[2] += 3; break;
        case 3: counts[3] += 4; break;
        }
    }
    printf("%d %d %d %d\n", counts[0], counts[1], counts[2], counts[3]);
    return 0;
}
