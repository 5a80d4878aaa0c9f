// std::map, std::unordered_map, std::multimap: insertion, lookup, ordered iteration, word counts.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

int main() {
    std::string text = "it was the best of times it was the worst of times it was the age of wisdom";
    std::map<std::string, int> counts;
    std::unordered_map<std::string, int> ucounts;
    std::istringstream in(text);
    for (std::string w; in >> w;) { ++counts[w]; ucounts[w] += 2; }
    for (const auto &[w, c] : counts) std::printf("%s:%d ", w.c_str(), c);
    std::printf("\n");
    std::vector<std::pair<std::string, int>> sorted(ucounts.begin(), ucounts.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    for (const auto &p : sorted) std::printf("%s=%d ", p.first.c_str(), p.second);
    std::printf("\n");
    auto it = counts.find("worst");
    std::printf("worst found=%d, missing found=%d\n", it != counts.end(), counts.count("missing") > 0);
    auto lb = counts.lower_bound("i"), ub = counts.upper_bound("t");
    int n = 0;
    for (auto i = lb; i != ub; ++i) ++n;
    std::printf("range [i,t] has %d keys\n", n);
    counts.erase("of");
    std::printf("size after erase=%zu first=%s last=%s\n", counts.size(), counts.begin()->first.c_str(), counts.rbegin()->first.c_str());
    std::map<int, std::vector<int>, std::greater<int>> buckets;
    for (int i = 0; i < 30; ++i) buckets[i % 4].push_back(i);
    for (const auto &[k, vs] : buckets) std::printf("bucket %d: %zu items, last %d\n", k, vs.size(), vs.back());
    std::multimap<int, char> mm{{1, 'a'}, {2, 'b'}, {1, 'c'}, {3, 'd'}, {1, 'e'}};
    auto rng = mm.equal_range(1);
    for (auto i = rng.first; i != rng.second; ++i) std::printf("%c", i->second);
    std::printf(" count=%zu\n", mm.count(1));
    std::unordered_map<int, long> memo;
    std::unordered_map<int, long>::size_type before = memo.size();
    for (int i = 0; i < 1000; ++i) memo.emplace(i * 7919 % 1009, i);
    long s = 0;
    for (int k = 0; k < 1009; ++k) { auto f = memo.find(k); if (f != memo.end()) s += f->second; }
    std::printf("memo size %zu->%zu sum=%ld\n", before, memo.size(), s);
    return 0;
}
