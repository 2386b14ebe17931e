// SPDX-License-Identifier: Apache-2.0
// loom-ctld's HTTP API, version 1 (docs/tools/loom-ctld.md): every path, the token check
// and rate limit in front of them, and one place where every refusal is counted.
#pragma once

namespace httplib {
class Server;
}

namespace loom::ctld {

class controller;

/// Installs the routes, the checks in front of them and the error handler on `server`.
void install_api(httplib::Server& server, controller& ctl);

}  // namespace loom::ctld
