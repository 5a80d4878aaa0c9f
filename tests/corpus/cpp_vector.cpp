// std::vector: push/emplace/insert/erase, reserve, 2-D vectors, vector<bool>, iterators.
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

struct Point { int x, y; Point(int x, int y) : x(x), y(y) {} };

int main() {
    std::vector<int> v;
    for (int i = 0; i < 20; ++i) v.push_back(i * 3 % 7);
    v.insert(v.begin() + 5, {100, 200});
    v.erase(v.begin() + 1, v.begin() + 4);
    std::printf("size=%zu front=%d back=%d sum=%d\n", v.size(), v.front(), v.back(), std::accumulate(v.begin(), v.end(), 0));
    for (auto it = v.rbegin(); it != v.rend(); ++it) std::printf("%d ", *it);
    std::printf("\n");
    std::vector<Point> pts;
    pts.reserve(4);
    for (int i = 0; i < 6; ++i) pts.emplace_back(i, i * i);
    long dist = 0;
    for (const auto &p : pts) dist += p.x * p.x + p.y * p.y;
    std::printf("pts=%zu dist=%ld\n", pts.size(), dist);
    std::vector<std::vector<double>> grid(4, std::vector<double>(5, 0.0));
    for (std::size_t i = 0; i < grid.size(); ++i)
        for (std::size_t j = 0; j < grid[i].size(); ++j) grid[i][j] = double(i) * 0.5 + double(j);
    double tot = 0;
    for (const auto &row : grid) tot += std::accumulate(row.begin(), row.end(), 0.0);
    std::printf("grid total=%.2f\n", tot);
    std::vector<bool> flags(50);
    for (std::size_t i = 2; i < flags.size(); ++i) flags[i] = true;
    for (std::size_t i = 2; i * i < flags.size(); ++i)
        if (flags[i]) for (std::size_t j = i * i; j < flags.size(); j += i) flags[j] = false;
    for (std::size_t i = 0; i < flags.size(); ++i) if (flags[i]) std::printf("%zu ", i);
    std::printf("\n");
    std::vector<std::string> names{"delta", "alpha", "charlie"};
    names.emplace_back("bravo");
    std::string joined;
    for (const auto &n : names) joined += n + ",";
    std::printf("%s cap>=size:%d\n", joined.c_str(), names.capacity() >= names.size());
    v.resize(3);
    v.shrink_to_fit();
    std::printf("resized %zu: %d %d %d\n", v.size(), v[0], v[1], v[2]);
    return 0;
}
