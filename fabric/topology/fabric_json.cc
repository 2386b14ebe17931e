// SPDX-License-Identifier: Apache-2.0
// The fabric file (format in fabric.hh): JSON → nodes and links, ids resolved to indices.
// Only the shape of the document is checked here (keys, types, known names); what the
// description means (ranks, coordinates, parents, α/BW ranges) is fabric::make's job.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "base/check.hh"
#include "base/text_file.hh"
#include "fabric.hh"

namespace loom::topology {
namespace {

using json = nlohmann::json;

// Unknown keys are errors: a misspelt "bandwidth" must not silently fall back to a class's.
status only_keys(const json& obj, std::initializer_list<const char*> allowed,
                 const std::string& where) {
    if (!obj.is_object()) {
        return parse_error(where + ": expected an object");
    }
    for (const auto& item : obj.items()) {
        if (std::none_of(allowed.begin(), allowed.end(),
                         [&](const char* key) { return item.key() == key; })) {
            return parse_error(where + ": unknown key \"" + item.key() + "\"");
        }
    }
    return status::ok();
}

status get_string(const json& obj, const char* key, std::string* out, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_string()) {
        return parse_error(where + ": \"" + key + "\" must be a string");
    }
    *out = it->get<std::string>();
    return status::ok();
}

// Optional number; `*given` says whether it was there.
status get_number(const json& obj, const char* key, double* out, bool* given,
                  const std::string& where) {
    auto it = obj.find(key);
    *given  = it != obj.end();
    if (*given && !it->is_number()) {
        return parse_error(where + ": \"" + key + "\" must be a number");
    }
    *out = *given ? it->get<double>() : *out;
    return status::ok();
}

status parse_kind(const std::string& text, node_kind* out, const std::string& where) {
    for (node_kind k : {node_kind::endpoint, node_kind::switch_node, node_kind::dpu}) {
        if (text == node_kind_name(k)) {
            *out = k;
            return status::ok();
        }
    }
    return parse_error(where + ": unknown kind '" + text + "' (endpoint, switch, dpu)");
}

status parse_coords(const json& j, std::vector<int>* out, const std::string& where) {
    if (!j.is_array()) {
        return parse_error(where + ": \"coords\" must be an array of integers >= 0");
    }
    for (const json& v : j) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 24)) {
            return parse_error(where + ": \"coords\" must be an array of integers >= 0");
        }
        out->push_back(v.get<int>());
    }
    return status::ok();
}

// First pass over a node: everything but the parent, which may name a later node.
status parse_node(const json& j, node* n, const std::string& where) {
    if (!j.is_object()) {
        return parse_error(where + ": expected an object");
    }
    LOOM_CHECK(get_string(j, "id", &n->id, where));
    const std::string named = where + " ('" + n->id + "')";
    LOOM_CHECK(only_keys(j, {"id", "kind", "rank", "coords", "in_network", "parent"}, named));
    std::string kind;
    LOOM_CHECK(get_string(j, "kind", &kind, named));
    LOOM_CHECK(parse_kind(kind, &n->kind, named));
    if (auto it = j.find("rank"); it != j.end()) {
        if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= (1 << 24)) {
            return parse_error(named + ": \"rank\" must be an integer >= 0");
        }
        n->rank = it->get<int>();
    }
    if (auto it = j.find("coords"); it != j.end()) {
        LOOM_CHECK(parse_coords(*it, &n->coords, named));
    }
    if (auto it = j.find("in_network"); it != j.end()) {
        if (!it->is_boolean()) {
            return parse_error(named + ": \"in_network\" must be true or false");
        }
        n->in_network = it->get<bool>();
    }
    return status::ok();
}

// Node ids → indices, checking only that ids are unique (fabric::make repeats that check
// for fabrics built in code).
status index_ids(const std::vector<node>& nodes, std::map<std::string, int>* ids) {
    for (size_t i = 0; i < nodes.size(); ++i) {
        auto [it, fresh] = ids->emplace(nodes[i].id, static_cast<int>(i));
        if (!fresh) {
            return parse_error("duplicate node id '" + nodes[i].id + "' (nodes " +
                               std::to_string(it->second) + " and " + std::to_string(i) + ")");
        }
    }
    return status::ok();
}

status resolve(const std::map<std::string, int>& ids, const json& obj, const char* key, int* out,
               const std::string& where) {
    std::string id;
    LOOM_CHECK(get_string(obj, key, &id, where));
    auto it = ids.find(id);
    if (it == ids.end()) {
        return parse_error(where + ": \"" + key + "\" names unknown node '" + id + "'");
    }
    *out = it->second;
    return status::ok();
}

struct link_class_default {
    double alpha_s = 0, bw_bytes_per_s = 0;
    bool has_alpha = false, has_bw = false;
};

struct document {
    std::vector<node> nodes;
    std::vector<link> links;
    std::vector<std::string> classes;
    std::map<std::string, int> class_ids;
    std::vector<link_class_default> defaults;  // by class id
    std::map<std::string, int> node_ids;
};

status parse_classes(const json& doc, document* d) {
    auto it = doc.find("classes");
    if (it == doc.end()) {
        return status::ok();
    }
    if (!it->is_object()) {
        return parse_error(
            "\"classes\" must be an object: {\"name\": {\"alpha\": s, \"bw\": B/s}}");
    }
    for (const auto& item : it->items()) {
        const std::string where = "class '" + item.key() + "'";
        link_class_default def;
        LOOM_CHECK(only_keys(item.value(), {"alpha", "bw"}, where));
        LOOM_CHECK(get_number(item.value(), "alpha", &def.alpha_s, &def.has_alpha, where));
        LOOM_CHECK(get_number(item.value(), "bw", &def.bw_bytes_per_s, &def.has_bw, where));
        d->class_ids.emplace(item.key(), static_cast<int>(d->classes.size()));
        d->classes.push_back(item.key());
        d->defaults.push_back(def);
    }
    return status::ok();
}

// A link's class id, added on first use when the file has no "classes" entry for it.
int class_id(document* d, const std::string& name) {
    auto [it, fresh] = d->class_ids.emplace(name, static_cast<int>(d->classes.size()));
    if (fresh) {
        d->classes.push_back(name);
        d->defaults.emplace_back();
    }
    return it->second;
}

status parse_link(const json& j, document* d, const std::string& where) {
    LOOM_CHECK(only_keys(j, {"a", "b", "class", "alpha", "bw"}, where));
    link l;
    std::string cls;
    LOOM_CHECK(resolve(d->node_ids, j, "a", &l.a, where));
    LOOM_CHECK(resolve(d->node_ids, j, "b", &l.b, where));
    const std::string named = where + " (" + d->nodes[l.a].id + " - " + d->nodes[l.b].id + ")";
    if (status st = get_string(j, "class", &cls, named); !st || cls.empty()) {
        return parse_error(named + ": \"class\" must be a non-empty string");
    }
    l.link_class                 = class_id(d, cls);
    const link_class_default def = d->defaults[l.link_class];
    bool has_alpha = false, has_bw = false;
    l.alpha_s        = def.alpha_s;
    l.bw_bytes_per_s = def.bw_bytes_per_s;
    LOOM_CHECK(get_number(j, "alpha", &l.alpha_s, &has_alpha, named));
    LOOM_CHECK(get_number(j, "bw", &l.bw_bytes_per_s, &has_bw, named));
    if (!(has_alpha || def.has_alpha) || !(has_bw || def.has_bw)) {
        return parse_error(named + ": needs \"alpha\" and \"bw\" (its own or its class's)");
    }
    d->links.push_back(l);
    return status::ok();
}

status parse_header(const json& doc, std::optional<shape>* lattice) {
    LOOM_CHECK(only_keys(doc, {"format", "version", "shape", "classes", "nodes", "links"},
                         "the fabric document"));
    if (doc.value("format", json()) != "loom-fabric" || doc.value("version", json()) != 1) {
        return parse_error("expected \"format\": \"loom-fabric\" and \"version\": 1");
    }
    if (auto it = doc.find("shape"); it != doc.end()) {
        if (!it->is_string()) {
            return parse_error("\"shape\" must be a string such as \"torus:4x4\"");
        }
        LOOM_ASSIGN(*lattice, shape::parse(it->get<std::string>()));
    }
    for (const char* key : {"nodes", "links"}) {
        if (!doc.contains(key) || !doc[key].is_array()) {
            return parse_error(std::string("\"") + key + "\" must be an array");
        }
    }
    return status::ok();
}

status parse_parents(const json& nodes_json, document* d) {
    for (size_t i = 0; i < nodes_json.size(); ++i) {
        if (nodes_json[i].contains("parent")) {
            std::string where = "node " + std::to_string(i) + " ('" + d->nodes[i].id + "')";
            LOOM_CHECK(resolve(d->node_ids, nodes_json[i], "parent", &d->nodes[i].parent, where));
        }
    }
    return status::ok();
}

status parse_document(const json& doc, document* d, std::optional<shape>* lattice) {
    LOOM_CHECK(parse_header(doc, lattice));
    LOOM_CHECK(parse_classes(doc, d));
    const json& nodes_json = doc["nodes"];
    d->nodes.resize(nodes_json.size());
    for (size_t i = 0; i < nodes_json.size(); ++i) {
        LOOM_CHECK(parse_node(nodes_json[i], &d->nodes[i], "node " + std::to_string(i)));
    }
    LOOM_CHECK(index_ids(d->nodes, &d->node_ids));
    LOOM_CHECK(parse_parents(nodes_json, d));
    const json& links_json = doc["links"];
    for (size_t i = 0; i < links_json.size(); ++i) {
        LOOM_CHECK(parse_link(links_json[i], d, "link " + std::to_string(i)));
    }
    return status::ok();
}

}  // namespace

result<fabric> parse_fabric_json(std::string_view text, std::string_view origin) {
    const std::string prefix = "fabric file '" + std::string(origin) + "': ";
    json doc                 = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return parse_error(prefix + "not valid JSON");
    }
    document d;
    std::optional<shape> lattice;
    try {
        if (status st = parse_document(doc, &d, &lattice); !st) {
            return st.prefix(prefix);
        }
    } catch (const json::exception& e) {
        // Out-of-range numbers and the like: still one clear line, never a crash.
        return parse_error(prefix + e.what());
    }
    auto f = fabric::make(std::move(d.nodes), std::move(d.links), std::move(d.classes),
                          std::move(lattice));
    if (!f) {
        status st = f.error();
        return st.prefix(prefix);
    }
    return f;
}

result<fabric> load_fabric_file(const std::string& path) {
    LOOM_ASSIGN(std::string text, read_text_file(path, "fabric file", max_fabric_file_bytes));
    return parse_fabric_json(text, path);
}

}  // namespace loom::topology
