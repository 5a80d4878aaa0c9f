#include <stdexcept>
#include <string>
struct Guard { int *p; Guard(int *p) : p(p) {} ~Guard() { ++*p; } };
int may_throw(int x) { if (x < 0) throw std::runtime_error("negative"); return x * 2; }
int safe(int x) { int c = 0; try { Guard g(&c); return may_throw(x) + c; } catch (const std::runtime_error &e) { return -1; } catch (...) { return -2; } }
std::string cat(const std::string &a, int n) { std::string r; for (int i = 0; i < n; ++i) r += a; return r; }
