int classify(int c) { switch (c) { case 0: return 10; case 1: case 2: return 20; case 7: return c * 3; case 100: return -1; default: return c; } }
const char *name(int k) { static const char *names[] = { "zero", "one", "two" }; switch (k) { case 0: case 1: case 2: return names[k]; } return "many"; }
