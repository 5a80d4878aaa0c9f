#include <vector>
#include <map>
#include <algorithm>
#include <numeric>
double mean(const std::vector<double> &v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }
std::vector<double> sorted(std::vector<double> v) { std::sort(v.begin(), v.end()); return v; }
int count(const std::vector<int> &v) { std::map<int, int> m; for (int x : v) m[x]++; return (int)m.size(); }
