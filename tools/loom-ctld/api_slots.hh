// SPDX-License-Identifier: Apache-2.0
// The in-network slots' part of API v1 (docs/tools/loom-ctld.md#slots): a job's grant for one
// communicator (all or nothing over the aggregation nodes of its tree, the tree computed from
// the fabric and the members in service, or named by the job), its renewals and release, and
// the lists of allocations, slots per member and jobs. The logic is fabric/control/slots.hh;
// this file only reads requests and writes answers.
#pragma once

namespace httplib {
class Server;
}

namespace loom::ctld {

class controller;

/// Installs POST/GET /v1/allocations, POST /v1/allocations/ID/renew, DELETE
/// /v1/allocations/ID, GET /v1/slots and GET /v1/jobs.
void install_slots_api(httplib::Server& server, controller& ctl);

}  // namespace loom::ctld
