/* Bit-fields, enums, packed structs, flexible array members. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum Color { RED = 1, GREEN = 2, BLUE = 4, ALPHA = 0x100 };

struct Flags {
    unsigned ready : 1;
    unsigned mode : 3;
    signed level : 5;
    unsigned color : 9;
    unsigned long long wide : 40;
};

struct __attribute__((packed)) Wire { unsigned char tag; unsigned int len; unsigned short crc; };

struct Msg { int n; double vals[]; };

static struct Msg *make_msg(int n) {
    struct Msg *m = malloc(sizeof *m + (size_t)n * sizeof m->vals[0]);
    m->n = n;
    for (int i = 0; i < n; i++) m->vals[i] = i * 1.5;
    return m;
}

int main(void) {
    struct Flags f = {0};
    f.ready = 1;
    f.mode = 5;
    f.level = -9;
    f.color = RED | BLUE | ALPHA;
    f.wide = 0xABCDE12345ULL;
    printf("ready=%u mode=%u level=%d color=%#x wide=%llx size=%zu\n", f.ready, f.mode, f.level, f.color,
           (unsigned long long)f.wide, sizeof f);
    f.mode += 4; /* wraps in 3 bits */
    f.level = f.level * 2 + 3;
    printf("mode=%u level=%d\n", f.mode, f.level);
    struct Wire w = {7, 0x01020304u, 0xBEEF};
    unsigned char raw[sizeof w];
    memcpy(raw, &w, sizeof w);
    printf("wire size=%zu bytes:", sizeof w);
    for (size_t i = 0; i < sizeof w; i++) printf(" %02x", raw[i]);
    printf("\n");
    struct Msg *m = make_msg(6);
    double s = 0;
    for (int i = 0; i < m->n; i++) s += m->vals[i];
    printf("msg n=%d sum=%.2f\n", m->n, s);
    free(m);
    enum Color c = GREEN;
    printf("enum %d %d\n", c, (int)(c | BLUE));
    return 0;
}
