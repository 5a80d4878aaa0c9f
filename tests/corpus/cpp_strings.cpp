// corpus-flags: -g
// std::string: concatenation, find/substr/replace, conversions, string_view, stringstream.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

static std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        std::size_t pos = s.find(sep, start);
        out.emplace_back(s.substr(start, pos - start));
        if (pos == std::string_view::npos) break;
        start = pos + 1;
    }
    return out;
}

int main() {
    std::string s = "Hello";
    s += ", ";
    s.append("World");
    s.push_back('!');
    std::printf("%s len=%zu\n", s.c_str(), s.size());
    std::printf("find=%zu rfind=%zu sub=%s\n", s.find("o"), s.rfind('o'), s.substr(7, 5).c_str());
    std::string r = s;
    r.replace(0, 5, "Goodbye");
    std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::toupper(c); });
    std::printf("%s\n", r.c_str());
    auto parts = split("a,bb,,ccc,dddd", ',');
    for (const auto &p : parts) std::printf("[%s]", p.c_str());
    std::printf(" n=%zu\n", parts.size());
    std::printf("stoi=%d stod=%.3f to_string=%s\n", std::stoi("-321"), std::stod("6.02e2"), std::to_string(12345).c_str());
    std::ostringstream os;
    os << "x=" << 42 << " y=" << 3.5 << " z=" << std::string(3, 'z');
    std::printf("%s\n", os.str().c_str());
    std::string rev(s.rbegin(), s.rend());
    std::printf("rev=%s cmp=%d\n", rev.c_str(), std::string("abc").compare("abd") < 0);
    std::string_view sv = s;
    sv.remove_prefix(7);
    sv.remove_suffix(1);
    std::printf("view=%.*s starts=%d\n", int(sv.size()), sv.data(), s.rfind("Hell", 0) == 0);
    std::string big;
    for (int i = 0; i < 100; ++i) big += char('a' + i % 26);
    std::printf("big=%zu count(a)=%ld\n", big.size(), long(std::count(big.begin(), big.end(), 'a')));
    std::string trimmed = "   padded text \t\n";
    trimmed.erase(0, trimmed.find_first_not_of(" \t\n"));
    trimmed.erase(trimmed.find_last_not_of(" \t\n") + 1);
    std::printf("[%s]\n", trimmed.c_str());
    return 0;
}
