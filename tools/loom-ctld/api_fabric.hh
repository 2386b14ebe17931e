// SPDX-License-Identifier: Apache-2.0
// The fabric's part of API v1 (docs/tools/loom-ctld.md#fabric): the fabric the controller
// holds with each node's service state, routes between nodes, a node's route table and the
// aggregation trees, all computed per request from the fabric and the members' states, so
// a member that goes down or is drained is left out at the next request.
#pragma once

namespace httplib {
class Server;
}

namespace loom::ctld {

class controller;

/// Installs GET /v1/fabric, /v1/routes (?from=A&to=B), /v1/routes/NODE and /v1/trees.
void install_fabric_api(httplib::Server& server, controller& ctl);

}  // namespace loom::ctld
