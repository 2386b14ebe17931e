// SPDX-License-Identifier: Apache-2.0
// The transport of a communicator that was given none (LOOM_TRANSPORT unset, no
// loom_config_t.transport) and has several ranks: shared memory only when every rank is on
// one host; ranks on several hosts share no memory, so they take a network transport, the
// first that every rank can run (drivers::network_transports: ofi where built with a network
// provider, else tcp). Rank 0 decides from what every rank published, so all ranks open the
// same driver, and says which and why at info level.
//
// Keys (the communicator's store): comm/host/<rank> = "<host identity>\t<transports>",
// comm/transport = "<driver>\t<reason>".
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.hh"
#include "base/log.hh"
#include "base/net.hh"
#include "bootstrap/bootstrap.hh"
#include "comm/comm.hh"

namespace loom::comm {
namespace {

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        out += (out.empty() ? "" : ",") + n;
    }
    return out;
}

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> out;
    std::stringstream in{std::string(text)};
    for (std::string item; std::getline(in, item, ',');) {
        out.push_back(item);
    }
    return out;
}

// Rank 0's choice from every rank's "<identity>\t<transports>": "<driver>\t<reason>".
result<std::string> decide(const std::vector<std::string>& published) {
    std::set<std::string> hosts;
    std::vector<std::string> common;
    for (size_t r = 0; r < published.size(); ++r) {
        const std::string& line = published[r];
        size_t tab              = line.find('\t');
        if (tab == std::string::npos) {
            return internal_error("rank " + std::to_string(r) + " published a malformed host '" +
                                  line + "'");
        }
        hosts.insert(line.substr(0, tab));
        std::vector<std::string> theirs = split_list(std::string_view(line).substr(tab + 1));
        if (r == 0) {
            common = theirs;
        } else {
            std::erase_if(common, [&](const std::string& t) {
                return std::find(theirs.begin(), theirs.end(), t) == theirs.end();
            });
        }
    }
    std::string ranks = std::to_string(published.size());
    if (hosts.size() == 1) {
        return "shm\tall " + ranks + " ranks on one host (LOOM_TRANSPORT unset)";
    }
    std::string why = "ranks on " + std::to_string(hosts.size()) + " hosts (LOOM_TRANSPORT unset)";
    if (common.empty()) {
        return not_supported("the " + ranks + " ranks are on " + std::to_string(hosts.size()) +
                             " hosts but share no network transport: set LOOM_TRANSPORT");
    }
    return common.front() + "\t" + why;
}

}  // namespace

status communicator::pick_transport() {
    const double timeout_s = settings_.join_timeout_s;
    const std::string me   = std::to_string(rank());
    std::string mine = bootstrap::host_identity() + "\t" + join(drivers::network_transports());
    LOOM_CHECK(store_->set("comm/host/" + me, mine));
    std::string choice;
    if (rank() == 0) {
        std::vector<std::string> published(static_cast<size_t>(size()));
        published[0] = mine;
        for (int r = 1; r < size(); ++r) {
            auto line = store_->get("comm/host/" + std::to_string(r), timeout_s);
            if (!line) {
                return status(line.error())
                    .prefix("rank 0: choosing the transport (LOOM_TRANSPORT unset): ");
            }
            published[static_cast<size_t>(r)] = std::move(line).value();
        }
        auto decided = decide(published);
        // Published even when no transport fits, so the other ranks fail with the reason.
        choice = decided ? *decided : "-\t" + decided.error().message();
        LOOM_CHECK(store_->set("comm/transport", choice));
        if (!decided) {
            return status(decided.error()).prefix("rank 0: ");
        }
    } else {
        auto line = store_->get("comm/transport", timeout_s);
        if (!line) {
            return status(line.error())
                .prefix("rank " + me + ": waiting for rank 0's choice of transport: ");
        }
        choice = std::move(line).value();
    }
    size_t tab         = choice.find('\t');
    std::string name   = choice.substr(0, tab);
    std::string reason = tab == std::string::npos ? "" : choice.substr(tab + 1);
    if (name == "-") {
        return not_supported("rank " + me + ": " + reason);
    }
    settings_.transport      = name;
    settings_.transport_auto = false;
    if (rank() == 0) {
        LOOM_LOG_INFO(log::subsystem::init, "transport %s: %s", name.c_str(), reason.c_str());
    } else {
        LOOM_LOG_DEBUG(log::subsystem::init, "transport %s (rank 0's choice: %s)", name.c_str(),
                       reason.c_str());
    }
    return status::ok();
}

}  // namespace loom::comm
