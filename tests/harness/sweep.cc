#include "sweep.hh"

namespace loom::test {

std::string describe_call(const algorithms::algorithm& a, const algorithms::call& c) {
    return std::string(schedule::collective_name(c.coll)) + " " + std::string(a.name) +
           " N=" + std::to_string(c.nranks) + " count=" + std::to_string(c.count) +
           " root=" + std::to_string(c.root) + " topo=" + c.topo.to_string() +
           " P=" + std::to_string(c.segments);
}

std::string verify_call(const algorithms::algorithm& a, const algorithms::call& c,
                        schedule::schedule_stats* stats) {
    if (status st = algorithms::check_call(a, c); !st) {
        if (st.code() == LOOM_ERR_NOT_APPLICABLE) {
            return "n/a";
        }
        return describe_call(a, c) + ": " + st.to_string();
    }
    auto s = algorithms::generate(a, c);
    if (!s) {
        return describe_call(a, c) + ": generate: " + s.error().to_string();
    }
    auto report = schedule::verify(*s);
    if (!report.result) {
        return describe_call(a, c) + ": " + report.result.to_string();
    }
    if (stats) {
        *stats = report.stats;
    }
    return "";
}

sweep_result sweep(const algorithms::algorithm& a, const std::vector<int>& ranks, int64_t big,
                   const std::vector<std::string>& lattices) {
    sweep_result res;
    auto record = [&](const algorithms::call& c) {
        std::string r = verify_call(a, c);
        if (r.empty()) {
            ++res.verified;
        } else if (r == "n/a") {
            ++res.not_applicable;
        } else if (res.first_failure.empty()) {
            res.first_failure = r;
        }
    };
    for (int n : ranks) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n}, big}) {
            for (int root : {0, n - 1, n / 2}) {
                algorithms::call c;
                c.coll   = a.primitive;
                c.nranks = n;
                c.count  = count;
                c.root   = root;
                c.peer   = (root + 1) % n;
                c.topo   = topology::shape::star(n);
                record(c);
            }
        }
    }
    for (const auto& text : lattices) {
        auto shape = topology::shape::parse(text);
        int n      = shape->size();
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{n - 1}, int64_t{n}, big}) {
            for (int root : {0, n - 1, n / 2}) {
                algorithms::call c;
                c.coll   = a.primitive;
                c.nranks = n;
                c.count  = count;
                c.root   = root;
                c.peer   = (root + 1) % n;
                c.topo   = *shape;
                record(c);
            }
        }
    }
    return res;
}

std::vector<int> standard_ranks() {
    std::vector<int> r;
    for (int n = 1; n <= 17; ++n) {
        r.push_back(n);
    }
    for (int n : {24, 32, 64}) {
        r.push_back(n);
    }
    return r;
}

std::vector<std::string> standard_lattices() {
    return {"torus:2x2",   "torus:3x3",   "torus:4x4", "torus:2x2x2", "torus:3x3x3",
            "torus:4x4x2", "torus:8x1x1", "torus:5x3", "torus:1x7",   "torus:3x4x5",
            "mesh:2x2",    "mesh:3x3",    "mesh:4x4",  "mesh:2x2x2",  "mesh:3x3x3",
            "mesh:4x4x2",  "mesh:8x1x1",  "mesh:5x3",  "mesh:1x7",    "mesh:3x4x5"};
}

}  // namespace loom::test
