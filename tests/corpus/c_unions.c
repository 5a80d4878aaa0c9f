/* Unions: type punning, tagged unions, unions inside structs. */
#include <stdio.h>
#include <stdint.h>

typedef enum { T_INT, T_DBL, T_STR } Tag;
typedef struct {
    Tag tag;
    union { long i; double d; const char *s; } u;
} Value;

static void show(const Value *v) {
    switch (v->tag) {
    case T_INT: printf("int %ld\n", v->u.i); break;
    case T_DBL: printf("dbl %.4f\n", v->u.d); break;
    case T_STR: printf("str %s\n", v->u.s); break;
    }
}

union Pun { float f; uint32_t u; unsigned char b[4]; };
union Pun64 { double d; uint64_t u; };

int main(void) {
    Value vs[4] = {{T_INT, {.i = 42}}, {T_DBL, {.d = 3.14159}}, {T_STR, {.s = "hello"}}, {T_INT, {.i = -9}}};
    for (int i = 0; i < 4; i++) show(&vs[i]);

    union Pun p;
    p.f = 1.0f;
    printf("bits of 1.0f = 0x%08x\n", (unsigned)p.u);
    p.f = -2.5f;
    printf("bits of -2.5f = 0x%08x bytes %02x %02x %02x %02x\n", (unsigned)p.u, p.b[0], p.b[1], p.b[2], p.b[3]);
    union Pun64 q;
    q.d = 0.1;
    printf("bits of 0.1 = 0x%016llx\n", (unsigned long long)q.u);
    q.u = 0x400921fb54442d18ULL;
    printf("pi from bits = %.15f\n", q.d);
    printf("sizeof Value=%zu\n", sizeof(Value));
    return 0;
}
